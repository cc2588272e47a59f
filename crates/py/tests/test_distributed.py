"""The distributed arena on a local Ray instance: the same games and summary as one process,
a killed worker's batch replayed, resume, and bad input refused."""

import json
import sys

import pytest
import ray  # in requirements-test.txt: its absence is a failure, not a skip

import meeple
from meeple import _meeple, distributed


def counts(summary):
    agents = [(a["name"], a["wins"], a["draws"], a["losses"], a["elo"]) for a in summary["agents"]]
    pairs = [(p["a"], p["b"], p["wins"], p["draws"], p["losses"]) for p in summary["pairwise"]]
    return agents, pairs


def games_of(path):
    return [(r["index"], r["agents"], r["actions"]) for r in meeple.read_records(str(path))]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": ":".join(p for p in sys.path if p)}})
    yield
    ray.shutdown()


def test_two_workers_reproduce_one_process_with_a_worker_killed(tmp_path, local_ray):
    agents = ["mcts:iters=30", "random"]
    one = meeple.arena("connect4", agents, games=10, seed=3, threads=1, records=str(tmp_path / "one.jsonl"))
    marker = tmp_path / "killed"
    seen = []
    many = distributed.arena("connect4", agents, games=10, seed=3, batch=3, records=str(tmp_path / "many.jsonl"),
                             progress=lambda d, t: seen.append((d, t)), _kill_once=(str(marker), 7))
    assert marker.exists(), "the fault was not injected"
    assert counts(many) == counts(one)
    assert games_of(tmp_path / "many.jsonl") == games_of(tmp_path / "one.jsonl")
    assert [r["index"] for r in meeple.read_records(str(tmp_path / "many.jsonl"))] == list(range(10))
    assert seen[-1] == (10, 10)


def test_four_player_catan_matches_one_process(local_ray):
    agents = ["random", "random", "random", "random"]
    one = meeple.arena("catan:players=4", agents, games=24, seed=2, threads=1)
    many = distributed.arena("catan:players=4", agents, games=24, seed=2, batch=5)
    assert counts(many) == counts(one)


def test_resume_plays_only_the_missing_games(tmp_path, local_ray):
    agents = ["first", "random"]
    path = tmp_path / "r.jsonl"
    whole = distributed.arena("tictactoe", agents, games=12, seed=9, records=str(path))
    lines = path.read_text().splitlines(keepends=True)
    # Interrupted: the first nine games and half a line.
    path.write_text("".join(lines[:9]) + lines[9][:20])
    played = []
    resumed = distributed.arena("tictactoe", agents, games=12, seed=9, records=str(path), resume=True,
                                progress=lambda d, t: played.append(d))
    assert counts(resumed) == counts(whole)
    assert [r["index"] for r in meeple.read_records(str(path))] == list(range(12))
    assert played[0] > 9, "the kept games were played again"
    with pytest.raises(ValueError, match="resume"):
        distributed.arena("tictactoe", agents, games=12, seed=9, records=str(path))


def test_an_sprt_stops_where_one_process_stops(local_ray):
    agents = ["mcts:iters=300", "random"]
    one = meeple.arena("connect4", agents, games=400, seed=7, threads=1, sprt=(0, 50))
    many = distributed.arena("connect4", agents, games=400, seed=7, sprt=(0, 50))
    assert many["sprt"] == one["sprt"]
    assert counts(many) == counts(one)


def test_pieces_are_checked_when_merged():
    match = dict(games=4, seed=1)
    lines = _meeple.arena_games("tictactoe", ["first", "random"], [0, 1, 2], **match)
    state, missing = _meeple.arena_merge("tictactoe", ["first", "random"], lines, **match)
    assert (state, missing) == ("missing", [3])
    with pytest.raises(ValueError, match="twice"):
        _meeple.arena_merge("tictactoe", ["first", "random"], lines + lines[:1], **match)
    with pytest.raises(ValueError, match="seed"):
        _meeple.arena_merge("tictactoe", ["first", "random"], lines, games=4, seed=2)
    with pytest.raises(ValueError, match="beyond"):
        _meeple.arena_games("tictactoe", ["first", "random"], [4], **match)
    tampered = json.loads(lines[0])
    tampered["actions"] = tampered["actions"][:-1]
    with pytest.raises(ValueError):
        _meeple.arena_merge("tictactoe", ["first", "random"], [json.dumps(tampered)], **match)
    with pytest.raises(ValueError, match="workers"):
        distributed.arena("tictactoe", ["first", "random"], workers=0)


def test_the_command_line_writes_the_summary(tmp_path, local_ray, capsys):
    out = tmp_path / "s.json"
    assert distributed.main(["arena", "tictactoe", "first", "random", "--games", "4", "--seed", "1",
                             "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert counts(summary) == counts(meeple.arena("tictactoe", ["first", "random"], games=4, seed=1))
    assert "first" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        distributed.main(["arena", "tictactoe", "first", "random", "--json", str(out)])


def test_self_play_on_ray_feeds_the_trainer(tmp_path, local_ray, meeple_cli):
    if meeple_cli is None:
        pytest.skip("needs the meeple binary for the trainer")
    out = tmp_path / "run"
    played = []
    code = distributed.train_az(
        "tictactoe", str(out), games=4, meeple=meeple_cli, progress=lambda g, p, s: played.append((g, p)),
        train_args=["--steps", "3", "--games", "8", "--sims", "8", "--batch", "16", "--window", "64",
                    "--net", "resnet:blocks=1,channels=8", "--eval-every", "0", "--threads", "1"])
    assert code == 0
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    generations = [x for x in lines if x.get("event") == "generation"]
    assert generations and generations[-1]["steps"] >= 3, generations
    taken = json.loads((out / "external-taken.json").read_text())
    assert taken and all(name.endswith(".jsonl") for name in taken)
    # The trainer's own shard holds the games it took, each whole (it replayed every one).
    kept = (out / "selfplay" / "gen-000001.jsonl").read_text().splitlines()
    assert len(kept) >= 8
    assert sum(g for g, _ in played) >= 8
    # A player's batch for a run of another game is refused.
    with pytest.raises(ValueError, match="tictactoe"):
        _meeple.play_external("connect4", str(out), str(out / "incoming" / "x.jsonl"), 1, 0)
