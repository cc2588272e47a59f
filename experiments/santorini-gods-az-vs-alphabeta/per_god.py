"""The per-god table of a match's records: each god's score for each agent, by seat (the first
player moves first), with 95% Wilson intervals. Usage: python3 per_god.py RECORDS.jsonl.gz > per-god.md"""
import gzip
import json
import math
import sys
from collections import defaultdict


# Pages mark figures the claims test cannot recompute (here: counted from records).
LEGEND = "° Not recomputed by the test suite: a figure pooled by hand over several matches, counted from game records, read from a training run's evaluations, or whose raw summary was not kept. Every other `S% [L, H]` here is recomputed from an arena summary (`cargo test -p meeple-arena --test claims`)."


def wilson(score, n, z=1.959964):
    if n == 0:
        return (0.0, 1.0)
    centre = (score + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(score * (1 - score) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def cell(points, n):
    if n == 0:
        return "-"
    lo, hi = wilson(points / n, n)
    return f"{100 * points / n:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]° ({n})"


def main(path):
    opener = gzip.open if path.endswith(".gz") else open
    # (agent, god, seat) -> [points, games]
    table = defaultdict(lambda: [0.0, 0])
    agents = None
    with opener(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            agents = r["settings"]["agents"]  # the match's agents; r["agents"] is by seat
            gods = r["actions"][0].split("+")
            for seat, agent in enumerate(r["seating"]):
                t = table[(agent, gods[seat], seat)]
                t[0] += r["returns"][seat]
                t[1] += 1
    print(f"Per-god scores from `{path}`; each cell: score [95% interval] (games).\n")
    for a, name in enumerate(agents):
        print(f"`{name}` playing the god:\n")
        print("| god | moving first | moving second | both seats |")
        print("| --- | --- | --- | --- |")
        for god in sorted({g for (_, g, _) in table}):
            first, second = table[(a, god, 0)], table[(a, god, 1)]
            both = [first[0] + second[0], first[1] + second[1]]
            print(f"| {god} | {cell(*first)} | {cell(*second)} | {cell(*both)} |")
        print()
    print(LEGEND)


main(sys.argv[1])
