#!/usr/bin/env python3
"""The arms' evaluation curves side by side, from each arm's metrics.jsonl.

    python3 curves.py [ARM ...]      (default: scratch warm teacher; run from this folder)

One row per evaluation: the generation, the self-play games so far, and each arm's score with
its 95% interval against alpha-beta on the gods evaluator at the network's own time a move
(both sides' ms a move beside it), then against the fixed rung, alpha-beta depth 2.
"""

import gzip
import json
import os
import sys


# Pages mark figures the claims test cannot recompute (here: a training run's evaluations).
LEGEND = "° Not recomputed by the test suite: a figure pooled by hand over several matches, counted from game records, read from a training run's evaluations, or whose raw summary was not kept. Every other `S% [L, H]` here is recomputed from an arena summary (`cargo test -p meeple-arena --test claims`)."


def evaluations(arm):
    """The arm's evaluations by generation, from its metrics.jsonl (or the .gz of a finished run)."""
    path = os.path.join(arm, "metrics.jsonl")
    rows = {}
    if not os.path.exists(path):
        path += ".gz"
        if not os.path.exists(path):
            return rows
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            d = json.loads(line)
            if d.get("event") == "evaluation":
                rows[d["generation"]] = d["evaluation"]["opponents"]
    return rows


def cell(o):
    lo, hi = o["ci"]
    return f"{100 * o['score']:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]°"


def main():
    arms = sys.argv[1:] or ["scratch", "warm", "teacher"]
    curves = {a: evaluations(a) for a in arms}
    gens = sorted({g for c in curves.values() for g in c})
    print("| generation (games) | " + " | ".join(f"{a}: equal time (ms a move) | {a}: depth 2" for a in arms) + " |")
    print("|---|" + "---|---|" * len(arms))
    for g in gens:
        cells = []
        for a in arms:
            ops = curves[a].get(g)
            if not ops:
                cells += ["-", "-"]
                continue
            eq = next(o for o in ops if "equal time" in o["opponent"])
            d2 = next(o for o in ops if "depth=2" in o["opponent"])
            cells += [f"{cell(eq)} ({eq['agent_ms']:.1f} / {eq['opponent_ms']:.1f})", cell(d2)]
        print(f"| {g} ({256 * g:,}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
    print()
    print(LEGEND)
