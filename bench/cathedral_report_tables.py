"""Reproduces the tables of Cox (Cathedral, MCTS) with meeple.

1. Random vs random: how often light wins, dark wins, or the game is drawn, under the standard
   rules and under Tom Lehmann's variant (the report: 61/31/7 and 36/51/13, in its own engine).
2. UCT with 25 iterations per move against random (the report: 72-84%).

Runs `meeple arena` with --records and counts results per seat from the records. Usage:
    cargo build --release && python3 bench/cathedral_report_tables.py [games] [meeple binary]
"""

import json
import math
import os
import subprocess
import sys
import tempfile

GAMES = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
MEEPLE = sys.argv[2] if len(sys.argv) > 2 else "target/release/meeple"


def wilson(k: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z / d * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, c - h), min(1.0, c + h))


def records(game: str, a: str, b: str, games: int, seed: int = 1) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "records.jsonl")
        subprocess.run(
            [MEEPLE, "arena", game, a, b, "--games", str(games), "--seed", str(seed), "--records", path],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        with open(path) as f:
            return [json.loads(line) for line in f]


def seat_table(game: str, label: str) -> None:
    recs = records(game, "random", "random", GAMES)
    light = sum(1 for r in recs if r["returns"][0] == 1.0)
    dark = sum(1 for r in recs if r["returns"][1] == 1.0)
    draws = len(recs) - light - dark
    n = len(recs)
    print(f"{label:<28} light {100 * light / n:5.1f}%  dark {100 * dark / n:5.1f}%  draws {100 * draws / n:5.1f}%  "
          f"({n} games; light 95% CI {100 * wilson(light, n)[0]:.1f}-{100 * wilson(light, n)[1]:.1f}%)")


def uct_vs_random(game: str, label: str) -> None:
    recs = records(game, "mcts:iters=25", "random", GAMES // 4)
    score = 0.0
    for r in recs:
        seat = r["seating"].index(0)
        score += r["returns"][seat]
    n = len(recs)
    lo, hi = wilson(score, n)
    print(f"{label:<28} UCT-25 scores {100 * score / n:5.1f}% vs random (95% CI {100 * lo:.1f}-{100 * hi:.1f}%, {n} games)")


if __name__ == "__main__":
    seat_table("cathedral", "standard, random vs random")
    seat_table("cathedral:variant=lehmann", "lehmann, random vs random")
    uct_vs_random("cathedral", "standard")
    uct_vs_random("cathedral:variant=lehmann", "lehmann")
