"""Matches across processes and machines on Ray.

``python -m meeple.distributed arena GAME AGENT AGENT... --games N --seed S`` plays the match
``meeple arena`` would play, with the same options and the same summary, split into batches of
game indices that Ray tasks play through the Rust arena (``_meeple.arena_games``). Each game
depends only on the seed and its index, so the per-game results are those of one process for
any number of workers. Batches come back in any order; the records file is written in game
order through the arena's records module, and the summary is merged from the games themselves
(``_meeple.arena_merge`` checks each one, and a game can only be counted once). A batch whose
worker dies is retried by Ray; one that still fails stops the match with its error, and
``--resume`` goes on from the records file.

``python -m meeple.distributed train az GAME --workers N --out RUN [--minutes M] [-- TRAIN ARGS]``
runs AlphaZero with self-play on Ray: the trainer is ``meeple train az GAME --selfplay external
--shards RUN/incoming --out RUN`` (a process on this machine, with its metrics, ladder and
plots as a local run), and Ray tasks play batches of self-play games with the newest
checkpoint (``_meeple.play_external``) and move each batch whole into ``RUN/incoming``. A task
whose worker dies is replayed by Ray; the trainer takes a shard whole or not at all.

``--address`` joins a running Ray cluster (``ray start --head`` on one machine, ``ray start
--address HEAD:6379`` on the others); without it a local Ray instance is started with
``--workers`` CPUs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from . import _meeple

__all__ = ["arena", "train_az", "main"]


def _play_batch(game, agents, indices, match, kill_once=None):
    """A Ray task: the record lines of games ``indices``.

    ``kill_once`` is fault injection for tests: ``(marker, index)`` ends this worker's process
    before playing, once (the marker file records that it happened), when the batch holds
    game ``index``, so Ray's retry of a lost worker is exercised.
    """
    if kill_once is not None:
        marker, index = kill_once
        if index in indices and not os.path.exists(marker):
            with open(marker, "w") as f:
                f.write(f"killed the worker playing games {indices[0]}..{indices[-1]}\n")
            os._exit(1)
    return _meeple.arena_games(game, agents, indices, **match)


def _start_ray(workers, address) -> bool:
    """Starts Ray unless it runs already (a local instance with ``workers`` CPUs, or the
    cluster at ``address``); whether this call started it (and so should shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    if address is None:
        # Workers import meeple the way this process did.
        env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": env})
    else:
        ray.init(address=address, log_to_driver=False)
    return True


def _spec(game) -> str:
    if isinstance(game, _meeple.Game):
        return game.spec
    if isinstance(game, str):
        return _meeple.Game(game).spec
    raise TypeError("game: expected a meeple.Game or a game spec string like 'connect4'")


def _write_json(path: str, summary: dict, force: bool) -> None:
    """Writes the summary whole or not at all."""
    from .netfile import _write_atomic

    if os.path.exists(path) and not force:
        raise ValueError(f"'{path}' exists; pass --force to replace it")
    _write_atomic(path, (json.dumps(summary) + "\n").encode())


def arena(
    game,
    agents,
    games: int = 100,
    seed: int = 0,
    *,
    workers: int | None = None,
    batch: int | None = None,
    address: str | None = None,
    threads: int = 1,
    opening_plies: int = 0,
    move_time=None,
    sprt=None,
    records: str | None = None,
    resume: bool = False,
    force: bool = False,
    max_retries: int = 3,
    progress=None,
    _kill_once=None,
) -> dict:
    """Plays a match on Ray and returns the summary ``meeple.arena`` gives for the same match.

    ``workers``: CPUs of the local Ray instance started when none is running and no
    ``address`` is given (default: all). ``batch``: games per task (default: the match split
    into about four tasks per CPU, at most 64 games each). ``threads``: arena threads inside
    each task (each task asks Ray for that many CPUs). ``records``, ``resume``, ``force``,
    ``opening_plies``, ``move_time`` and ``sprt`` are ``meeple.arena``'s. ``max_retries``: how
    often Ray replays a batch whose worker died. ``progress(done, total)`` is called as batches
    finish.
    """
    import ray

    spec = _spec(game)
    agents = [str(a) for a in agents]
    if workers is not None and workers < 1:
        raise ValueError(f"workers={workers}: give at least 1")
    if batch is not None and batch < 1:
        raise ValueError(f"batch={batch}: give at least 1 game per task")
    if threads < 1:
        raise ValueError(f"threads={threads}: give at least 1")
    if max_retries < 0:
        raise ValueError(f"max_retries={max_retries}: give 0 or more")
    if resume and records is None:
        raise ValueError("resume=True needs records=PATH: the file of the match to go on with")
    if records is not None and os.path.exists(records) and not (resume or force):
        raise ValueError(f"records file '{records}' exists; pass resume=True to go on with it or force=True to replace it")
    match = dict(games=games, seed=seed, threads=threads, opening_plies=opening_plies, move_time=move_time, sprt=sprt)
    total = _meeple.arena_total(spec, agents, **match)

    started = _start_ray(workers, address)
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        size = batch or max(1, min(64, math.ceil(total / (4 * max(1, cpus // threads)))))
        task = ray.remote(num_cpus=threads, max_retries=max_retries, retry_exceptions=False)(_play_batch)

        done = _meeple.resume_records(records, total) if (records is not None and resume) else []
        writer = _meeple.RecordsWriter(records, done if resume else None) if records is not None else None
        try:
            while True:
                state, value = _meeple.arena_merge(spec, agents, done, **match)
                if state == "done":
                    summary = value
                    break
                wanted = value
                if sprt is not None:
                    # The next batches of the test, one wave for the whole cluster: games past
                    # the point where it decides are played but not counted.
                    have = set()
                    for line in done:
                        have.add(json.loads(line)["index"])
                    first = wanted[0]
                    wave = max(1, cpus // threads) * _meeple.SPRT_BATCH
                    wanted = [i for i in range(first, min(first + wave, games)) if i not in have]
                pending = {}
                for k in range(0, len(wanted), size):
                    piece = wanted[k:k + size]
                    pending[task.remote(spec, agents, piece, match, _kill_once)] = piece
                while pending:
                    ready, _ = ray.wait(list(pending), num_returns=1)
                    piece = pending.pop(ready[0])
                    try:
                        lines = ray.get(ready[0])
                    except ray.exceptions.RayError as e:
                        for ref in pending:
                            ray.cancel(ref)
                        raise RuntimeError(
                            f"games {piece[0]}..{piece[-1]} failed after {max_retries} retries "
                            f"(the records file keeps every finished game; resume=True goes on): {e}"
                        ) from e
                    if writer is not None:
                        writer.push(lines)
                    done.extend(lines)
                    if progress is not None:
                        progress(len(done), total)
        finally:
            if writer is not None:
                writer.close()
    finally:
        if started:
            ray.shutdown()
    return summary


def _play_external(game, run, out, games, seed, threads):
    """A Ray task: one batch of self-play games for an external run, written whole to ``out``."""
    return _meeple.play_external(game, run, out, games, seed, threads)


def _meeple_binary(path=None) -> str:
    import shutil

    for c in (path, os.environ.get("MEEPLE_BIN"), shutil.which("meeple")):
        if c and os.access(c, os.X_OK):
            return c
    raise ValueError("the meeple binary is needed for the trainer: put it on PATH, set MEEPLE_BIN or pass --meeple")


def train_az(
    game,
    out: str,
    *,
    workers: int | None = None,
    address: str | None = None,
    games: int = 16,
    seed: int = 1,
    threads: int = 1,
    train_args=(),
    resume: bool = False,
    meeple: str | None = None,
    max_retries: int = 3,
    progress=None,
    trainer: str = "rust",
    device: str = "cpu",
) -> int:
    """AlphaZero with self-play on Ray: starts ``meeple train az GAME --selfplay external`` for
    ``out`` (``train_args`` go to it: ``--minutes``, ``--steps``, ``--net``, ...) and keeps one
    self-play task per worker CPU busy until the trainer ends; returns its exit status.
    ``games``: games per task. ``progress(games, positions, seconds)`` sees each finished task.
    ``trainer="torch"``: meeple makes the run (its configuration and first checkpoint) and
    ``python -m meeple.torch external`` trains it on ``device`` (``cuda`` for a GPU), taking
    ``--minutes``/``--steps`` from ``train_args``."""
    import subprocess
    import time

    import ray

    spec = _spec(game)
    if games < 1:
        raise ValueError(f"games={games}: give at least 1 game per task")
    if trainer not in ("rust", "torch"):
        raise ValueError(f"trainer '{trainer}': rust or torch")
    binary = _meeple_binary(meeple)
    shards = os.path.join(out, "incoming")
    command = [binary, "train", "az", spec, "--selfplay", "external", "--shards", shards, "--out", out,
               "--seed", str(seed)]
    if trainer == "torch":
        # meeple makes the run and its first checkpoint, then stops; PyTorch trains it.
        limits, rest, args = [], [], list(train_args)
        while args:
            a = args.pop(0)
            key = a.split("=", 1)[0]
            if key in ("--minutes", "--steps"):
                limits += [key, a.split("=", 1)[1] if "=" in a else args.pop(0)]
            else:
                rest.append(a)
        if not limits:
            raise ValueError("trainer='torch' needs --minutes or --steps in train_args")
        if not resume:
            subprocess.run(command + rest + ["--minutes", "0.0001"], check=True)
        command = [sys.executable, "-m", "meeple.torch", "external", out, "--shards", shards, "--device", device,
                   "--seed", str(seed), *limits]
    else:
        command += list(train_args)
        if resume:
            command.append("--resume")
    trainer = subprocess.Popen(command)
    started = False
    try:
        # The trainer writes its configuration and a first checkpoint before it waits for games.
        last = os.path.join(out, "ckpt", "last.safetensors")
        while not (os.path.exists(last) and os.path.exists(os.path.join(out, "run.json"))):
            if trainer.poll() is not None:
                return trainer.returncode
            time.sleep(0.1)
        started = _start_ray(workers, address)
        slots = max(1, int(ray.cluster_resources().get("CPU", 1)) // threads)
        task = ray.remote(num_cpus=threads, max_retries=max_retries)(_play_external)
        tag = f"{os.getpid()}-{int(time.time())}"
        seq = 0
        pending = {}

        def submit():
            nonlocal seq
            seq += 1
            name = os.path.join(shards, f"{tag}-{seq:07d}.jsonl")
            pending[task.remote(spec, out, name, games, (seed << 32) + seq, threads)] = name

        for _ in range(slots):
            submit()
        while trainer.poll() is None:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:
                pending.pop(ref)
                try:
                    g, positions, seconds = ray.get(ref)
                    if progress is not None:
                        progress(g, positions, seconds)
                except ray.exceptions.RayError as e:
                    print(f"a self-play task failed after {max_retries} retries: {e}", file=sys.stderr)
                submit()
        for ref in pending:
            ray.cancel(ref, force=True)
        return trainer.returncode
    finally:
        if trainer.poll() is None:
            trainer.terminate()
            trainer.wait()
        if started:
            ray.shutdown()


def _print_summary(s: dict, out=None) -> None:
    out = out or sys.stdout
    print(f"{s['game']}: {s['games']} games, seed {s['seed']}", file=out)
    width = max(len(a["name"]) for a in s["agents"])
    print(f"{'agent':<{width}}  {'games':>6} {'wins':>6} {'draws':>6} {'losses':>6}  {'score':>6}  "
          f"{'95% interval':<18} {'Elo':>6}  ms/move", file=out)
    for a in s["agents"]:
        games = a["wins"] + a["draws"] + a["losses"]
        lo, hi = a["ci"]
        elo = "" if a.get("elo") is None else f"{a['elo']:6.0f}"
        print(f"{a['name']:<{width}}  {games:>6} {a['wins']:>6} {a['draws']:>6} {a['losses']:>6}  "
              f"{100 * a['score']:5.1f}%  [{100 * lo:5.1f}%, {100 * hi:5.1f}%]  {elo:>6}  "
              f"{a.get('mean_move_ms', 0.0):.3f}", file=out)
    if len(s.get("pairwise", [])) > 1:
        print("\npairwise (first agent's score):", file=out)
        for p in s["pairwise"]:
            print(f"  {p['a']} vs {p['b']}: +{p['wins']} ={p['draws']} -{p['losses']}  {100 * p['score']:.1f}% "
                  f"[{100 * p['ci'][0]:.1f}%, {100 * p['ci'][1]:.1f}%]", file=out)
    if s.get("sprt"):
        r = s["sprt"]
        print(f"\nSPRT elo0 {r['elo0']} elo1 {r['elo1']}: LLR {r['llr']:.2f} in [{r['lower']:.2f}, {r['upper']:.2f}]: "
              f"{r['decision']}", file=out)


def _sprt_arg(text: str):
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': expected ELO0,ELO1 or ELO0,ELO1,ALPHA,BETA") from None
    if len(values) not in (2, 4):
        raise argparse.ArgumentTypeError(f"'{text}': expected ELO0,ELO1 or ELO0,ELO1,ALPHA,BETA")
    return values


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m meeple.distributed",
        description="meeple's arena across processes and machines on Ray: the same options, games and summary as "
                    "`meeple arena`, the games split into batches that Ray tasks play.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("arena", help="play a match on Ray (as `meeple arena`)",
                       description="Play a match on Ray: the summary `meeple arena` gives for the same arguments.")
    a.add_argument("game", help="game spec, e.g. connect4")
    a.add_argument("agents", nargs="+", metavar="AGENT", help="agent specs: one per seat, or more for a round robin")
    a.add_argument("--games", type=int, default=100, help="seeds, each played in every seating (default 100)")
    a.add_argument("--seed", type=int, default=0, help="base seed of the match (default 0)")
    a.add_argument("--address", help="a running Ray cluster (default: start a local Ray instance)")
    a.add_argument("--workers", type=int, help="CPUs of the local Ray instance (default: all)")
    a.add_argument("--batch", type=int, help="games per Ray task (default: about four tasks per CPU, at most 64)")
    a.add_argument("--threads", type=int, default=1, help="arena threads inside each task (default 1)")
    a.add_argument("--opening-plies", type=int, default=0, help="uniformly random plies opening each game")
    a.add_argument("--move-time", help="time a move for agents that take one, like 100ms")
    a.add_argument("--sprt", type=_sprt_arg, metavar="ELO0,ELO1[,ALPHA,BETA]",
                   help="stop a two-agent match once the sequential test decides")
    a.add_argument("--json", metavar="FILE", help="write the summary as JSON (as `meeple arena --json`)")
    a.add_argument("--records", metavar="FILE", help="write every game, in game order (as `meeple arena --records`)")
    a.add_argument("--resume", action="store_true", help="go on with the match in --records, playing only missing games")
    a.add_argument("--force", action="store_true", help="replace existing --json and --records files")
    a.add_argument("--max-retries", type=int, default=3, help="replays of a batch whose worker died (default 3)")
    t = sub.add_parser("train", help="train AlphaZero with self-play on Ray",
                       description="AlphaZero with self-play on Ray: `meeple train az GAME --selfplay external` here, "
                                   "self-play tasks on the cluster. Arguments after -- go to `meeple train az`.")
    t.add_argument("kind", choices=["az"], help="the learner (az)")
    t.add_argument("game", help="game spec, e.g. connect4")
    t.add_argument("--out", required=True, help="the run directory")
    t.add_argument("--workers", type=int, help="CPUs of the local Ray instance (default: all)")
    t.add_argument("--address", help="a running Ray cluster (default: start a local Ray instance)")
    t.add_argument("--games", type=int, default=16, help="self-play games per task (default 16)")
    t.add_argument("--threads", type=int, default=1, help="threads of each self-play task (default 1)")
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--resume", action="store_true", help="go on with the run in --out")
    t.add_argument("--meeple", help="the meeple binary (default: MEEPLE_BIN, then PATH)")
    t.add_argument("--trainer", choices=["rust", "torch"], default="rust",
                   help="who trains: meeple (rust, default) or PyTorch (torch; needs torch)")
    t.add_argument("--device", default="cpu", help="with --trainer torch: cpu, cuda, cuda:1, ...")
    # Everything after -- goes to `meeple train az` untouched (argparse would read it as ours).
    argv = list(sys.argv[1:] if argv is None else argv)
    train_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    args = parser.parse_args(argv)

    if args.command == "train":
        try:
            return train_az(args.game, args.out, workers=args.workers, address=args.address, games=args.games,
                            seed=args.seed, threads=args.threads, train_args=train_args, resume=args.resume,
                            meeple=args.meeple, trainer=args.trainer, device=args.device)
        except (ValueError, TypeError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2

    if args.json and os.path.exists(args.json) and not args.force:
        parser.error(f"--json '{args.json}' exists; pass --force to replace it")
    tty = sys.stderr.isatty()

    def progress(done, total):
        if tty:
            print(f"\r{done}/{total} games", end="", file=sys.stderr, flush=True)

    try:
        summary = arena(
            args.game, args.agents, args.games, args.seed, workers=args.workers, batch=args.batch,
            address=args.address, threads=args.threads, opening_plies=args.opening_plies,
            move_time=args.move_time, sprt=args.sprt, records=args.records, resume=args.resume,
            force=args.force, max_retries=args.max_retries, progress=progress,
        )
    except (ValueError, TypeError, RuntimeError) as e:
        if tty:
            print(file=sys.stderr)
        print(f"error: {e}", file=sys.stderr)
        return 2
    if tty:
        print(file=sys.stderr)
    _print_summary(summary)
    if args.json:
        _write_json(args.json, summary, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
