"""Training-pass speed of two builds, side by side in interleaved rounds on one machine state.

Build the `train_speed` example at each commit (a worktree sharing this target directory only
rebuilds meeple-nn), copy the two binaries out, then:

    git worktree add ../w-old 529ab58   # add crates/nn/examples/train_speed.rs if it lacks it
    T=$PWD/target; (cd ../w-old && CARGO_TARGET_DIR=$T cargo build --release -p meeple-nn --example train_speed)
    cp target/release/examples/train_speed /tmp/ts-old
    cargo build --release -p meeple-nn --example train_speed && cp target/release/examples/train_speed /tmp/ts-new
    python3 bench/train_speed_rounds.py /tmp/ts-old "529ab58" /tmp/ts-new "today's" --out experiments/network-speed/train-speed/X.json

Each round runs both binaries on connect four's and Cathedral's default towers (one thread,
batch 256, `--seconds` each), the order alternating between rounds; the summary gives medians
and the second build's ratio to the first's.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess

GAMES = {"connect4": ["3", "6", "7", "7"], "cathedral": ["28", "10", "10", "2765"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", help="the first build's train_speed binary")
    p.add_argument("base_label", help="what it is (a commit)")
    p.add_argument("new", help="the second build's train_speed binary")
    p.add_argument("new_label")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--out", required=True, help="JSON file to write (not overwritten)")
    a = p.parse_args()
    if a.rounds < 1 or not 0 < a.seconds <= 600:
        p.error("--rounds at least 1, --seconds above 0 and at most 600")
    if os.path.exists(a.out):
        p.error(f"{a.out} exists: give a new file")
    for b in (a.base, a.new):
        if not os.access(b, os.X_OK):
            p.error(f"{b}: not an executable")
    builds = [("base", a.base, a.base_label), ("new", a.new, a.new_label)]
    runs = []
    for rnd in range(1, a.rounds + 1):
        for game, dims in GAMES.items():
            for key, path, _ in builds if rnd % 2 else builds[::-1]:
                out = subprocess.run([path, "resnet", *dims, str(a.seconds), "1"], capture_output=True, text=True,
                                     check=True).stdout
                found = re.search(r": (\d+) samples/s", out)
                if not found:
                    raise SystemExit(f"{path}: no 'samples/s' in its output: {out!r}")
                runs.append({"round": rnd, "build": key, "game": game, "samples_per_sec": float(found.group(1))})
                print(rnd, game, key, found.group(1), flush=True)
    summary = {}
    for game in GAMES:
        per = {k: [r["samples_per_sec"] for r in runs if r["game"] == game and r["build"] == k] for k, _, _ in builds}
        base = statistics.median(per["base"])
        ratios = [n / b for n, b in zip(per["new"], per["base"])]
        summary[game] = {label: {"median_samples_per_sec": statistics.median(per[k]), "min": min(per[k]),
                                 "max": max(per[k])} for k, _, label in builds}
        summary[game]["ratio_of_medians"] = round(statistics.median(per["new"]) / base, 3)
        summary[game]["round_ratios"] = [round(x, 3) for x in ratios]
    doc = {"what": f"training-pass samples/s, batch 256, 1 thread, default 4x32 tower; {a.rounds} interleaved rounds "
                   f"of {a.seconds:g} s, order alternating",
           "command": "train_speed resnet C H W ACTIONS SECONDS 1 (cathedral: 28 10 10 2765; connect4: 3 6 7 7)",
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
           "builds": {k: label for k, _, label in builds}, "summary": summary, "runs": runs}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, a.out)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
