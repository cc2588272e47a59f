"""meeple.train: every trainer of `meeple train` from Python, with the same run directory,
resume and checks."""

import json

import pytest

import meeple


def read_run(out):
    return json.loads((out / "run.json").read_text())


def metrics(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_two_learners_train_and_one_resumes(tmp_path):
    seen = []
    out = tmp_path / "td"
    reached = meeple.train(
        "td", "tictactoe", str(out), games=4, net="mlp:layers=1,width=16", parallel=2,
        progress=lambda games, steps, seconds, figures: seen.append((games, figures)),
    )
    assert reached["episodes"] >= 4
    run = read_run(out)
    assert run["trainer"] == "td" and run["settings"]["net"] == "mlp:layers=1,width=16"
    assert (out / run["last"]).is_file()
    assert seen and "value" in seen[-1][1], seen
    lines = metrics(out)
    assert any(line["trained"] and line["losses"] for line in lines), lines
    # Resumed: further on in the same directory; other settings are refused by name.
    again = meeple.train("td", "tictactoe", str(out), games=8, resume=True, extend=True, net="mlp:layers=1,width=16", parallel=2)
    assert again["episodes"] >= 8 and len(metrics(out)) > len(lines)
    with pytest.raises(ValueError, match="--net"):
        meeple.train("td", "tictactoe", str(out), games=12, resume=True, parallel=2)
    # A second learner, the linear bootstrap, the same layout.
    strap = tmp_path / "tdleaf"
    meeple.train("tdleaf", "santorini", str(strap), games=2, depth=1, opening_plies=2)
    assert read_run(strap)["trainer"] == "tdleaf" and (strap / "ckpt" / "last.txt").is_file()
    # Several random starts and the round robin that picks one, as `--starts` does.
    starts = tmp_path / "starts"
    meeple.train("treestrap", "santorini", str(starts), games=2, depth=1, zero_sum=True, lr=1e-6, starts=2,
                 select_games=2, seed=4)
    assert (starts / "chosen.txt").is_file() and (starts / "select.json").is_file()
    assert all((starts / f"start{k}" / "ckpt" / "last.txt").is_file() for k in (1, 2))


def test_alphazero_trains_through_the_same_loop(tmp_path):
    out = tmp_path / "az"
    meeple.train("az", "tictactoe", str(out), steps=4, net="mlp:layers=1,width=16", batch=32,
                 games_per_generation=8, min_window=16, eval_every=0)
    run = read_run(out)
    assert run["trainer"] == "az" and run["progress"]["steps"] >= 4, run
    assert (out / "ckpt" / "last.safetensors").is_file() and (out / "selfplay").is_dir()
    with pytest.raises(ValueError, match="unknown setting 'sim'"):
        meeple.train("az", "tictactoe", str(tmp_path / "x"), steps=1, sim=3)


def test_wrong_settings_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown setting 'nonsense'; accepted: .*lambda"):
        meeple.train("td", "tictactoe", str(tmp_path / "a"), games=1, nonsense=1)
    with pytest.raises(ValueError, match="unknown trainer 'az2'"):
        meeple.train("az2", "tictactoe", str(tmp_path / "b"), games=1)
    with pytest.raises(ValueError, match="TreeStrap setting"):
        meeple.train("rootstrap", "santorini", str(tmp_path / "c"), games=1, min_depth=2)
    with pytest.raises(ValueError, match="holds a run already"):
        meeple.train("tdleaf", "santorini", str(tmp_path / "d"), games=1, depth=1)
        meeple.train("tdleaf", "santorini", str(tmp_path / "d"), games=1, depth=1)
