"""Thins a training run's metrics log (a line a game: tens of MB) to one line per block of
N consecutive generation lines, so the record keeps the curve and not every game.

Each thinned line is a generation line of the same schema: the block's last line's counters
(generation, steps, episodes, positions, wall_seconds), the mean of every loss, figure and
stat over the block's trained lines, and "thinned": the number of lines it stands for.
Evaluation lines are kept whole. `meeple plot` reads the result like any metrics log.

    python3 experiments/thin_metrics.py IN.jsonl[.gz] OUT.jsonl.gz [--every 100]

OUT is written beside itself and renamed into place; an existing OUT is refused.
"""
import argparse
import gzip
import json
import os
import sys


def lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{path} line {n}: not JSON ({e})")


def mean_of(block, key):
    sums, counts = {}, {}
    for d in block:
        for k, v in (d.get(key) or {}).items():
            if isinstance(v, (int, float)):
                sums[k] = sums.get(k, 0.0) + v
                counts[k] = counts.get(k, 0) + 1
    return {k: sums[k] / counts[k] for k in sums}


def thin(block):
    trained = [d for d in block if d.get("trained")] or block
    out = dict(block[-1])
    for key in ("losses", "figures", "stats"):
        if key in out:
            out[key] = mean_of(trained, key)
    out["trained"] = any(d.get("trained") for d in block)
    out["thinned"] = len(block)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--every", type=int, default=100, help="generation lines per thinned line (default 100)")
    a = p.parse_args()
    if a.every < 1:
        sys.exit("--every: give 1 or more")
    if os.path.exists(a.output):
        sys.exit(f"{a.output} exists; remove it first")
    tmp = a.output + ".part"
    kept = read = 0
    with gzip.open(tmp, "wt") as out:
        block = []
        for d in lines(a.input):
            read += 1
            if d.get("event") == "generation":
                block.append(d)
                if len(block) == a.every:
                    out.write(json.dumps(thin(block)) + "\n")
                    kept, block = kept + 1, []
            else:
                if block:
                    out.write(json.dumps(thin(block)) + "\n")
                    kept, block = kept + 1, []
                out.write(json.dumps(d) + "\n")
                kept += 1
        if block:
            out.write(json.dumps(thin(block)) + "\n")
            kept += 1
    os.replace(tmp, a.output)
    print(f"{a.input}: {read} lines -> {kept} in {a.output}")


if __name__ == "__main__":
    main()
