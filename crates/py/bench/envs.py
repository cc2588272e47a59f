"""Random-action steps per second: meeple's PettingZoo env and VecEnv beside PettingZoo's own
connect four (and, where it installs, cathedral-rl's Cathedral), measured in one run.

    pip install "pettingzoo[classic]"      # PettingZoo's connect four needs pygame
    python crates/py/bench/envs.py [--seconds 5] [--threads 2] [--envs 1024]

cathedral-rl pins numpy 1.22, gymnasium 0.27 and PettingZoo 1.22: install it in a virtual
environment of its own and run this script there with --only-cathedral-rl.

Every AEC loop is the same (PettingZoo's ``agent_iter`` written out): ``last()``, then a uniformly random legal action from the mask (or
``None`` for a finished agent), then ``step``; a step is one call of ``step``. The vector env
picks its random legal actions with numpy for all games at once; its figure counts one step per
game per call. Each figure is the best of three runs of ``--seconds``.
"""

import argparse
import json
import random
import sys
import time

import numpy as np


def aec_steps_per_second(make, seconds):
    env = make()
    rng = random.Random(0)
    steps = 0
    env.reset(seed=0)
    start = time.perf_counter()
    deadline = start + seconds
    broken = 0
    while True:
        while env.agents:
            if env.agent_selection not in env.terminations:
                # cathedral-rl sometimes selects an agent it already removed: end that game.
                broken += 1
                break
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                action = None
            else:
                legal = np.flatnonzero(obs["action_mask"])
                action = int(legal[rng.randrange(len(legal))])
            env.step(action)
            steps += 1
        if time.perf_counter() > deadline:
            break
        env.reset()
    if broken:
        print(f"({broken} games ended early: the env selected an agent it had removed)", file=sys.stderr)
    return steps / (time.perf_counter() - start)


def vec_steps_per_second(spec, envs, threads, seconds):
    import meeple

    venv = meeple.VecEnv(spec, envs, seed=0, threads=threads)
    obs, mask, player = venv.reset()
    rng = np.random.default_rng(0)
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        # A uniformly random legal action per game: the argmax of random keys on legal moves.
        keys = np.where(mask, rng.random(mask.shape, dtype=np.float32), -1.0)
        obs, mask, player, rewards, terminated, truncated = venv.step(keys.argmax(axis=1))
        steps += envs
    return steps / (time.perf_counter() - start)


def best(f, runs=3):
    return max(f() for _ in range(runs))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--envs", type=int, default=1024)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--only-cathedral-rl", action="store_true",
                        help="measure cathedral-rl alone (it pins old numpy/PettingZoo: run it from its own venv)")
    args = parser.parse_args()
    if args.only_cathedral_rl:
        from cathedral_rl import cathedral_v0

        value = best(lambda: aec_steps_per_second(cathedral_v0.env, args.seconds))
        print(f"cathedral-rl cathedral_v0 (AEC)  {value:>12,.0f} steps/s")
        return
    import meeple
    import meeple.pettingzoo

    figures = {}
    from pettingzoo.classic import connect_four_v3

    figures["pettingzoo connect_four_v3 (AEC)"] = best(lambda: aec_steps_per_second(connect_four_v3.env, args.seconds))
    figures["meeple.pettingzoo connect4 (AEC)"] = best(
        lambda: aec_steps_per_second(lambda: meeple.pettingzoo.env("connect4"), args.seconds))
    figures[f"meeple.VecEnv connect4 x{args.envs}"] = best(
        lambda: vec_steps_per_second("connect4", args.envs, args.threads, args.seconds))
    figures["meeple.pettingzoo cathedral:size=8 (AEC)"] = best(
        lambda: aec_steps_per_second(lambda: meeple.pettingzoo.env("cathedral:size=8"), args.seconds))
    figures[f"meeple.VecEnv cathedral:size=8 x{args.envs}"] = best(
        lambda: vec_steps_per_second("cathedral:size=8", args.envs, args.threads, args.seconds))
    figures["meeple.pettingzoo cathedral 10x10 (AEC)"] = best(
        lambda: aec_steps_per_second(lambda: meeple.pettingzoo.env("cathedral"), args.seconds))
    figures[f"meeple.VecEnv cathedral 10x10 x{args.envs}"] = best(
        lambda: vec_steps_per_second("cathedral", args.envs, args.threads, args.seconds))
    try:
        from cathedral_rl import cathedral_v0

        figures["cathedral-rl cathedral_v0 (AEC)"] = best(
            lambda: aec_steps_per_second(cathedral_v0.env, args.seconds))
    except ImportError as e:
        print(f"cathedral-rl not measured: {e}", file=sys.stderr)

    base = figures["pettingzoo connect_four_v3 (AEC)"]
    width = max(map(len, figures))
    for name, value in figures.items():
        print(f"{name:<{width}}  {value:>12,.0f} steps/s  {value / base:8.1f}x connect_four_v3")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
