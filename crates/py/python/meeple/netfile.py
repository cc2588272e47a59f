"""meeple's network files in numpy: read and write a checkpoint, and run its forward pass.

A checkpoint is a safetensors file (float32 tensors named as meeple-nn names them) and a JSON
sidecar beside it (``NAME.json``: the network's shape under ``"net"``, the game, the step, the
run). ``load(path)`` gives ``(params, sidecar)``; ``forward(params, sidecar["net"], obs)`` gives
the logits and values meeple's agents compute (BatchNorm on its running statistics), and
``save(path, params, sidecar)`` writes a checkpoint meeple loads (``az:model=PATH``). Nothing
here needs more than numpy; ``meeple.torch`` builds the same network in PyTorch.

Layouts: a convolution's weight is ``[out, in, k, k]`` (padding ``k // 2``, no bias before a
BatchNorm); a dense layer's weight is ``[in, out]``; BatchNorm has ``gamma``, ``beta``,
``running_mean`` and ``running_var`` (epsilon 1e-5). Values are a sigmoid per seat, the mover's
first; a tower flattens its head planes plane by plane (``[batch, planes * rows * cols]``).
"""

from __future__ import annotations

import json
import os
import struct
import tempfile

import numpy as np

__all__ = ["load", "save", "forward", "read_safetensors", "write_safetensors", "EPSILON"]

EPSILON = 1e-5
# A header larger than this is not a meeple checkpoint (theirs are a few kilobytes).
_MAX_HEADER = 16 << 20


def sidecar_path(path: str) -> str:
    return os.path.splitext(path)[0] + ".json"


def read_safetensors(path: str) -> dict:
    """The float32 tensors of a safetensors file, by name."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"'{path}' is not a safetensors file: {len(raw)} bytes")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > min(_MAX_HEADER, len(raw) - 8):
        raise ValueError(f"'{path}' is not a safetensors file: a header of {n} bytes")
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t.get("dtype") != "F32":
            raise ValueError(f"'{path}': tensor '{name}' is {t.get('dtype')}; meeple's networks are F32")
        start, end = t["data_offsets"]
        shape = tuple(t["shape"])
        if not (0 <= start <= end <= len(data)) or end - start != 4 * int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"'{path}': tensor '{name}' has offsets {start}..{end} for shape {list(shape)}")
        out[name] = np.frombuffer(data[start:end], dtype="<f4").reshape(shape).copy()
    return out


def write_safetensors(path: str, tensors: dict) -> None:
    """Writes float32 tensors whole (a temporary file renamed over ``path``)."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    _write_atomic(path, struct.pack("<Q", len(text)) + text + b"".join(blobs))


def _write_atomic(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".meeple-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path: str):
    """``(params, sidecar)`` of a meeple checkpoint."""
    with open(sidecar_path(path)) as f:
        sidecar = json.load(f)
    if "net" not in sidecar:
        raise ValueError(f"'{sidecar_path(path)}' is not a network sidecar (no \"net\")")
    return read_safetensors(path), sidecar


def save(path: str, params: dict, sidecar: dict) -> None:
    """Writes the weights and then the sidecar beside them."""
    write_safetensors(path, params)
    _write_atomic(sidecar_path(path), json.dumps(sidecar, indent=2).encode())


def _conv(x, w):
    """A 'same' convolution: x ``[b, cin, h, w]``, w ``[cout, cin, k, k]``."""
    b, cin, h, wd = x.shape
    k = w.shape[2]
    r = k // 2
    padded = np.zeros((b, cin, h + 2 * r, wd + 2 * r), dtype=np.float64)
    padded[:, :, r:r + h, r:r + wd] = x
    out = np.zeros((b, w.shape[0], h, wd), dtype=np.float64)
    for dy in range(k):
        for dx in range(k):
            patch = padded[:, :, dy:dy + h, dx:dx + wd]
            out += np.einsum("bchw,oc->bohw", patch, w[:, :, dy, dx])
    return out


def _bn(x, p, name):
    scale = p[f"{name}.gamma"] / np.sqrt(p[f"{name}.running_var"].astype(np.float64) + EPSILON)
    shift = p[f"{name}.beta"] - p[f"{name}.running_mean"] * scale
    return x * scale[None, :, None, None] + shift[None, :, None, None]


def _conv_bn(x, p, name):
    return _bn(_conv(x, p[f"{name}.conv.weight"]), p, f"{name}.norm")


def _dense(x, p, name):
    return x @ p[f"{name}.weight"] + p[f"{name}.bias"]


def _relu(x):
    return np.maximum(x, 0.0)


def forward(params: dict, net: dict, obs):
    """Logits ``[batch, actions]`` and values ``[batch, seats]`` (float64) for observations
    ``[batch, *input]`` (or one observation), as meeple's network computes them."""
    p = params
    obs = np.asarray(obs, dtype=np.float64)
    size = int(np.prod(net["input"]))
    if obs.size % size:
        raise ValueError(f"obs holds {obs.size} values: not a whole number of observations of {size}")
    batch = obs.size // size
    trunk = net["trunk"]
    kind = trunk["kind"]
    if kind == "resnet":
        planes, rows, cols = net["input"]
        x = _relu(_conv_bn(obs.reshape(batch, planes, rows, cols), p, "stem"))
        for i in range(trunk["blocks"]):
            y = _conv_bn(_relu(_conv_bn(x, p, f"blocks.{i}.first")), p, f"blocks.{i}.second")
            x = _relu(x + y)
        pol = _relu(_conv_bn(x, p, "policy_conv"))
        val = _relu(_conv_bn(x, p, "value_conv"))
        head = net.get("head", {"kind": "dense"})
        if head.get("kind") == "planes":
            w = p["policy_planes.weight"]
            cells = _conv(pol, w) + p["policy_planes.bias"][None, :, None, None]
            index = head["index"]
            # Sidecars keep the index as one string of numbers (compact for thousands of actions).
            index = [int(i) for i in index.split()] if isinstance(index, str) else index
            logits = cells.reshape(batch, -1)[:, np.asarray(index, dtype=np.int64)]
        else:
            logits = _dense(pol.reshape(batch, -1), p, "policy_fc")
        value_in = val.reshape(batch, -1)
    elif kind == "resmlp":
        x = _relu(_dense(obs.reshape(batch, size), p, "mlp.0"))
        for b in range(trunk["blocks"]):
            y = _dense(_relu(_dense(x, p, f"mlp.{1 + 2 * b}")), p, f"mlp.{2 + 2 * b}")
            x = _relu(x + y)
        logits, value_in = _dense(x, p, "policy_fc"), x
    elif kind == "mlp":
        x = obs.reshape(batch, size)
        for i in range(trunk["layers"]):
            x = _relu(_dense(x, p, f"mlp.{i}"))
        logits, value_in = _dense(x, p, "policy_fc"), x
    else:
        raise ValueError(f"unknown trunk '{kind}': meeple's are resnet, mlp and resmlp")
    values = 1.0 / (1.0 + np.exp(-_dense(_relu(_dense(value_in, p, "value_fc")), p, "value_out")))
    return logits, values
