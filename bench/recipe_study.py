"""The AlphaZero recipe, one change at a time: each variant trained for the same wall time and
seed as the default, then its network against the default's at equal time a move.

Each run goes to OUT/NAME (a finished run is kept, so an interrupted study resumes where it
stopped: rerun the same command); each match to OUT/NAME-vs-default.json (`meeple arena
--json`; its games in NAME-vs-default-records.jsonl, from which an interrupted match resumes);
the table, with the arena's Wilson intervals, to OUT/study.json and as Markdown on stdout.
Variants are `name=extra training options`, for example:

    cargo build --release
    python3 bench/recipe_study.py connect4 --minutes 20 --out runs/study \\
        "lambda=--value-lambda 0.5" "warmup=--value-mix-warmup 30" \\
        "forced=--root puct --forced-playouts 2" "sims128=--sims 128" \\
        "wide=--net resnet:blocks=4,channels=48" "reuse8=--reuse 8"

Every run gets `--minutes M --seed S --threads T` and the `--base` options (the recipe under
study, default none); the match is `az:model=...,time=MS` for both sides, `--games` paired
games. One run per variant and seed: a score is evidence about that run, and a second seed
(`--seed`) says how much of it is the seed.

`--jobs J` trains J runs side by side (give each `--threads` cores / J): runs that share the
machine share its disturbances too, so equal minutes stay equal work. The matches then use
`--match-threads` (default: threads x jobs).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys


def variant(text: str) -> tuple[str, list[str]]:
    name, sep, options = text.partition("=")
    if not sep or not name or not name.replace("-", "").replace("_", "").isalnum() or name == "default":
        raise argparse.ArgumentTypeError(
            f"variant '{text}': give NAME=OPTIONS with a name of letters, digits, - and _ (not 'default')")
    return name, shlex.split(options)


def start(cmd: list[str], log: str) -> tuple[subprocess.Popen, str]:
    print("+", " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
    with open(log, "a") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT), log


def finish(job: tuple[subprocess.Popen, str]) -> None:
    proc, log = job
    if proc.wait() != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(proc.args)}; its output is in {log}")


def run(cmd: list[str], log: str) -> None:
    finish(start(cmd, log))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("game", help="game spec, e.g. connect4")
    p.add_argument("variants", nargs="+", type=variant, help="NAME=OPTIONS, each one change to the recipe")
    p.add_argument("--minutes", type=float, required=True, help="training minutes of every run")
    p.add_argument("--base", default="", help="options every run shares (the recipe under study)")
    p.add_argument("--default", default="", dest="default_options",
                   help="options of the default run alone, where the recipe under study sets an option the variants "
                        "change (e.g. --net with the ownership head, beside a variant that adds the score head)")
    p.add_argument("--out", required=True, help="study directory")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2, help="threads of each training run")
    p.add_argument("--jobs", type=int, default=1, help="training runs side by side")
    p.add_argument("--match-threads", type=int, help="threads of each match (default: threads x jobs)")
    p.add_argument("--games", type=int, default=200, help="paired games a match (even)")
    p.add_argument("--ms", type=int, default=200, help="time a move of both sides in the matches")
    p.add_argument("--opening-plies", type=int, default=2)
    p.add_argument("--meeple", default="target/release/meeple", help="the meeple binary")
    a = p.parse_args(argv)
    if not (0 < a.minutes <= 24 * 60):
        p.error(f"--minutes {a.minutes}: give more than 0 and at most a day")
    if a.threads < 1 or a.jobs < 1 or (a.match_threads is not None and a.match_threads < 1):
        p.error("--threads, --jobs and --match-threads: give at least 1")
    if a.games < 2 or a.games % 2:
        p.error(f"--games {a.games}: give an even number of at least 2")
    names = [n for n, _ in a.variants]
    if len(set(names)) != len(names):
        p.error(f"variant names repeat: {names}")
    os.makedirs(a.out, exist_ok=True)
    log = os.path.join(a.out, "study.log")
    base = shlex.split(a.base)

    def model(name: str) -> str:
        return os.path.join(a.out, name, "ckpt", "last.safetensors")

    todo = [(n, x) for n, x in [("default", shlex.split(a.default_options))] + a.variants
            if not (os.path.exists(model(n)) and os.path.exists(os.path.join(a.out, n, "finished")))]
    for first in range(0, len(todo), a.jobs):
        jobs = []
        for name, extra in todo[first:first + a.jobs]:
            resume = ["--resume"] if os.path.exists(os.path.join(a.out, name, "run.json")) else []
            cmd = [a.meeple, "train", "az", a.game, *base, *extra, "--minutes", str(a.minutes), "--seed",
                   str(a.seed), "--threads", str(a.threads), "--out", os.path.join(a.out, name), *resume]
            jobs.append((name, start(cmd, os.path.join(a.out, f"{name}.log"))))
        try:
            for name, job in jobs:
                finish(job)
                open(os.path.join(a.out, name, "finished"), "w").close()
        finally:
            # a failed or interrupted run stops its neighbours too, so that rerunning resumes them all
            for _, (proc, _) in jobs:
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait()
    match_threads = a.match_threads or a.threads * a.jobs

    rows = []
    for name, extra in a.variants:
        result = os.path.join(a.out, f"{name}-vs-default.json")
        mine, theirs = f"az:model={model(name)},time={a.ms}ms", f"az:model={model('default')},time={a.ms}ms"
        records = os.path.join(a.out, f"{name}-vs-default-records.jsonl")
        if not os.path.exists(result):
            # an interrupted match keeps its finished games in the records and plays only the rest
            resume = ["--resume"] if os.path.exists(records) else []
            run([a.meeple, "arena", a.game, mine, theirs, "--games", str(a.games), "--opening-plies",
                 str(a.opening_plies), "--seed", str(a.seed), "--threads", str(match_threads), "--json", result,
                 "--records", records, *resume], log)
        with open(result) as f:
            table = json.load(f)
        agents = {x["spec"]: x for x in table["agents"]}
        me, them = agents[mine], agents[theirs]
        low, high = me["ci95"]
        rows.append({"variant": name, "options": extra, "games": table["games"], "score": me["score"],
                     "low": low, "high": high, "ms_per_move": [me["mean_move_ms"], them["mean_move_ms"]]})
    study = {"game": a.game, "minutes": a.minutes, "seed": a.seed, "threads": a.threads, "jobs": a.jobs,
             "base": base, "default": shlex.split(a.default_options), "ms": a.ms, "rows": rows}
    tmp = os.path.join(a.out, "study.json.tmp")
    with open(tmp, "w") as f:
        json.dump(study, f, indent=1)
    os.replace(tmp, os.path.join(a.out, "study.json"))
    print(f"| change ({a.game}, {a.minutes:g} min a run, seed {a.seed}) | against the default at {a.ms} ms a move "
          "| ms a move (change / default) |")
    print("|---|---|---|")
    for r in rows:
        mine_ms, theirs_ms = r["ms_per_move"]
        print(f"| `{' '.join(r['options'])}` | {100 * r['score']:.1f}% [{100 * r['low']:.1f}, {100 * r['high']:.1f}]"
              f" over {r['games']} games | {mine_ms:.0f} / {theirs_ms:.0f} |")


if __name__ == "__main__":
    main()
