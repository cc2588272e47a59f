#!/usr/bin/env python3
"""A person at a shared table while a stranger floods the server, on the loopback only.

    python3 crates/web/tests/stranger.py [--meeple target/release/meeple] [--moves 40] [--json FILE]

Starts `meeple serve` (a fresh data directory holding 300 long finished games, a memory budget,
`--client-header X-Forwarded-For`) and measures how long a person waits for the answer of a fast
opponent (`mcts:iters=200`, connect four), first alone, then while a stranger, from 127.0.0.2 to
127.0.0.9 and forging X-Forwarded-For (not believed: only 127.0.0.1, the proxy, is trusted),
floods it at once with:

  - agent-only matches at 5 s a move (as many as it is let create),
  - and from two more clients on the network (192.0.2.10 and .11 through the proxy), matches
    whose person seat nobody holds (its invitation never claimed) against agents thinking 60 s a
    move, as many as each is let create: a seat named human lends them no priority, since nobody
    is at that table,
  - analyses of 10 s, two at a time, over and over,
  - 16 event streams on the person's match (its id is public),
  - 200 idle sockets,
  - 24 uploads declaring 16 MiB, sent a byte at a time, and 12 MB uploads,
  - /api/games asked for by 8 threads in a loop.

The person comes through the proxy (127.0.0.1 with X-Forwarded-For: 198.51.100.7), as a person
on the network would. Reports the person's median and worst time to the opponent's answer,
alone and under the flood, what the stranger was let have, and the server's peak resident memory
against its budget. Exits non-zero if the worst wait under the flood is over 500 ms or memory
passes the budget. Uses the standard library only.
"""

import argparse
import http.client
import json
import os
import shutil
import socket
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter

from serving import Client, budget_mib, report_and_exit, rss_kib, start, stop

PERSON = {"X-Forwarded-For": "198.51.100.7"}


def start_server(meeple, data, budget):
    return start(meeple, data, "--memory-budget", budget, "--max-agent-memory", "16mb",
                 "--client-header", "X-Forwarded-For", "--thinkers", "2")


def seed_games(path, n=300, plies=20_000):
    """Long finished games, as a busy server keeps them."""
    db = sqlite3.connect(path)
    actions = ["a1"] * plies
    with db:
        for k in range(n):
            record = json.dumps({"game": "tictactoe", "seed": k, "agents": ["a", "b"], "actions": actions,
                                 "returns": [1.0, -1.0], "scores": [1.0, 0.0]})
            db.execute("INSERT INTO matches (id, game, setup, status, created, updated, record) VALUES (?, 'tictactoe', '{}', 'over', ?, ?, ?)",
                       (f"{k:032x}", k, k, record))
    db.close()


def person_plays(client, moves, stop_at=None):
    """The person plays connect four against mcts:iters=200; gives each wait (ms) from sending a
    move to seeing the opponent's answer."""
    waits = []
    while len(waits) < moves and (stop_at is None or time.time() < stop_at):
        status, made = client.call("POST", "/api/matches", {"game": "connect4", "seats": ["human", "mcts:iters=200"]})
        if status != 201:
            raise SystemExit(f"the person could not start a game: {status} {made}")
        mid, token = made["id"], made["seats"][0]["token"]
        snap = made["snapshot"]
        while len(waits) < moves and snap["result"] is None:
            column = snap["legal"][len(waits) % len(snap["legal"])]["text"]
            ply = snap["ply"]
            t = time.time()
            status, after = client.call("POST", f"/api/matches/{mid}/moves", {"ply": ply, "action": column}, token=token)
            if status != 200:
                raise SystemExit(f"the person's move was refused: {status} {after}")
            while True:
                status, snap = client.call("GET", f"/api/matches/{mid}", token=token)
                if snap["result"] is not None or (snap["ply"] >= ply + 2 and snap["legal"]):
                    break
                time.sleep(0.002)
            waits.append((time.time() - t) * 1e3)
        client.call("DELETE", f"/api/matches/{mid}", token=made["owner"])
    return waits


def summary(waits):
    return {"moves": len(waits), "median_ms": round(statistics.median(waits), 1), "worst_ms": round(max(waits), 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meeple", default="target/release/meeple")
    ap.add_argument("--moves", type=int, default=40, help="moves the person makes, alone and under the flood")
    ap.add_argument("--budget", default="1gb", help="the server's --memory-budget")
    ap.add_argument("--json", help="also write the report here")
    args = ap.parse_args()
    budget_mib(args.budget)  # a wrong budget is refused before the server starts

    data = tempfile.mkdtemp(prefix="meeple-stranger-")
    server, port = start_server(args.meeple, data, args.budget)
    stop(server)
    seed_games(os.path.join(data, "meeple-web.sqlite"))
    server, port = start_server(args.meeple, data, args.budget)
    person = Client(port, "127.0.0.1", PERSON)
    strangers = [Client(port, f"127.0.0.{k}", {"X-Forwarded-For": f"203.0.113.{k}"}) for k in range(2, 10)]
    report, failures = {}, []
    done = threading.Event()
    peak = [rss_kib(server.pid)]
    try:
        report["alone"] = summary(person_plays(person, args.moves))

        counts = Counter()
        lock = threading.Lock()

        def note(kind, status):
            with lock:
                counts[f"{kind} {status}"] += 1

        # Agent-only matches at 5 s a move, as many as it is let have.
        stranger_matches = []
        for k in range(40):
            s = strangers[k % len(strangers)]
            status, made = s.call("POST", "/api/matches", {"game": "connect4", "seats": ["mcts", "mcts"], "move_time_ms": 5000, "delay_ms": 0})
            note("agent-only match", status)
            if status == 201:
                stranger_matches.append(made["id"])
        # Two more clients on the network (through the proxy, as the person): a person seat
        # nobody holds, agents at 60 s a move.
        unheld = [Client(port, "127.0.0.1", {"X-Forwarded-For": f"192.0.2.{k}"}) for k in (10, 11)]
        for k in range(24):
            status, made = unheld[k % 2].call("POST", "/api/matches", {
                "game": "connect4", "seats": ["mcts:time=60s", "human"], "play": [], "move_time_ms": 60000})
            note("unheld person seat, 60-s agent", status)
        status, own = strangers[0].call("POST", "/api/matches", {"game": "connect4", "seats": ["human", "random"]})
        note("stranger's own match", status)

        def analyses():
            if status != 201:
                return
            while not done.is_set():
                s = strangers[1]
                try:
                    code, _ = s.call("POST", f"/api/matches/{own['id']}/analysis", {"agent": "mcts", "time_ms": 10000},
                                     token=own["seats"][0]["token"], timeout=60)
                except OSError:
                    code = "closed"
                note("analysis", code)

        def lists():
            s = strangers[2]
            while not done.is_set():
                try:
                    code, _ = s.call("GET", "/api/games")
                except OSError:
                    code = "closed"
                note("/api/games", code)

        def held_upload(s):
            sock = socket.create_connection(("127.0.0.1", port), source_address=(s.source, 0))
            sock.sendall(b"POST /api/replays?index=0 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-ndjson\r\n"
                         b"Content-Length: 16777216\r\n\r\n{")
            sock.settimeout(0.5)
            try:
                answer = sock.recv(64)
                note("held 16 MiB upload", answer.split(b" ")[1].decode() if answer else "closed at once")
                sock.close()
            except ConnectionResetError:
                note("held 16 MiB upload", "closed at once")
            except socket.timeout:
                note("held 16 MiB upload", "reading")
                while not done.is_set():
                    try:
                        sock.sendall(b" ")
                    except OSError:
                        break
                    time.sleep(1)
                sock.close()

        line = json.dumps({"game": "tictactoe", "seed": 0, "agents": ["a", "b"], "actions": ["a1", "b1", "a2", "b2", "a3"], "scores": [1, 0]})
        big = ("\n".join([line] * (12_000_000 // (len(line) + 1))) + "\n").encode()

        def uploads():
            s = strangers[3]
            while not done.is_set():
                try:
                    code, body = s.call("POST", "/api/replays?index=0", raw=big, headers={"Content-Type": "application/x-ndjson"}, timeout=60)
                except OSError:
                    code = "closed"
                note("12 MB upload", code)
                if code == 201:
                    s.call("DELETE", f"/api/matches/{body['id']}", token=body["owner"])

        status, made = person.call("POST", "/api/matches", {"game": "connect4", "seats": ["human", "mcts:iters=200"]})
        watched = made["id"]
        # The stranger's connections go to work first (its share of connections is what it has
        # to spend), then to streams on the person's match, held uploads and idle sockets.
        side = [threading.Thread(target=analyses, daemon=True) for _ in range(2)]
        side += [threading.Thread(target=uploads, daemon=True)]
        side += [threading.Thread(target=lists, daemon=True) for _ in range(8)]
        for t in side:
            t.start()
        time.sleep(0.5)
        streams = []
        for k in range(16):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(strangers[k % 8].source, 0))
            try:
                conn.request("GET", f"/api/matches/{watched}/events?viewer=spectator")
                res = conn.getresponse()
                note("stream on the person's match", res.status)
                if res.status == 200:
                    streams.append(conn)
                else:
                    conn.close()
            except OSError:
                note("stream on the person's match", "closed at once")
                conn.close()
        held_uploads = [threading.Thread(target=held_upload, args=(strangers[k % 8],), daemon=True) for k in range(24)]
        for t in held_uploads:
            t.start()
        time.sleep(1)
        idle = []
        for k in range(200):
            try:
                idle.append(socket.create_connection(("127.0.0.1", port), source_address=(strangers[k % 8].source, 0)))
            except OSError:
                note("idle socket", "refused")
        time.sleep(0.3)
        # A connection the server closed at once was refused (beyond the client's share).
        held = 0
        for s_ in idle:
            s_.setblocking(False)
            try:
                closed = s_.recv(1) == b""
            except BlockingIOError:
                closed = False
            except OSError:
                closed = True
            if not closed:
                held += 1
        counts["idle sockets held"] = held
        counts["idle sockets closed at once"] = len(idle) - held

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], rss_kib(server.pid))
                time.sleep(0.05)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        time.sleep(2)
        _, during = person.call("GET", "/api/status")
        # The person's own stream on the match the stranger watches.
        t = person.call("POST", f"/api/matches/{watched}/ticket", {}, token=made["seats"][0]["token"])[1]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", f"/api/matches/{watched}/events?viewer=0&ticket={t['ticket']}", headers=PERSON)
        own_stream = conn.getresponse().status
        conn.close()
        flooded = person_plays(person, args.moves, stop_at=time.time() + 600)
        report["flooded"] = summary(flooded)
        report["person_stream_on_the_watched_match"] = own_stream
        report["status_during"] = during
        done.set()
        for c in streams:
            c.close()
        for s_ in idle:
            s_.close()
        report["stranger"] = dict(sorted(counts.items()))
        report["stranger_matches"] = len(stranger_matches)
        report["peak_rss_mib"] = round(peak[0] / 1024, 1)
        report["memory_budget"] = args.budget
        budget = budget_mib(args.budget)
        if report["flooded"]["worst_ms"] > 500:
            failures.append(f"the person waited {report['flooded']['worst_ms']} ms for an answer under the flood")
        if own_stream != 200:
            failures.append(f"the person's own stream was refused ({own_stream})")
        if peak[0] / 1024 > budget:
            failures.append(f"resident memory {peak[0] / 1024:.0f} MiB passed the budget {args.budget}")
        report["failures"] = failures
        report["server_alive"] = server.poll() is None
        return report_and_exit(report, args.json)
    finally:
        done.set()
        stop(server)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
