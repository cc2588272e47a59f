"""meeple's network files outside Rust: the numpy forward pass gives meeple's outputs for every
trunk and head, and a checkpoint written from Python loads in meeple and plays (both directions
of the round trip, within 1e-4)."""

import json
import os
import subprocess

import numpy as np
import pytest

import meeple
from meeple import _meeple, netfile

TOLERANCE = 1e-4


def observations(net, batch, seed):
    rng = np.random.default_rng(seed)
    # 0/1 planes as the games write them, with some other values for the dense nets.
    return (rng.random((batch, *net["input"])) < 0.3).astype(np.float32) + 0.1 * rng.standard_normal(
        (batch, *net["input"])).astype(np.float32)


def check(path, seed=0):
    params, sidecar = netfile.load(path)
    obs = observations(sidecar["net"], 5, seed)
    logits, values = _meeple.evaluate(path, obs)
    mine_logits, mine_values = netfile.forward(params, sidecar["net"], obs)
    assert logits.shape == mine_logits.shape and values.shape == mine_values.shape
    assert np.abs(logits - mine_logits).max() < TOLERANCE * max(1.0, np.abs(logits).max())
    assert np.abs(values - mine_values).max() < TOLERANCE
    return params, sidecar, obs


@pytest.mark.parametrize("model", ["connect4-az", "cathedral-az", "cathedral8-ppo", "catan-td", "santorini-value-cnn"])
def test_numpy_forward_equals_meeple(repo_root, model):
    check(str(repo_root / "models" / f"{model}.safetensors"))


def test_the_plane_head(tmp_path, meeple_cli):
    if meeple_cli is None:
        pytest.skip("needs the meeple binary to train a plane-head network")
    out = tmp_path / "planes"
    subprocess.run([meeple_cli, "train", "az", "cathedral:size=8", "--net", "resnet:blocks=1,channels=8,head=planes",
                    "--steps", "1", "--games", "2", "--sims", "4", "--batch", "8", "--eval-every", "0",
                    "--out", str(out), "--threads", "1"], check=True, capture_output=True)
    check(str(out / "ckpt" / "last.safetensors"))


def test_a_checkpoint_written_in_python_loads_and_plays(repo_root, tmp_path):
    params, sidecar, obs = check(str(repo_root / "models" / "connect4-az.safetensors"))
    rng = np.random.default_rng(1)
    moved = {k: v + 0.05 * rng.standard_normal(v.shape).astype(np.float32) for k, v in params.items()}
    moved = {k: (np.abs(v) + 0.5 if k.endswith("running_var") else v) for k, v in moved.items()}
    path = str(tmp_path / "moved.safetensors")
    netfile.save(path, moved, sidecar)
    logits, values = _meeple.evaluate(path, obs)
    mine_logits, mine_values = netfile.forward(moved, sidecar["net"], obs)
    assert np.abs(logits - mine_logits).max() < TOLERANCE * max(1.0, np.abs(logits).max())
    assert np.abs(values - mine_values).max() < TOLERANCE
    assert np.abs(values - _meeple.evaluate(str(repo_root / "models" / "connect4-az.safetensors"), obs)[1]).max() > 1e-3
    game = meeple.Game("connect4")
    agent = meeple.Agent(f"az:model={path},sims=8", game)
    assert agent.act(game.new_initial_state()) in game.new_initial_state().legal_actions()


def test_bad_files_are_refused(tmp_path, repo_root):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\xff" * 16)
    with pytest.raises(ValueError, match="not a safetensors file"):
        netfile.read_safetensors(str(bad))
    params, sidecar = netfile.load(str(repo_root / "models" / "connect4-az.safetensors"))
    del params["value_out.bias"]
    path = str(tmp_path / "short.safetensors")
    netfile.save(path, params, sidecar)
    with pytest.raises(ValueError):
        _meeple.evaluate(path, np.zeros((1, 3, 6, 7), np.float32))
    with pytest.raises(ValueError, match="whole number"):
        _meeple.evaluate(str(repo_root / "models" / "connect4-az.safetensors"), np.zeros(5, np.float32))


def test_shard_batches_refuse_a_network_of_another_game():
    net = {"trunk": {"kind": "mlp", "layers": 1, "width": 8}, "input": [100000, 1000, 1000], "actions": 9, "seats": 2}
    with pytest.raises(ValueError, match="tictactoe"):
        _meeple.shard_batch("tictactoe", [], json.dumps(net), 8, 0, 0.5)


def test_shard_batches_take_the_short_term_value_target(tmp_path, meeple_cli):
    """value_lambda 1 makes the search's share of the value target the result, as value_mix 1
    does; an out-of-range weight is refused by name."""
    if meeple_cli is None:
        pytest.skip("needs the meeple binary to make self-play shards")
    run = tmp_path / "run"
    subprocess.run([meeple_cli, "train", "az", "tictactoe", "--net", "resnet:blocks=1,channels=8", "--steps", "1",
                    "--games", "8", "--sims", "8", "--batch", "16", "--eval-every", "0", "--out", str(run),
                    "--threads", "1"], check=True, capture_output=True)
    shards = sorted(str(p) for p in (run / "selfplay").glob("gen-*.jsonl"))
    _, sidecar = netfile.load(str(run / "ckpt" / "last.safetensors"))
    net = json.dumps(sidecar["net"])
    result = _meeple.shard_batch("tictactoe", shards, net, 64, 1, 1.0)["value"]
    short = _meeple.shard_batch("tictactoe", shards, net, 64, 1, 0.0, value_lambda=1.0)["value"]
    own = _meeple.shard_batch("tictactoe", shards, net, 64, 1, 0.0)["value"]
    assert np.array_equal(result, short)
    assert not np.array_equal(result, own)
    with pytest.raises(ValueError, match="value lambda"):
        _meeple.shard_batch("tictactoe", shards, net, 64, 1, 0.5, value_lambda=1.5)
    with pytest.raises(ValueError, match="no score margin"):
        _meeple.shard_batch("tictactoe", shards, net, 64, 1, 0.5, value_score=0.5)


def test_shard_batches_carry_the_score_margin_target(tmp_path, meeple_cli):
    """A network with the score head gets each position's final margin (the mover's lead over
    the game's scale, -1 to 1) beside its value, and meeple's loss on it."""
    if meeple_cli is None:
        pytest.skip("needs the meeple binary to make self-play shards")
    run = tmp_path / "run"
    game = "cathedral:size=8"
    subprocess.run([meeple_cli, "train", "az", game, "--net", "resnet:blocks=1,channels=8,score=true", "--steps", "1",
                    "--games", "8", "--sims", "4", "--batch", "16", "--eval-every", "0", "--out", str(run),
                    "--threads", "1"], check=True, capture_output=True)
    shards = sorted(str(p) for p in (run / "selfplay").glob("gen-*.jsonl"))
    path = str(run / "ckpt" / "last.safetensors")
    _, sidecar = netfile.load(path)
    assert sidecar["net"]["score"] is True
    # value_mix 1: the value target is the result, so it says who won each position's game.
    batch = _meeple.shard_batch(game, shards, json.dumps(sidecar["net"]), 64, 1, 1.0)
    score, weight, result = batch["score"], batch["score_weight"], batch["value"][:, 0]
    assert score.shape == (64,) and np.all(np.abs(score) <= 1.0) and np.all(weight == 1.0)
    # Fewer squares left in hand wins: a winning mover leads, a losing one trails, a draw is level.
    assert np.all(score[result == 1.0] > 0.0) and np.all(score[result == 0.0] < 0.0)
    assert np.all(score[result == 0.5] == 0.0)
    assert len(np.unique(score)) > 2, "the margin says by how much, not only who won"
    losses = _meeple.shard_loss(path, batch)
    assert losses["score"] > 0.0
    # value_score 1 (`--value-score`): the value target is the margin's value, 0.5 + 0.5 x margin.
    on_margin = _meeple.shard_batch(game, shards, json.dumps(sidecar["net"]), 64, 1, 1.0, value_score=1.0)
    assert np.allclose(on_margin["value"][:, 0], 0.5 + 0.5 * score, atol=1e-6)
    with pytest.raises(ValueError, match="value score"):
        _meeple.shard_batch(game, shards, json.dumps(sidecar["net"]), 64, 1, 1.0, value_score=1.5)
