"""Games per second of one match played by the single-process arena and by the distributed
arena on a local Ray instance with 1 and 2 workers, in one run, so the cost of Ray per game
can be read off (the overhead in percent against the arena with as many threads).

    python crates/py/bench/distributed.py [--game connect4] [--agents mcts:iters=200 mcts:iters=200]
        [--games 200] [--batch 10] [--json FILE]

Every configuration plays the same games (same seed), so their results are identical and only
the wall time differs. Ray's start-up is outside the timed part: a cluster is started once and
then serves many matches.
"""

import argparse
import json
import platform
import sys
import time

import ray

import meeple
from meeple import distributed


def timed(f):
    start = time.perf_counter()
    summary = f()
    return time.perf_counter() - start, summary


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--game", default="connect4")
    p.add_argument("--agents", nargs="+", default=["mcts:iters=200", "mcts:iters=200"])
    p.add_argument("--games", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args()
    rows = []
    wins = None
    for label, run in [
        ("arena, 1 thread", lambda: meeple.arena(a.game, a.agents, games=a.games, seed=a.seed, threads=1)),
        ("arena, 2 threads", lambda: meeple.arena(a.game, a.agents, games=a.games, seed=a.seed, threads=2)),
    ]:
        seconds, summary = timed(run)
        rows.append({"run": label, "workers": None, "seconds": seconds, "games_per_second": a.games / seconds})
        wins = [x["wins"] for x in summary["agents"]]
    for workers in (1, 2):
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": ":".join(x for x in sys.path if x)}})
        # One small match first: workers start and import meeple outside the timed part.
        distributed.arena(a.game, a.agents, games=2 * workers, seed=a.seed + 1, batch=1)
        seconds, summary = timed(lambda: distributed.arena(a.game, a.agents, games=a.games, seed=a.seed, batch=a.batch))
        ray.shutdown()
        assert [x["wins"] for x in summary["agents"]] == wins, "the distributed arena played other games"
        rows.append({"run": f"Ray, {workers} worker{'s' if workers > 1 else ''}", "workers": workers,
                     "seconds": seconds, "games_per_second": a.games / seconds})
    base = {1: rows[0]["seconds"], 2: rows[1]["seconds"]}
    for r in rows:
        if r["workers"]:
            r["overhead_percent"] = 100 * (r["seconds"] / base[r["workers"]] - 1)
    result = {"game": a.game, "agents": a.agents, "games": a.games, "seed": a.seed, "batch": a.batch,
              "machine": platform.processor() or platform.machine(), "cpus": __import__("os").cpu_count(),
              "ray": ray.__version__, "rows": rows}
    for r in rows:
        extra = f"  overhead {r['overhead_percent']:+.1f}%" if "overhead_percent" in r else ""
        print(f"{r['run']:<18} {r['seconds']:7.2f} s  {r['games_per_second']:7.2f} games/s{extra}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
