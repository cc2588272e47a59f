#!/usr/bin/env python3
"""The hostile suite's long form: a load test of `meeple serve`, on the loopback only.

    python3 crates/web/tests/load.py [--meeple target/release/meeple] [--games 50] [--hostile 1000]
                                     [--json experiments/web-load/web-load.json]

Starts a server on a free port with a fresh data directory and a stated memory budget, then at
once: plays GAMES agent-against-agent matches over all six games, runs a Catan game that would
never end (`turns=100000`, stopped by the ply cap), holds 100 idle connections and a flood of
event streams, abandons long analyses, uploads 12 MB record files, and sends HOSTILE malformed or
hostile requests from several threads (bad JSON, huge bodies, wrong ids, illegal moves, stale
plies, forbidden views, moves without a seat's token, cross-site content types, foreign Origin and
Host, files named in specs, oversized tables). It checks that a normal request (a person's
snapshot) is answered within 100 ms throughout, that each hostile request gets the status its kind
calls for, samples the server's resident memory (peak, and settled once the matches are done),
waits for every match to end and replays each record through the server. Prints the figures as
JSON; exits non-zero if any check fails. Uses the standard library only.
"""

import argparse
import http.client
import json
import random
import shutil
import socket
import tempfile
import sys
import threading
import time
from collections import Counter

from serving import Client, report_and_exit, rss_kib, start, stop

GAMES = ["tictactoe", "connect4", "santorini", "cathedral:size=8", "sagrada", "catan:players=3"]
AGENTS = ["random", "mcts:iters=50", "first"]


def hostile_requests(client, human_match, token, n, seed):
    """Yields (kind, expected statuses, callable) for n hostile requests."""
    rng = random.Random(seed)
    create = json.dumps({"game": "tictactoe", "seats": ["random", "random"]}).encode()
    me = {"token": token}
    kinds = [
        ("text/plain create", {415}, lambda: client.call("POST", "/api/matches", raw=create, headers={"Content-Type": "text/plain"})),
        ("form create", {415}, lambda: client.call("POST", "/api/matches", raw=create, headers={"Content-Type": "application/x-www-form-urlencoded"})),
        ("foreign origin", {403}, lambda: client.call("POST", "/api/matches", raw=create, headers={"Origin": "http://evil.example"})),
        ("rebound host", {421}, lambda: client.call("GET", f"/api/matches/{human_match}", headers={"Host": "evil.example"})),
        ("seat without token", {403}, lambda: client.call("GET", f"/api/matches/{human_match}?viewer=0")),
        ("move without token", {403}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", {"ply": 0, "action": "4"})),
        ("undo without token", {403, 409}, lambda: client.call("POST", f"/api/matches/{human_match}/undo", {"ply": 0})),
        ("delete without owner", {403}, lambda: client.call("DELETE", f"/api/matches/{human_match}", token=token)),
        # 429: one address has at most two analyses under way, and these come from 8 threads.
        ("blocking file", {400, 429}, lambda: client.call("POST", f"/api/matches/{human_match}/analysis", {"agent": "mcts:iters=10,eval=(net:model=/dev/stdin)"}, **me)),
        ("outside file", {400}, lambda: client.call("POST", "/api/matches", {"game": "connect4", "seats": ["human", "az:model=/etc/passwd"]})),
        ("huge table", {400}, lambda: client.call("POST", "/api/matches", {"game": "connect4", "seats": ["human", "alphabeta:tt=8gb"]})),
        ("bad json", {400}, lambda: client.call("POST", "/api/matches", raw=b"{\"game\": ")),
        ("not utf-8", {400}, lambda: client.call("POST", "/api/matches", raw=b"\xff\xfe\x00{")),
        ("deep json", {400}, lambda: client.call("POST", "/api/matches", raw=b"[" * 10000 + b"]" * 10000)),
        ("huge body", {413}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", raw=b"x" * (1 << 20))),
        # The server refuses before reading it all, and may close while the client still sends.
        ("huge records", {413, "closed early"}, lambda: client.call("POST", "/api/replays", raw=b"a" * (17 << 20), headers={"Content-Type": "application/x-ndjson"})),
        ("big json replay", {413, "closed early"}, lambda: client.call("POST", "/api/replays", raw=b"{\"records\":\"" + b"a" * (1 << 20) + b"\"}")),
        ("token in address", {400}, lambda: client.call("GET", f"/api/matches/{human_match}?token={token}")),
        ("wrong id", {404}, lambda: client.call("GET", f"/api/matches/{rng.getrandbits(128):032x}")),
        ("wrong id move", {404}, lambda: client.call("POST", "/api/matches/nope/moves", {"ply": 0, "action": "1"})),
        ("unknown game", {400}, lambda: client.call("POST", "/api/matches", {"game": "chess", "seats": ["human", "random"]})),
        ("unknown agent", {400}, lambda: client.call("POST", "/api/matches", {"game": "connect4", "seats": ["human", "deep(blue"]})),
        ("bad option", {400}, lambda: client.call("POST", "/api/matches", {"game": "connect4:rows=1000000", "seats": ["human", "random"]})),
        ("seat count", {400}, lambda: client.call("POST", "/api/matches", {"game": "catan", "seats": ["human"]})),
        ("move time", {400}, lambda: client.call("POST", "/api/matches", {"game": "connect4", "seats": ["random", "random"], "move_time_ms": 10**9})),
        ("illegal move", {422}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", {"ply": 0, "action": "99"}, **me)),
        ("illegal id", {422}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", {"ply": 0, "id": 2**32 - 1}, **me)),
        ("stale ply", {409}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", {"ply": 5, "action": "4"}, **me)),
        ("negative ply", {400}, lambda: client.call("POST", f"/api/matches/{human_match}/moves", {"ply": -1, "action": "4"}, **me)),
        ("bad viewer", {400}, lambda: client.call("GET", f"/api/matches/{human_match}?viewer=-3")),
        ("agent's view", {403}, lambda: client.call("GET", f"/api/matches/{human_match}?viewer=1", **me)),
        ("early record", {403}, lambda: client.call("GET", f"/api/matches/{human_match}/record", **me)),
        ("bad ply", {400}, lambda: client.call("GET", f"/api/matches/{human_match}?ply=99999999999999999999999")),
        ("bad analysis", {400, 429}, lambda: client.call("POST", f"/api/matches/{human_match}/analysis", {"agent": "mcts:iters=-1", "viewer": 0}, **me)),
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
    ap.add_argument("--budget", default="4gb", help="the server's memory budget (--memory-budget)")
    ap.add_argument("--json", help="also write the report here")
    args = ap.parse_args()

    data = tempfile.mkdtemp(prefix="meeple-load-")
    # One client (this machine) plays every part here: its shares are the whole server's.
    server, port = start(args.meeple, data, "--max-matches", str(args.games + 60),
                         "--max-matches-per-client", str(args.games + 60), "--memory-budget", args.budget,
                         "--client-memory", args.budget, "--max-connections-per-client", "512")
    client = Client(port)
    failures = []
    started = time.time()
    try:
        status, made = client.call("POST", "/api/matches", {"game": "connect4", "seats": ["human", "random"]})
        assert status == 201, made
        human_match, token = made["id"], made["seats"][0]["token"]

        # A game that would not end on its own (`first` seats play all 100,000 turns, 427,687 plies):
        # the ply cap stops it.
        status, made = client.call("POST", "/api/matches", {
            "game": "catan:players=3,turns=100000,points=20", "seats": ["first"] * 3, "delay_ms": 0, "move_time_ms": 50})
        assert status == 201, made
        endless, endless_owner = made["id"], made["owner"]

        # Held open all along: idle connections and event streams (beyond the cap per match).
        idle = []
        for _ in range(100):
            s_ = socket.create_connection(("127.0.0.1", port))
            idle.append(s_)
        streams, refused_streams = [], Counter()
        for _ in range(20):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("GET", f"/api/matches/{endless}/events")
            res = conn.getresponse()
            refused_streams[res.status] += 1
            streams.append(conn)

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
            matches.append((made["id"], game, made["owner"]))

        peak = [rss_kib(server.pid)]
        answering = {"checks": 0, "slowest_ms": 0.0, "failed": 0, "over_100ms": 0}
        done = threading.Event()

        def watch():
            while not done.is_set():
                peak[0] = max(peak[0], rss_kib(server.pid))
                t = time.time()
                try:
                    # A normal request: the person's own view of their game.
                    status, _ = client.call("GET", f"/api/matches/{human_match}", timeout=10, token=token)
                    ok = status == 200
                except OSError:
                    ok = False
                answering["checks"] += 1
                ms = (time.time() - t) * 1e3
                answering["slowest_ms"] = max(answering["slowest_ms"], ms)
                answering["over_100ms"] += ms > 100
                if not ok:
                    answering["failed"] += 1
                time.sleep(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()

        outcomes = Counter()
        wrong = []
        lock = threading.Lock()
        work = list(hostile_requests(client, human_match, token, args.hostile, args.seed))

        # Analyses asked for and abandoned at once, and 12 MB record uploads.
        def abandon():
            for _ in range(6):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=0.3)
                try:
                    body = json.dumps({"agent": "mcts", "time_ms": 10000}).encode()
                    conn.request("POST", f"/api/matches/{human_match}/analysis", body=body,
                                 headers={"Content-Type": "application/json", "X-Meeple-Token": token})
                    conn.getresponse()
                except OSError:
                    pass
                conn.close()
        line_ = json.dumps({"game": "tictactoe", "seed": 0, "agents": ["a", "b"], "actions": ["a1", "b1", "a2", "b2", "a3"], "scores": [1, 0]})
        big = ("\n".join([line_] * (12_700_000 // (len(line_) + 1))) + "\n").encode()
        uploads = Counter()

        def upload():
            for _ in range(5):
                status, body = client.call("POST", "/api/replays?index=0", raw=big, headers={"Content-Type": "application/x-ndjson"})
                uploads[status] += 1
                if status == 201:
                    client.call("GET", f"/api/matches/{body['id']}?ply=3")
        side = [threading.Thread(target=abandon), threading.Thread(target=upload)]
        for t in side:
            t.start()

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
        for t in threads + side:
            t.join()
        hostile_seconds = time.time() - started

        # Every match ends; every record replays under the rules.
        deadline = time.time() + 1800
        finished, replayed, plies = 0, 0, 0
        for mid, game, _ in matches:
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
                client.call("DELETE", f"/api/matches/{rep['id']}", token=rep["owner"])
            else:
                failures.append(f"{mid} replay: {status} {rep}")
        # The endless game stopped at the cap, not by running out of memory.
        deadline = time.time() + 600
        while True:
            status, snap = client.call("GET", f"/api/matches/{endless}")
            if snap.get("status") in ("stopped", "over") or time.time() > deadline:
                break
            time.sleep(0.5)
        endless_report = {"status": snap.get("status"), "plies": snap.get("plies"), "log_lines_sent": len(snap.get("log", []))}
        if snap.get("status") not in ("stopped", "over"):
            failures.append(f"the endless Catan game did not stop: {snap.get('status')} at ply {snap.get('plies')}")
        for c in streams:
            c.close()
        for s_ in idle:
            s_.close()
        done.set()
        watcher.join()
        for mid, _, owner in matches:
            client.call("DELETE", f"/api/matches/{mid}", token=owner)
        client.call("DELETE", f"/api/matches/{endless}", token=endless_owner)
        time.sleep(3)
        settled = rss_kib(server.pid)
        _, status_now = client.call("GET", "/api/status")
        if answering["over_100ms"]:
            failures.append(f"{answering['over_100ms']} normal requests took over 100 ms (slowest {answering['slowest_ms']:.0f} ms)")
        if refused_streams.get(200, 0) > 12:
            failures.append(f"{refused_streams[200]} spectators' event streams were let in on one match (cap 12)")
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
            "memory_budget": args.budget, "peak_rss_mib": round(peak[0] / 1024, 1), "settled_rss_mib": round(settled / 1024, 1),
            "status_after": status_now, "endless_catan": endless_report, "event_streams": dict((str(k), v) for k, v in refused_streams.items()),
            "idle_connections": 100, "uploads_12mb": dict((str(k), v) for k, v in uploads.items()),
            "normal_request_checks": answering["checks"], "slowest_normal_request_ms": round(answering["slowest_ms"], 1),
            "normal_requests_over_100ms": answering["over_100ms"],
            "server_alive": server.poll() is None, "failures": failures,
        }
        return report_and_exit(report, args.json)
    finally:
        stop(server)
        shutil.rmtree(data, ignore_errors=True)


def record_plies(record):
    return len(record["actions"])


if __name__ == "__main__":
    sys.exit(main())
