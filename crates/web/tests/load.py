#!/usr/bin/env python3
"""A bounded load test of `meeple serve`, on the loopback only.

    python3 crates/web/tests/load.py [--meeple target/release/meeple] [--games 50] [--hostile 1000]

Starts a server on a free port, then at once: plays GAMES agent-against-agent matches over all six
games, and sends HOSTILE malformed or hostile requests (bad JSON, huge bodies, wrong ids, illegal
moves, stale plies, bad specs and viewers, forbidden views) from several threads. It checks that
the server keeps answering (a catalog request every 0.2 s), that each hostile request gets the
status its kind calls for and never a 5xx other than the match limit, samples the server's
resident memory, waits for every match to end and replays each record through the server. Prints
the figures as JSON; exits non-zero if any check fails. Uses the standard library only.
"""

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter

GAMES = ["tictactoe", "connect4", "santorini", "cathedral:size=8", "sagrada", "catan:players=3"]
AGENTS = ["random", "mcts:iters=50", "first"]


class Client:
    def __init__(self, port):
        self.port = port

    def call(self, method, path, body=None, raw=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            conn.request(method, path, body=data, headers=headers)
            res = conn.getresponse()
            text = res.read()
            try:
                value = json.loads(text) if text else None
            except ValueError:
                value = text.decode(errors="replace")
            return res.status, value
        finally:
            conn.close()


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def hostile_requests(client, human_match, n, seed):
    """Yields (kind, expected statuses, callable) for n hostile requests."""
    rng = random.Random(seed)
    kinds = [
        ("bad json", {400}, lambda: client.call("POST", "/api/matches", raw=b"{\"game\": ")),
        ("not utf-8", {400}, lambda: client.call("POST", "/api/matches", raw=b"\xff\xfe\x00{")),
        ("deep json", {400}, lambda: client.call("POST", "/api/matches", raw=b"[" * 10000 + b"]" * 10000)),
        ("huge body", {413}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", raw=b"x" * (1 << 20))),
        # The server refuses before reading it all, and may close while the client still sends.
        ("huge records", {413, "closed early"}, lambda: client.call("POST", "/api/replays", raw=b"{\"records\":\"" + b"a" * (17 << 20) + b"\"}")),
        ("wrong id", {404}, lambda: client.call("GET", f"/api/matches/m{rng.randrange(10**9, 10**10)}")),
        ("wrong id move", {404}, lambda: client.call("POST", "/api/matches/nope/moves", {"ply": 0, "action": "1"})),
        ("unknown game", {400}, lambda: client.call("POST", "/api/matches", {"game": "chess", "seats": ["human", "random"]})),
        ("unknown agent", {400}, lambda: client.call("POST", "/api/matches", {"game": "connect4", "seats": ["human", "deep(blue"]})),
        ("bad option", {400}, lambda: client.call("POST", "/api/matches", {"game": "connect4:rows=1000000", "seats": ["human", "random"]})),
        ("seat count", {400}, lambda: client.call("POST", "/api/matches", {"game": "catan", "seats": ["human"]})),
        ("move time", {400}, lambda: client.call("POST", "/api/matches", {"game": "connect4", "seats": ["random", "random"], "move_time_ms": 10**9})),
        ("illegal move", {422}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", {"ply": 0, "action": "99"})),
        ("illegal id", {422}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", {"ply": 0, "id": 2**32 - 1})),
        ("stale ply", {409}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", {"ply": 5, "action": "4"})),
        ("negative ply", {400}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", {"ply": -1, "action": "4"})),
        ("bad viewer", {400}, lambda: client.call("GET", f"/api/matches/{human_match}?viewer=-3")),
        ("agent's view", {403}, lambda: client.call("GET", f"/api/matches/{human_match}?viewer=1")),
        ("early record", {403}, lambda: client.call("GET", f"/api/matches/{human_match}/record")),
        ("bad ply", {400}, lambda: client.call("GET", f"/api/matches/{human_match}?ply=99999999999999999999999")),
        ("bad analysis", {400}, lambda: client.call("POST", f"/api/matches/{human_match}/analysis", {"agent": "mcts:iters=-1", "viewer": 0})),
        ("bad replay", {400, 422}, lambda: client.call("POST", "/api/replays", {"records": "{\"game\": \"connect4\", \"actions\": [\"9\"]}"})),
        ("unknown route", {404, 405}, lambda: client.call("PUT", "/api/matches")),
    ]
    for i in range(n):
        yield kinds[i % len(kinds)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meeple", default="target/release/meeple")
    ap.add_argument("--games", type=int, default=50)
    ap.add_argument("--hostile", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=8, help="threads sending hostile requests")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    server = subprocess.Popen(
        [args.meeple, "serve", "--port", "0", "--max-matches", str(args.games + 50)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    line = server.stdout.readline()
    if "http://" not in line:
        print("server did not start:", line, server.stderr.read(), file=sys.stderr)
        return 1
    port = int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
    client = Client(port)
    failures = []
    started = time.time()
    try:
        status, made = client.call("POST", "/api/matches", {"game": "connect4", "seats": ["human", "random"], "seed": 1})
        assert status == 201, made
        human_match = made["id"]

        matches = []
        rng = random.Random(args.seed)
        for i in range(args.games):
            game = GAMES[i % len(GAMES)]
            status, made = client.call("POST", "/api/matches", {
                "game": game, "seats": [rng.choice(AGENTS) for _ in range(3 if game.startswith("catan") else 2)],
                "seed": i, "delay_ms": 0, "move_time_ms": 200,
            })
            if status != 201:
                failures.append(f"creating {game}: {status} {made}")
                continue
            matches.append((made["id"], game))

        peak = [rss_kib(server.pid)]
        answering = {"checks": 0, "slowest_ms": 0.0, "failed": 0}
        done = threading.Event()

        def watch():
            while not done.is_set():
                peak[0] = max(peak[0], rss_kib(server.pid))
                t = time.time()
                try:
                    status, _ = client.call("GET", "/api/catalog", timeout=10)
                    ok = status == 200
                except OSError:
                    ok = False
                answering["checks"] += 1
                answering["slowest_ms"] = max(answering["slowest_ms"], (time.time() - t) * 1e3)
                if not ok:
                    answering["failed"] += 1
                time.sleep(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()

        outcomes = Counter()
        wrong = []
        lock = threading.Lock()
        work = list(hostile_requests(client, human_match, args.hostile, args.seed))

        def attack(part):
            for kind, expected, call in part:
                try:
                    status, body = call()
                except (BrokenPipeError, ConnectionResetError):
                    status, body = "closed early", None
                except OSError as e:
                    status, body = f"connection error: {e}", None
                with lock:
                    outcomes[(kind, status)] += 1
                    if status not in expected:
                        wrong.append(f"{kind}: got {status}, expected {sorted(map(str, expected))}: {str(body)[:200]}")

        threads = [threading.Thread(target=attack, args=(work[k::args.threads],)) for k in range(args.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        hostile_seconds = time.time() - started

        # Every match ends; every record replays under the rules.
        deadline = time.time() + 1800
        finished, replayed, plies = 0, 0, 0
        for mid, game in matches:
            while True:
                status, snap = client.call("GET", f"/api/matches/{mid}")
                if status != 200:
                    failures.append(f"{mid} ({game}): {status} {snap}")
                    break
                if snap["result"] is not None:
                    finished += 1
                    plies += snap["ply"]
                    break
                if snap.get("error"):
                    failures.append(f"{mid} ({game}): {snap['error']}")
                    break
                if time.time() > deadline:
                    failures.append(f"{mid} ({game}): not over")
                    break
                time.sleep(0.1)
            status, record = client.call("GET", f"/api/matches/{mid}/record")
            if status != 200:
                failures.append(f"{mid} record: {status} {record}")
                continue
            status, rep = client.call("POST", "/api/replays", {"records": json.dumps(record)})
            if status == 201 and rep["plies"] == record_plies(record):
                replayed += 1
                client.call("DELETE", f"/api/matches/{rep['id']}")
            else:
                failures.append(f"{mid} replay: {status} {rep}")
        done.set()
        watcher.join()
        if answering["failed"]:
            failures.append(f"{answering['failed']} catalog checks failed while under load")
        failures.extend(wrong[:20])
        by_kind = {}
        for (kind, status), count in sorted(outcomes.items(), key=lambda kv: str(kv[0])):
            by_kind.setdefault(kind, {})[str(status)] = count
        report = {
            "games": len(matches), "games_finished": finished, "records_replayed": replayed, "plies": plies,
            "hostile_requests": sum(outcomes.values()), "hostile_wrong_status": len(wrong), "hostile_by_kind": by_kind,
            "hostile_seconds": round(hostile_seconds, 1), "total_seconds": round(time.time() - started, 1),
            "peak_rss_mib": round(peak[0] / 1024, 1), "final_rss_mib": round(rss_kib(server.pid) / 1024, 1),
            "liveness_checks": answering["checks"], "slowest_check_ms": round(answering["slowest_ms"], 1),
            "server_alive": server.poll() is None, "failures": failures,
        }
        print(json.dumps(report, indent=1))
        return 0 if not failures and report["server_alive"] else 1
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def record_plies(record):
    return len(record["actions"])


if __name__ == "__main__":
    sys.exit(main())
