"""What the long forms of the hostile suite (load.py, stranger.py) share: a `meeple serve`
process on a free loopback port, a client that can speak from any loopback address, and the
server's resident memory. Standard library only."""

import http.client
import json
import os
import subprocess


class Client:
    """Requests to the server from `source` (any 127.x address), with `headers` on each."""

    def __init__(self, port, source="127.0.0.1", headers=None):
        self.port, self.source, self.headers = port, source, headers or {}

    def call(self, method, path, body=None, raw=None, timeout=60, token=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout, source_address=(self.source, 0))
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        sent = dict(self.headers)
        if data is not None:
            sent["Content-Type"] = "application/json"
        if token:
            sent["X-Meeple-Token"] = token
        sent.update(headers or {})
        try:
            conn.request(method, path, body=data, headers=sent)
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
    """The process's resident memory (KiB), 0 if it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def start(meeple, data, *options):
    """`meeple serve --port 0 --data-dir DATA OPTIONS...`; gives the process and its port once it
    listens."""
    server = subprocess.Popen([meeple, "serve", "--port", "0", "--data-dir", data, *options],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    while line and "http://" not in line:
        line = server.stdout.readline()
    if "http://" not in line:
        raise SystemExit(f"the server did not start: {line} {server.stderr.read()}")
    return server, int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def stop(server):
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()


def budget_mib(text):
    """A `--memory-budget` value (`200mb`, `1gb`) in MiB."""
    units = {"gb": 1024, "mb": 1}
    unit = text[-2:].lower()
    if unit not in units or not text[:-2].isdigit():
        raise SystemExit(f"budget '{text}': give a whole number of mb or gb (200mb, 1gb)")
    return int(text[:-2]) * units[unit]


def report_and_exit(report, path=None):
    """Prints the report, writes it whole to `path` (the old file stays until the new one is
    complete), and gives the exit status: 0 if nothing failed and the server lived."""
    print(json.dumps(report, indent=1))
    if path:
        with open(path + ".tmp", "w") as f:
            json.dump(report, f, indent=1)
        os.replace(path + ".tmp", path)
    return 0 if not report["failures"] and report["server_alive"] else 1
