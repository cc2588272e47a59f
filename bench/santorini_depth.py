"""Depth reached by exact Santorini alpha-beta from random positions after placement.

For each of N random placements (seeded), prints the time of a fixed depth-8 search and the
depth a `time=1s` search completes, then the median and maximum time and how many reached 8.

    python3 bench/santorini_depth.py [--meeple target/release/meeple] [--seed 5] [--positions 20]
"""

import argparse
import random
import re
import subprocess


def search(meeple: str, spec: str, moves: str) -> str:
    out = subprocess.run(
        [meeple, "analyze", "santorini", spec, "--moves", moves], capture_output=True, text=True, check=True
    ).stderr
    return next(line for line in out.splitlines() if line.startswith("alphabeta:"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meeple", default="target/release/meeple")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--positions", type=int, default=20)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cells = [c + r for c in "abcde" for r in "12345"]
    times, reached = [], 0
    for _ in range(args.positions):
        moves = " ".join(rng.sample(cells, 4))
        line = search(args.meeple, "alphabeta:depth=8,eval=linear8,verbose=true", moves)
        t8 = float(re.search(r", ([0-9.]+) s, pv", line).group(1))
        line = search(args.meeple, "alphabeta:time=1s,eval=linear8,verbose=true", moves)
        depth = int(re.search(r"depth (\d+)", line).group(1))
        times.append(t8)
        reached += depth >= 8
        print(f"{moves}: depth 8 alone {t8:.3f} s; time=1s completed depth {depth}", flush=True)
    times.sort()
    print(
        f"depth-8 time: median {times[len(times) // 2]:.3f} s, max {times[-1]:.3f} s; "
        f"time=1s completed depth >= 8 from {reached} of {len(times)}"
    )


if __name__ == "__main__":
    main()
