"""meeple's networks in PyTorch (where torch is installed): the same outputs as meeple within
1e-4 in both directions, and a checkpoint trained by PyTorch from self-play shards loads in
meeple and plays. CI has no torch (a 5 GB install); the numpy round trip (test_netfile.py) runs
there."""

import json
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import meeple  # noqa: E402
from meeple import _meeple, netfile  # noqa: E402
from meeple import torch as mt  # noqa: E402

MODELS = ["connect4-az", "cathedral-az", "cathedral8-ppo", "catan-td", "santorini-value-cnn"]


def outputs_match(path, net, seed=0):
    _, sidecar = netfile.load(path)
    rng = np.random.default_rng(seed)
    obs = (rng.random((6, *sidecar["net"]["input"])) < 0.3).astype(np.float32)
    logits, values = _meeple.evaluate(path, obs)
    with torch.no_grad():
        tl, tv, _, _ = net(torch.from_numpy(obs))
    assert np.abs(tl.numpy() - logits).max() < 1e-4 * max(1.0, np.abs(logits).max())
    assert np.abs(tv.numpy() - values).max() < 1e-4


@pytest.mark.parametrize("model", MODELS)
def test_meeple_checkpoints_load_into_torch(repo_root, model):
    path = str(repo_root / "models" / f"{model}.safetensors")
    net, _ = mt.load(path)
    outputs_match(path, net)


def test_a_torch_network_saves_as_a_meeple_checkpoint(repo_root, tmp_path):
    _, sidecar = netfile.load(str(repo_root / "models" / "connect4-az.safetensors"))
    torch.manual_seed(3)
    net = mt.Net(sidecar["net"])
    # Statistics away from their initial values, as after training.
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 1.5)
    net.eval()
    path = str(tmp_path / "fresh.safetensors")
    mt.save(path, net, sidecar)
    outputs_match(path, net)


def small_run(tmp_path, meeple_cli, steps):
    """A tiny `meeple train az connect4` run: its directory and its self-play shards."""
    if meeple_cli is None:
        pytest.skip("needs the meeple binary to make self-play shards")
    run = tmp_path / "run"
    subprocess.run([meeple_cli, "train", "az", "connect4", "--net", "resnet:blocks=1,channels=8", "--steps", str(steps),
                    "--games", "8", "--sims", "8", "--batch", "16", "--eval-every", "0", "--out", str(run),
                    "--threads", "1"], check=True, capture_output=True)
    return run, sorted(str(p) for p in (run / "selfplay").glob("gen-*.jsonl"))


def test_training_from_shards_makes_a_checkpoint_meeple_plays(tmp_path, meeple_cli):
    run, shards = small_run(tmp_path, meeple_cli, steps=2)
    assert shards
    out = tmp_path / "torch.safetensors"
    mt.main(["train", str(run / "ckpt" / "last.safetensors"), "--shards", *shards, "--out", str(out),
             "--steps", "5", "--batch", "32"])
    net, sidecar = mt.load(str(out))
    outputs_match(str(out), net)
    assert sidecar["run"]["torch"]["steps"] == 5
    game = meeple.Game("connect4")
    agent = meeple.Agent(f"az:model={out},sims=8", game)
    assert agent.act(game.new_initial_state()) in game.new_initial_state().legal_actions()


def test_the_loss_is_meeples(tmp_path, meeple_cli):
    """On a batch from shards, the PyTorch loss equals the one meeple's trainer reports."""
    run, shards = small_run(tmp_path, meeple_cli, steps=1)
    path = str(run / "ckpt" / "last.safetensors")
    net, sidecar = mt.load(path)
    batch = _meeple.shard_batch("connect4", shards, json.dumps(sidecar["net"]), 64, 1, 0.5)
    net.train()
    _, (policy, value, _, _) = mt.loss(net, batch)
    want = _meeple.shard_loss(path, batch)
    assert abs(policy - want["policy"]) < 1e-4 and abs(value - want["value"]) < 1e-4


def test_pytorch_trains_an_external_self_play_run_on_ray(tmp_path, meeple_cli):
    if meeple_cli is None:
        pytest.skip("needs the meeple binary to make the run")
    import ray

    from meeple import distributed

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": ":".join(p for p in __import__("sys").path if p)}})
    try:
        out = tmp_path / "run"
        code = distributed.train_az(
            "tictactoe", str(out), games=4, meeple=meeple_cli, trainer="torch",
            train_args=["--steps", "6", "--games", "8", "--net", "resnet:blocks=1,channels=8", "--eval-every", "0",
                        "--threads", "1"])
    finally:
        ray.shutdown()
    assert code == 0
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    generations = [x for x in lines if x.get("event") == "generation" and x.get("trainer") == "az-torch"]
    assert generations and generations[-1]["steps"] >= 6
    model = out / "ckpt" / "last.safetensors"
    net, sidecar = mt.load(str(model))
    outputs_match(str(model), net)
    assert sidecar["run"]["trainer"] == "az-torch"
    game = meeple.Game("tictactoe")
    assert meeple.Agent(f"az:model={model},sims=8", game).act(game.new_initial_state()) is not None


def test_an_external_trainer_takes_the_runs_settings_and_keeps_its_optimiser(tmp_path, meeple_cli):
    if meeple_cli is None:
        pytest.skip("needs the meeple binary to make the run")
    out, shards = tmp_path / "run", tmp_path / "incoming"
    subprocess.run([meeple_cli, "train", "az", "tictactoe", "--selfplay", "external", "--shards", str(shards),
                    "--out", str(out), "--net", "mlp:layers=1,width=8", "--lr", "0.001", "--batch", "16",
                    "--games-per-generation", "4", "--eval-every", "0", "--threads", "1", "--minutes", "0.0001"],
                   check=True)
    with pytest.raises(ValueError, match="made with --lr 0.001"):
        mt.run_external(str(out), str(shards), steps=1, lr=0.01)
    with pytest.raises(ValueError, match="made with --batch 16"):
        mt.run_external(str(out), str(shards), steps=1, batch=64)
    # A generation of shards: the trainer takes it, trains at the run's settings, keeps AdamW.
    _meeple.play_external("tictactoe", str(out), str(shards / "a.jsonl"), 4, 0, 1)
    mt.run_external(str(out), str(shards), steps=1)
    kept = out / "ckpt" / "last.torch-adamw.pt"
    assert kept.is_file()
    state = torch.load(kept)
    assert state["param_groups"][0]["lr"] == 0.001 and state["state"], state["param_groups"]
