"""meeple's networks in PyTorch, for training them on a GPU while meeple searches on CPUs.

``Net(sidecar["net"])`` builds the network a checkpoint's sidecar describes (residual tower,
MLP or residual MLP; dense or plane policy head; ownership and score-margin heads; BatchNorm with its running
statistics) with meeple-nn's layer names, so ``load(path)`` reads a meeple checkpoint into it and
``save(path, net, sidecar)`` writes one that meeple loads (``az:model=PATH``): the two give the
same outputs within 1e-4 on the same inputs (``crates/py/tests/test_torch.py``).

``loss(net, batch)`` is meeple's training loss (the policy's cross-entropy over the legal
actions, weighted per position; the squared error of each seat's value; the ownership head's
squared error per cell where the target is known; the score margin's squared error), on the
arrays ``meeple._meeple.shard_batch`` draws from self-play shards, and ``python -m meeple.torch
train`` trains a checkpoint from a run's shards with AdamW on any device PyTorch has.

Needs ``torch`` (not a dependency of the package: ``pip install torch``); ``meeple.netfile`` does
the same reading and writing with numpy alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch
from torch import nn

from . import netfile

__all__ = ["Net", "load", "save", "loss", "train", "run_external", "main"]


class ConvBn(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, padding=k // 2, bias=False)
        self.norm = nn.BatchNorm2d(cout, eps=netfile.EPSILON, momentum=0.1)

    def forward(self, x):
        return self.norm(self.conv(x))


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.first = ConvBn(channels, channels, 3)
        self.second = ConvBn(channels, channels, 3)

    def forward(self, x):
        return torch.relu(x + self.second(torch.relu(self.first(x))))


class Net(nn.Module):
    """The network a sidecar's ``"net"`` describes; ``forward`` gives logits, values (sigmoid,
    mover first), the ownership head's tanh and the score-margin head's (each ``None`` where the
    network lacks it)."""

    def __init__(self, net: dict):
        super().__init__()
        self.spec = net
        trunk = net["trunk"]
        self.kind = trunk["kind"]
        actions, seats = net["actions"], net["seats"]
        head = net.get("head", {"kind": "dense"})
        if self.kind == "resnet":
            planes, rows, cols = net["input"]
            c = trunk["channels"]
            pf, vf = net.get("policy_filters", 2), net.get("value_filters", 1)
            self.stem = ConvBn(planes, c, 3)
            self.blocks = nn.ModuleList([Block(c) for _ in range(trunk["blocks"])])
            self.value_conv = ConvBn(c, vf, 1)
            if head.get("kind") == "planes":
                # The plane head: a 1x1 block keeping the tower's channels, then a 3x3
                # convolution to one plane per action kind, read at each action's cell.
                index = head["index"]
                index = [int(i) for i in index.split()] if isinstance(index, str) else index
                self.policy_conv = ConvBn(c, c, 1)
                self.policy_planes = nn.Conv2d(c, head["planes"], 3, padding=1)
                self.register_buffer("index", torch.tensor(index, dtype=torch.long), persistent=False)
            else:
                self.policy_conv = ConvBn(c, pf, 1)
                self.policy_fc = nn.Linear(pf * rows * cols, actions)
            self.ownership = nn.Conv2d(c, 1, 1) if net.get("ownership") else None
            value_in = vf * rows * cols
        else:
            size = int(np.prod(net["input"]))
            width = trunk["width"]
            layers = trunk["layers"] if self.kind == "mlp" else 1 + 2 * trunk["blocks"]
            self.mlp = nn.ModuleList(
                [nn.Linear(size if i == 0 else width, width) for i in range(layers)])
            self.policy_fc = nn.Linear(width, actions)
            self.ownership = None
            value_in = width
        self.value_fc = nn.Linear(value_in, 64)
        self.value_out = nn.Linear(64, seats)
        self.score = nn.Linear(64, 1) if net.get("score") else None

    def forward(self, obs):
        batch = obs.shape[0]
        own = None
        if self.kind == "resnet":
            x = torch.relu(self.stem(obs.reshape(batch, *self.spec["input"])))
            for b in self.blocks:
                x = b(x)
            if self.ownership is not None:
                own = torch.tanh(self.ownership(x)).reshape(batch, -1)
            p = torch.relu(self.policy_conv(x))
            v = torch.relu(self.value_conv(x))
            if hasattr(self, "policy_planes"):
                logits = self.policy_planes(p).reshape(batch, -1)[:, self.index]
            else:
                logits = self.policy_fc(p.reshape(batch, -1))
            value_in = v.reshape(batch, -1)
        elif self.kind == "resmlp":
            x = torch.relu(self.mlp[0](obs.reshape(batch, -1)))
            for i in range(1, len(self.mlp), 2):
                x = torch.relu(x + self.mlp[i + 1](torch.relu(self.mlp[i](x))))
            logits, value_in = self.policy_fc(x), x
        else:
            x = obs.reshape(batch, -1)
            for layer in self.mlp:
                x = torch.relu(layer(x))
            logits, value_in = self.policy_fc(x), x
        hidden = torch.relu(self.value_fc(value_in))
        values = torch.sigmoid(self.value_out(hidden))
        score = torch.tanh(self.score(hidden))[:, 0] if self.score is not None else None
        return logits, values, own, score


def _names(net: Net):
    """(meeple name, tensor, transpose) for every parameter and BatchNorm statistic."""
    out = []
    for name, t in list(net.named_parameters()) + list(net.named_buffers()):
        if name == "index" or name.endswith("num_batches_tracked"):
            continue
        parts = name.split(".")
        leaf = parts[-1]
        # PyTorch's BatchNorm names against burn's.
        leaf = {"weight": "gamma", "bias": "beta"}.get(leaf, leaf) if ".norm." in f".{name}" else leaf
        meeple = ".".join(parts[:-1] + [leaf])
        linear = isinstance(net.get_submodule(".".join(parts[:-1])), nn.Linear) and leaf == "weight"
        out.append((meeple, t, linear))
    return out


def from_params(params: dict, net_spec: dict) -> Net:
    """A ``Net`` holding meeple's tensors (``meeple.netfile.load``'s ``params``)."""
    net = Net(net_spec)
    seen = set()
    with torch.no_grad():
        for meeple, t, linear in _names(net):
            if meeple not in params:
                raise ValueError(f"the checkpoint has no tensor '{meeple}' for a {net_spec['trunk']['kind']} network")
            a = torch.from_numpy(np.asarray(params[meeple], dtype=np.float32))
            a = a.t() if linear else a
            if tuple(a.shape) != tuple(t.shape):
                raise ValueError(f"tensor '{meeple}': shape {list(a.shape)} where the network has {list(t.shape)}")
            t.copy_(a)
            seen.add(meeple)
    extra = set(params) - seen
    if extra:
        raise ValueError(f"the checkpoint has tensors this network lacks: {sorted(extra)[:5]}")
    return net


def to_params(net: Net) -> dict:
    """meeple's tensors of a ``Net`` (numpy, meeple's names and layouts)."""
    out = {}
    for meeple, t, linear in _names(net):
        a = t.detach().to("cpu", torch.float32)
        out[meeple] = (a.t() if linear else a).contiguous().numpy()
    return out


def load(path: str, device="cpu"):
    """``(net, sidecar)``: a meeple checkpoint as a ``Net`` in evaluation mode."""
    params, sidecar = netfile.load(path)
    net = from_params(params, sidecar["net"]).to(device)
    net.eval()
    return net, sidecar


def save(path: str, net: Net, sidecar: dict) -> None:
    """Writes a checkpoint meeple loads (weights, then the sidecar beside them)."""
    netfile.save(path, to_params(net), sidecar)


def loss(net: Net, batch: dict, value_weight: float = 1.0, ownership_weight: float = 0.5, device="cpu",
         score_weight: float = 0.5):
    """meeple's training loss on a batch (the dict ``_meeple.shard_batch`` returns); returns the
    total and its parts (policy, value, ownership, score) as floats. The weights default to
    meeple's (``TrainConfig``: 1, 0.5 and 0.5)."""
    t = {k: torch.as_tensor(v, device=device) for k, v in batch.items() if isinstance(v, np.ndarray)}
    logits, values, own, score = net(t["obs"])
    legal = t["legal"] > 0
    masked = logits.masked_fill(~legal, float("-inf"))
    logp = torch.log_softmax(masked, dim=1).masked_fill(~legal, 0.0)
    w = t["policy_weight"]
    policy = -(w[:, None] * t["policy"] * logp).sum() / w.sum().clamp(min=1.0)
    value = ((values - t["value"]) ** 2).sum(dim=1).mean()
    total = policy + value_weight * value
    owned = torch.zeros((), device=device)
    if own is not None and "ownership" in t and t["ownership"].numel():
        ow = t["ownership_weight"]
        owned = (ow[:, None] * (own - t["ownership"]) ** 2).sum() / (ow.sum().clamp(min=1.0) * own.shape[1])
        total = total + ownership_weight * owned
    margin = torch.zeros((), device=device)
    if score is not None and "score" in t and t["score"].numel():
        sw = t["score_weight"]
        margin = (sw * (score - t["score"]) ** 2).sum() / sw.sum().clamp(min=1.0)
        total = total + score_weight * margin
    return total, (policy.item(), value.item(), owned.item(), margin.item())


def train(net: Net, batches, steps: int, lr: float = 2e-3, weight_decay: float = 1e-4, value_weight: float = 1.0,
          ownership_weight: float = 0.5, device="cpu", log=None):
    """``steps`` AdamW steps on batches from the callable ``batches(step)``; returns samples/s."""
    net.train()
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    samples, start = 0, time.perf_counter()
    for step in range(steps):
        batch = batches(step)
        total, parts = loss(net, batch, value_weight, ownership_weight, device)
        opt.zero_grad()
        total.backward()
        opt.step()
        samples += len(batch["obs"])
        if log is not None:
            log(step, parts)
    if device != "cpu":
        torch.cuda.synchronize()
    net.eval()
    return samples / (time.perf_counter() - start)


def _metrics_line(f, line: dict) -> None:
    f.write(json.dumps(line) + "\n")
    f.flush()


def run_external(run: str, shards: str, *, device="cpu", minutes=None, steps=None, reuse=None, batch=None, lr=None,
                 window=None, eval_every=0, opponents=("random", "mcts:iters=100"), eval_games=20, seed=0,
                 log=None) -> dict:
    """The trainer of an external self-play run, in PyTorch: the Rust trainer's protocol (whole
    shard files moved into ``shards`` by players, taken in name order and remembered in
    ``external-taken.json``; ``ckpt/last.safetensors`` published after every generation) with
    PyTorch doing the training steps on ``device``. The run directory must hold ``run.json``
    and a first checkpoint (``meeple train az GAME --selfplay external --shards DIR --out RUN
    --minutes 0`` makes them). The run's settings are its own: ``reuse``, ``batch``, ``lr`` and
    ``window`` default to ``run.json``'s (its ``--reuse``, ``--batch``, ``--lr``, ``--window``),
    and one given otherwise is refused (a run trains as it was made). AdamW's state is kept
    beside the checkpoint (``ckpt/last.torch-adamw.pt``), so a stopped run goes on with its
    moments. Metrics go to ``metrics.jsonl`` in meeple's schema, so ``meeple plot`` draws them;
    ``eval_every`` generations, the checkpoint plays ``opponents`` in the arena. Stops after
    ``minutes`` or ``steps``; returns the progress."""
    import os

    from . import _meeple, arena

    with open(os.path.join(run, "run.json")) as f:
        config = json.load(f)
    # The run layout keeps the trainer's settings under "settings" (older runs: at the top).
    config = config.get("settings", config)
    train_settings = config.get("train") or {}
    made = {"reuse": float(config.get("reuse", 4.0)), "batch": int(config.get("batch", 256)),
            "lr": float(train_settings.get("lr", 2e-3)), "window": int(config.get("window", 100_000))}
    given = {"reuse": reuse, "batch": batch, "lr": lr, "window": window}
    for key, value in given.items():
        if value is not None and value != made[key]:
            raise ValueError(f"{key}={value}: the run in '{run}' was made with --{key} {made[key]}, and an external "
                             f"trainer trains it as made (leave {key} out, or start a run with it)")
    reuse, batch, lr, window = made["reuse"], made["batch"], made["lr"], made["window"]
    weight_decay = float(train_settings.get("weight_decay", 1e-4))
    game = config["game"]
    per_generation = int(config.get("games_per_generation", 128))
    value_mix = float(config.get("value_mix", 0.5))
    value_lambda = float(config.get("value_lambda", 0.0))
    value_mix_warmup = int(config.get("value_mix_warmup", 0))
    value_score = float(config.get("value_score", 0.0))
    last = os.path.join(run, "ckpt", "last.safetensors")
    net, sidecar = load(last, device)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    opt_path = os.path.join(run, "ckpt", "last.torch-adamw.pt")
    if os.path.exists(opt_path):
        opt.load_state_dict(torch.load(opt_path, map_location=device))
    taken_path = os.path.join(run, "external-taken.json")
    taken = set(json.load(open(taken_path))) if os.path.exists(taken_path) else set()
    progress = dict(sidecar.get("run", {}).get("progress") or {})
    progress = {k: progress.get(k, 0) for k in ("generation", "games", "positions", "steps", "seconds")}
    start, base = time.perf_counter(), float(progress["seconds"])
    window_files = sorted(os.path.join(shards, n) for n in taken)
    metrics = open(os.path.join(run, "metrics.jsonl"), "a")

    def over():
        return (minutes is not None and base + time.perf_counter() - start >= 60 * minutes) or (
            steps is not None and progress["steps"] >= steps)

    while not over():
        fresh, games, positions = [], 0, 0
        waited = time.perf_counter()
        while games < per_generation and not over():
            for name in sorted(n for n in os.listdir(shards) if n.endswith(".jsonl") and n not in taken):
                with open(os.path.join(shards, name)) as f:
                    lines = [json.loads(x) for x in f if x.strip()]
                games += len(lines)
                positions += sum(len(g["positions"]) for g in lines)
                fresh.append(name)
                taken.add(name)
            if games < per_generation:
                time.sleep(0.2)
        if not fresh:
            break
        selfplay_seconds = time.perf_counter() - waited
        window_files += [os.path.join(shards, n) for n in fresh]
        # The newest files up to the window's positions (a file's positions from its games).
        kept, total = [], 0
        for path in reversed(window_files):
            kept.append(path)
            with open(path) as f:
                total += sum(len(json.loads(x)["positions"]) for x in f if x.strip())
            if total >= window:
                break
        window_files = list(reversed(kept))
        n_steps = max(1, round(positions * reuse / batch))
        t0 = time.perf_counter()
        # --value-mix-warmup: the mix of this generation, for the whole window (the Rust trainer
        # gives each generation's games their own; the window is mostly the newest games).
        mix = value_mix * min(1.0, (progress["generation"] + 1) / value_mix_warmup) if value_mix_warmup else value_mix
        data = _meeple.shard_batch(game, window_files, json.dumps(sidecar["net"]), n_steps * batch,
                                   seed + progress["generation"] + 1, mix, value_lambda, value_score)
        net.train()
        sums = [0.0, 0.0, 0.0, 0.0]
        for k in range(n_steps):
            part = {key: v[k * batch:(k + 1) * batch] for key, v in data.items()}
            total_loss, parts = loss(net, part, device=device)
            opt.zero_grad()
            total_loss.backward()
            opt.step()
            sums = [a + b for a, b in zip(sums, parts)]
        net.eval()
        train_seconds = time.perf_counter() - t0
        progress["generation"] += 1
        progress["games"] += games
        progress["positions"] += positions
        progress["steps"] += n_steps
        progress["seconds"] = base + time.perf_counter() - start
        sidecar = dict(sidecar, step=progress["steps"])
        sidecar["run"] = dict(sidecar.get("run") or {}, progress=dict(progress), trainer="az-torch",
                              torch={"device": str(device), "lr": lr, "batch": batch, "reuse": reuse})
        save(last, net.to("cpu"), sidecar)
        net.to(device)
        # The moments with the weights they belong to (a cut write leaves the old file whole).
        torch.save(opt.state_dict(), opt_path + ".part")
        os.replace(opt_path + ".part", opt_path)
        netfile._write_atomic(taken_path, json.dumps(sorted(taken)).encode())
        line = {"schema": 1, "event": "generation", "trainer": "az-torch", "generation": progress["generation"],
                "steps": progress["steps"], "games": progress["games"], "positions": progress["positions"],
                "wall_seconds": progress["seconds"], "trained": True,
                "losses": {"policy": sums[0] / n_steps, "value": sums[1] / n_steps},
                "figures": {"games": games},
                "stats": {"samples_per_second": n_steps * batch / max(train_seconds, 1e-9),
                          "selfplay_seconds": selfplay_seconds, "train_seconds": train_seconds}}
        _metrics_line(metrics, line)
        if log is not None:
            log(line)
        if eval_every and progress["generation"] % eval_every == 0:
            kept_path = os.path.join(run, "ckpt", f"gen-{progress['generation']:06d}.safetensors")
            save(kept_path, net.to("cpu"), sidecar)
            net.to(device)
            agent = f"az:model={kept_path},sims=64"
            rungs = []
            for o in opponents:
                s = arena(game, [agent, o], games=eval_games, seed=seed + progress["generation"], opening_plies=2)
                a = s["agents"][0]
                rungs.append({"opponent": o, "score": a["score"], "ci": a["ci"], "wins": a["wins"],
                              "draws": a["draws"], "losses": a["losses"]})
            _metrics_line(metrics, {"schema": 1, "event": "evaluation", "trainer": "az-torch",
                                    "generation": progress["generation"], "steps": progress["steps"],
                                    "wall_seconds": base + time.perf_counter() - start,
                                    "evaluation": {"agent": agent, "opponents": rungs, "anchor": opponents[0],
                                                   "games": eval_games, "opening_plies": 2}})
    metrics.close()
    return progress


def main(argv=None) -> int:
    from . import _meeple

    p = argparse.ArgumentParser(prog="python -m meeple.torch",
                                description="Train a meeple network in PyTorch from a run's self-play shards.")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train a checkpoint from self-play shards and write one meeple loads")
    t.add_argument("init", help="the checkpoint to start from (its sidecar names the game and the network)")
    t.add_argument("--shards", nargs="+", required=True, help="self-play shard files (RUN/selfplay/gen-*.jsonl)")
    t.add_argument("--out", required=True, help="the checkpoint to write (.safetensors; its sidecar beside it)")
    t.add_argument("--steps", type=int, default=100)
    t.add_argument("--batch", type=int, default=256)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--value-mix", type=float, default=0.5,
                   help="the game result's share of the value targets; the rest is the search's root value")
    t.add_argument("--value-lambda", type=float, default=0.0,
                   help="make that root value a short-term one (meeple train az --value-lambda): 0 the position's "
                        "own, 1 the result")
    t.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    t.add_argument("--seed", type=int, default=0)
    e = sub.add_parser("external", help="train an external self-play run (meeple train az --selfplay external's "
                                         "protocol) in PyTorch")
    e.add_argument("run", help="the run directory (run.json and ckpt/last.safetensors)")
    e.add_argument("--shards", required=True, help="where the players move their shards")
    e.add_argument("--device", default="cpu")
    e.add_argument("--minutes", type=float)
    e.add_argument("--steps", type=int)
    e.add_argument("--reuse", type=float, help="times each new position is trained on, on average (default: the "
                                               "run's --reuse; another is refused)")
    e.add_argument("--batch", type=int, help="positions a step (default: the run's --batch; another is refused)")
    e.add_argument("--lr", type=float, help="AdamW's rate (default: the run's --lr; another is refused)")
    e.add_argument("--eval-every", type=int, default=0, help="generations between evaluations (0: none)")
    e.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    torch.manual_seed(a.seed)
    if a.command == "external":
        if a.minutes is None and a.steps is None:
            p.error("give --minutes or --steps: when the run stops")
        done = run_external(a.run, a.shards, device=a.device, minutes=a.minutes, steps=a.steps, reuse=a.reuse,
                            batch=a.batch, lr=a.lr, eval_every=a.eval_every, seed=a.seed,
                            log=lambda line: print(f"generation {line['generation']}: {line['steps']} steps, "
                                                   f"{line['stats']['samples_per_second']:.0f} samples/s",
                                                   file=sys.stderr))
        print(json.dumps(done))
        return 0
    net, sidecar = load(a.init, a.device)
    game = sidecar["game"]

    # shard_batch reads the shards on every call, which costs more than a GPU's training step
    # (measured on an H200: 9,900 samples/s drawn a batch of 1,024 at a time, 100,000 trained),
    # so batches are drawn about 16,384 samples at a time.
    chunk, drawn = max(1, 16384 // a.batch), {}

    def batches(step):
        k = step % chunk
        if k == 0:
            n = min(chunk, a.steps - step)
            drawn["data"] = _meeple.shard_batch(game, a.shards, json.dumps(sidecar["net"]), n * a.batch, a.seed + step,
                                                a.value_mix, a.value_lambda)
        return {key: v[k * a.batch:(k + 1) * a.batch] for key, v in drawn["data"].items()}

    def log(step, parts):
        if step % 10 == 0 or step == a.steps - 1:
            print(f"step {step}: policy {parts[0]:.4f} value {parts[1]:.4f} ownership {parts[2]:.4f}", file=sys.stderr)

    speed = train(net, batches, a.steps, lr=a.lr, device=a.device, log=log)
    sidecar = dict(sidecar, step=int(sidecar.get("step", 0)) + a.steps)
    sidecar["run"] = dict(sidecar.get("run") or {}, torch={"steps": a.steps, "batch": a.batch, "lr": a.lr,
                                                          "device": a.device, "samples_per_second": speed})
    save(a.out, net.to("cpu"), sidecar)
    print(f"{a.steps} steps at {speed:.0f} samples/s on {a.device}; wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
