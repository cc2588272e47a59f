"""Self-play positions per second for one AlphaZero run: in this process (the Rust self-play
behind ``_meeple.play_external``, 1 and 2 threads) against Ray tasks playing the same batches
(1 and 2 workers), in one run, so the cost of Ray for self-play can be read off.

    python crates/py/bench/distributed_selfplay.py [--game connect4] [--games 16] [--tasks 8]
        [--meeple target/release/meeple] [--json FILE]

The run is a fresh network of the game's default shape (what a run's first minutes play); its
directory is made with ``meeple train az --selfplay external`` and a time limit that ends it
at once. Each configuration plays ``tasks`` batches of ``games`` games.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import ray

from meeple import _meeple, distributed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--game", default="connect4")
    p.add_argument("--games", type=int, default=16)
    p.add_argument("--tasks", type=int, default=8)
    p.add_argument("--meeple", default=None)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args()
    binary = distributed._meeple_binary(a.meeple)
    work = tempfile.mkdtemp(prefix="meeple-selfplay-bench-")
    run = os.path.join(work, "run")
    shards = os.path.join(work, "incoming")
    subprocess.run([binary, "train", "az", a.game, "--selfplay", "external", "--shards", shards, "--out", run,
                    "--minutes", "0.001", "--eval-every", "0"], check=True, capture_output=True)
    rows = []
    seq = 0

    def name():
        nonlocal seq
        seq += 1
        return os.path.join(shards, f"bench-{seq:06d}.jsonl")

    for threads in (1, 2):
        start = time.perf_counter()
        positions = sum(_meeple.play_external(a.game, run, name(), a.games, k, threads)[1] for k in range(a.tasks))
        seconds = time.perf_counter() - start
        rows.append({"run": f"in process, {threads} thread{'s' if threads > 1 else ''}", "workers": None,
                     "threads": threads, "seconds": seconds, "positions": positions,
                     "positions_per_second": positions / seconds})
    for workers in (1, 2):
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": ":".join(x for x in sys.path if x)}})
        task = ray.remote(num_cpus=1, max_retries=3)(distributed._play_external)
        ray.get([task.remote(a.game, run, name(), 1, 10_000 + k, 1) for k in range(workers)])  # warm the workers
        start = time.perf_counter()
        out = ray.get([task.remote(a.game, run, name(), a.games, k, 1) for k in range(a.tasks)])
        seconds = time.perf_counter() - start
        ray.shutdown()
        positions = sum(o[1] for o in out)
        rows.append({"run": f"Ray, {workers} worker{'s' if workers > 1 else ''}", "workers": workers, "threads": 1,
                     "seconds": seconds, "positions": positions, "positions_per_second": positions / seconds})
    base = {1: rows[0]["positions_per_second"], 2: rows[1]["positions_per_second"]}
    for r in rows:
        if r["workers"]:
            r["throughput_vs_in_process_percent"] = 100 * (r["positions_per_second"] / base[r["workers"]] - 1)
        extra = f"  {r['throughput_vs_in_process_percent']:+.1f}%" if "throughput_vs_in_process_percent" in r else ""
        print(f"{r['run']:<22} {r['seconds']:7.2f} s  {r['positions']:6d} positions  "
              f"{r['positions_per_second']:8.1f} positions/s{extra}")
    result = {"game": a.game, "games_per_task": a.games, "tasks": a.tasks, "net": "the game's default, fresh",
              "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(), "ray": ray.__version__,
              "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
