"""Training speed of meeple's networks in PyTorch (``meeple.torch``), on a CPU or a GPU.

One AdamW step of ``meeple.torch.loss`` (the loss meeple's trainer computes) on batches in the
format ``_meeple.shard_batch`` gives, timed after a warm-up, for each network and batch size;
the batch is copied from host memory every step, as in a real run. With ``--shards`` it also
times ``_meeple.shard_batch`` itself (the Rust side that draws training batches from self-play
shards), which feeds a GPU trainer from one CPU thread.

    python crates/py/bench/torch_speed.py --device cuda --json torch-gpu.json \\
        --model models/connect4-az.safetensors --model models/cathedral-az.safetensors

Networks: each ``--model`` checkpoint as shipped, and ``--net GAME_CHECKPOINT:KIND:BLOCKS:CHANNELS``
rows that reuse a checkpoint's game and shapes with another tower (e.g. a 10 x 128 tower, the
size a GPU makes affordable), from fresh weights.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time

import numpy as np
import torch

from meeple import netfile
from meeple import torch as mt


def synthetic(spec: dict, batch: int, rng: np.random.Generator) -> dict:
    size = int(np.prod(spec["input"]))
    actions, seats = spec["actions"], spec["seats"]
    legal = (rng.random((batch, actions)) < 0.5).astype(np.float32)
    legal[:, 0] = 1.0
    policy = legal / legal.sum(axis=1, keepdims=True)
    out = {
        "obs": rng.random((batch, size), dtype=np.float32),
        "legal": legal,
        "policy": policy.astype(np.float32),
        "policy_weight": np.ones(batch, np.float32),
        "value": rng.random((batch, seats), dtype=np.float32),
    }
    if spec.get("ownership") and spec["trunk"]["kind"] == "resnet":
        cells = spec["input"][1] * spec["input"][2]
        out["ownership"] = rng.uniform(-1, 1, (batch, cells)).astype(np.float32)
        out["ownership_weight"] = np.ones(batch, np.float32)
    return out


def time_steps(net, batch: dict, steps: int, device: str, amp: bool) -> float:
    """Samples per second over ``steps`` AdamW steps after 3 warm-up steps."""
    net.train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=1e-4)

    def step():
        with torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=torch.bfloat16,
                            enabled=amp):
            total, _ = mt.loss(net, batch, device=device)
        opt.zero_grad()
        total.backward()
        opt.step()

    for _ in range(3):
        step()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return steps * len(batch["obs"]) / (time.perf_counter() - start)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--model", action="append", default=[], help="a meeple checkpoint (its network as shipped)")
    p.add_argument("--net", action="append", default=[], help="CHECKPOINT:resnet:BLOCKS:CHANNELS, fresh weights")
    p.add_argument("--batch", type=int, action="append", help="batch sizes (default 256, 1024, 4096)")
    p.add_argument("--seconds", type=float, default=3.0, help="about this long per row")
    p.add_argument("--threads", type=int, help="torch CPU threads")
    p.add_argument("--amp", action="store_true", help="also time bfloat16 autocast rows")
    p.add_argument("--shards", nargs="*", default=[], help="self-play shards: also time _meeple.shard_batch")
    p.add_argument("--json", help="write the rows here")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    batches = a.batch or [256, 1024, 4096]
    rng = np.random.default_rng(0)
    nets = []
    for path in a.model:
        net, sidecar = mt.load(path, a.device)
        nets.append((path, sidecar, net))
    for row in a.net:
        path, kind, blocks, channels = row.rsplit(":", 3)
        _, sidecar = netfile.load(path)
        spec = dict(sidecar["net"], trunk={"kind": kind, "blocks": int(blocks), "channels": int(channels)})
        nets.append((f"{path} as {kind}:blocks={blocks},channels={channels}", dict(sidecar, net=spec),
                     mt.Net(spec).to(a.device)))
    rows = []
    for name, sidecar, net in nets:
        params = sum(t.numel() for t in net.parameters())
        for b in batches:
            for amp in ([False, True] if a.amp else [False]):
                batch = synthetic(sidecar["net"], b, rng)
                # A short probe sizes the timed run to about --seconds.
                probe = time_steps(net, batch, 2, a.device, amp)
                steps = max(3, int(a.seconds * probe / b))
                sps = time_steps(net, batch, steps, a.device, amp)
                row = {"net": name, "game": sidecar["game"], "trunk": sidecar["net"]["trunk"], "parameters": params,
                       "batch": b, "precision": "bf16 autocast" if amp else "fp32", "steps": steps,
                       "samples_per_sec": round(sps)}
                rows.append(row)
                print(f"{name:60s} batch {b:5d} {row['precision']:14s} {sps:10.0f} samples/s", flush=True)
        if a.shards:
            from meeple import _meeple

            spec = json.dumps(sidecar["net"])
            for b in batches:
                _meeple.shard_batch(sidecar["game"], a.shards, spec, b, 0, 0.5)
                start, n = time.perf_counter(), 0
                while time.perf_counter() - start < a.seconds:
                    _meeple.shard_batch(sidecar["game"], a.shards, spec, b, n + 1, 0.5)
                    n += 1
                rate = n * b / (time.perf_counter() - start)
                rows.append({"net": name, "game": sidecar["game"], "batch": b, "shard_batch_samples_per_sec": round(rate)})
                print(f"{name:60s} batch {b:5d} shard_batch    {rate:10.0f} samples/s (one CPU thread)", flush=True)
    info = {"what": "meeple.torch training step (AdamW on meeple.torch.loss, batch copied from host each step)",
            "device": a.device, "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0) if a.device.startswith("cuda") else None,
            "threads": torch.get_num_threads(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(info, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
