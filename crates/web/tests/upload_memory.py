#!/usr/bin/env python3
"""The server's resident memory while clients upload records files, on the loopback only.

    python3 crates/web/tests/upload_memory.py [--meeple target/release/meeple] [--budget 200mb]
                                              [--uploaders 8] [--seconds 25] [--one-line] [--json FILE]

Starts `meeple serve` (a fresh data directory, `--memory-budget BUDGET`, clients named by
`X-Forwarded-For` through this machine as a proxy) and has UPLOADERS clients, each its own
address, upload a 12 MB records file as JSON lines over and over for SECONDS: many short games
(the default), or with --one-line a single game of two million plies (what a record that is
mostly its moves looks like). Reports the peak resident memory against the budget and the
answers; exits non-zero if the peak passes the budget. Uses the standard library only.
"""

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time

from serving import Client, budget_mib, report_and_exit, rss_kib, start, stop


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meeple", default="target/release/meeple")
    ap.add_argument("--budget", default="200mb", help="the server's --memory-budget")
    ap.add_argument("--uploaders", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=25)
    ap.add_argument("--one-line", action="store_true", help="one game of two million plies instead of many short games")
    ap.add_argument("--json", help="also write the report here")
    args = ap.parse_args()
    budget_mib(args.budget)  # a wrong budget is refused before the server starts
    if args.uploaders < 1 or args.seconds <= 0:
        raise SystemExit("--uploaders must be at least 1 and --seconds above 0")

    if args.one_line:
        body = json.dumps({"game": "tictactoe", "seed": 0, "agents": ["a", "b"], "actions": ["a1"] * 2_000_000}) + "\n"
    else:
        line = json.dumps({"game": "tictactoe", "seed": 0, "agents": ["a", "b"], "actions": ["a1", "b1", "a2", "b2", "a3"]})
        body = "\n".join([line] * (12_000_000 // (len(line) + 1))) + "\n"
    big = body.encode()

    data = tempfile.mkdtemp(prefix="meeple-uploads-")
    server, port = start(args.meeple, data, "--memory-budget", args.budget, "--client-header", "X-Forwarded-For")
    done = threading.Event()
    answers, lock = {}, threading.Lock()

    def upload(k):
        c = Client(port, "127.0.0.1", {"X-Forwarded-For": f"198.51.100.{k + 1}"})
        while not done.is_set():
            try:
                code, reply = c.call("POST", "/api/replays?index=0", raw=big,
                                     headers={"Content-Type": "application/x-ndjson"}, timeout=60)
            except OSError:
                code = "closed"
            with lock:
                answers[str(code)] = answers.get(str(code), 0) + 1
            if code == 201:
                c.call("DELETE", f"/api/matches/{reply['id']}", token=reply["owner"])

    peak = 0
    try:
        threads = [threading.Thread(target=upload, args=(k,), daemon=True) for k in range(args.uploaders)]
        for t in threads:
            t.start()
        end = time.time() + args.seconds
        while time.time() < end:
            peak = max(peak, rss_kib(server.pid))
            time.sleep(0.05)
        done.set()
        budget = budget_mib(args.budget)
        report = {
            "budget": args.budget, "uploaders": args.uploaders, "one_line": args.one_line,
            "upload_bytes": len(big), "peak_rss_mib": round(peak / 1024, 1), "answers": answers,
            "failures": [] if peak / 1024 <= budget else [f"resident memory {peak / 1024:.0f} MiB passed the budget {args.budget}"],
            "server_alive": server.poll() is None,
        }
        return report_and_exit(report, args.json)
    finally:
        done.set()
        stop(server)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
