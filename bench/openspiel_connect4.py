"""Random connect four games/s in OpenSpiel, for comparison with `meeple bench connect4`.

Plays whole games with `pyspiel.evaluate_bots` and two uniform random bots (C++ bots and C++
game; the loop over games is Python, as an OpenSpiel user would write it). Needs
`pip install open-spiel`. Usage: python3 bench/openspiel_connect4.py [seconds]
"""

import sys
import time

import numpy as np
import pyspiel


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    game = pyspiel.load_game("connect_four")
    bots = [pyspiel.make_uniform_random_bot(p, 1000 + p) for p in range(2)]
    rng = np.random.RandomState(0)
    games = plies = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            state = game.new_initial_state()
            pyspiel.evaluate_bots(state, bots, int(rng.randint(1 << 30)))
            games += 1
        # Plies are not returned by evaluate_bots; count them in a separate pass below.
    elapsed = time.perf_counter() - start
    # Mean game length from a replay of the same kind of games with explicit stepping.
    lengths = []
    for _ in range(2000):
        state = game.new_initial_state()
        n = 0
        while not state.is_terminal():
            state.apply_action(int(rng.choice(state.legal_actions())))
            n += 1
        lengths.append(n)
    print(f"openspiel connect_four: {games / elapsed:.0f} random games/s "
          f"({games} games in {elapsed:.2f} s, mean length {np.mean(lengths):.2f} plies, "
          f"~{games * np.mean(lengths) / elapsed:.0f} plies/s)")


if __name__ == "__main__":
    main()
