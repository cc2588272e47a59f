"""MCTS iterations/s in OpenSpiel, for comparison with `meeple bench connect4` (mcts line).

OpenSpiel's MCTSBot (the C++ implementation, `pyspiel.MCTSBot`) with one random rollout per
iteration (`RandomRolloutEvaluator(1)`), deciding from the empty board with 10,000 simulations per
decision, solver off, as meeple's bench does. Needs `pip install open-spiel`.
Usage: python3 bench/openspiel_mcts.py [seconds] [game]
"""

import sys
import time

import pyspiel


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    name = sys.argv[2] if len(sys.argv) > 2 else "connect_four"
    game = pyspiel.load_game(name)
    sims = 10_000
    evaluator = pyspiel.RandomRolloutEvaluator(1, 42)
    # MCTSBot(game, evaluator, uct_c, max_simulations, max_memory_mb, solve, seed, verbose)
    bot = pyspiel.MCTSBot(game, evaluator, 1.4, sims, 1000, False, 42, False)
    state = game.new_initial_state()
    decisions = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        bot.step(state)
        decisions += 1
    elapsed = time.perf_counter() - start
    print(f"openspiel MCTSBot {name}: {decisions * sims / elapsed:.0f} iterations/s "
          f"({decisions} decisions of {sims} simulations in {elapsed:.2f} s)")


if __name__ == "__main__":
    main()
