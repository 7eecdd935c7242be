"""Tensors as plain bytes between processes.

Shared-memory tensor passing needs the sender alive until the receiver maps the memory; a candidate
process may die at any moment, so outputs travel as bytes (dtype, shape, raw data) instead.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import pickle

import torch

_TAG = "__cudaopt_tensor__"


def pack(obj):
    if isinstance(obj, torch.Tensor):
        t = obj.detach().to("cpu").contiguous()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return (_TAG, str(t.dtype).removeprefix("torch."), tuple(t.shape), raw, type(obj).__name__)
    if isinstance(obj, tuple):
        return tuple(pack(o) for o in obj)
    if isinstance(obj, list):
        return [pack(o) for o in obj]
    if isinstance(obj, (int, float, bool, str, type(None))):
        return obj
    return ("__cudaopt_object__", type(obj).__name__)


def unpack(obj):
    if isinstance(obj, tuple) and len(obj) == 5 and obj[0] == _TAG:
        _, dtype, shape, raw, _cls = obj
        dt = getattr(torch, dtype)
        if not raw:
            return torch.empty(shape, dtype=dt)
        return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dt).reshape(shape)
    if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "__cudaopt_object__":
        return _Opaque(obj[1])
    if isinstance(obj, tuple):
        return tuple(unpack(o) for o in obj)
    if isinstance(obj, list):
        return [unpack(o) for o in obj]
    return obj


class _Opaque:
    """Stands in for a non-tensor output object; it never compares equal to a tensor."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name} object>"


# ---------------------------------------------------------------------------------------------------------
# Reading what a worker sends. The worker runs candidate code, and candidate code can write to any file
# descriptor of its process, the harness's pipe included. So the parent never unpickles worker bytes with
# plain pickle (a crafted pickle runs code in the parent): only plain data (tuples, lists, dicts, str,
# bytes, numbers) is accepted, and anything that names a class or function is a tampered message.

MAX_MESSAGE_BYTES = 1 << 31


class TamperedMessage(Exception):
    """The channel from a worker carried something the harness never sends."""


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        raise TamperedMessage(f"a message named {module}.{name}; the harness sends plain data only")


def recv_plain(conn):
    """conn.recv() for an untrusted sender: plain data or TamperedMessage."""
    raw = conn.recv_bytes(MAX_MESSAGE_BYTES)
    try:
        msg = _PlainDataUnpickler(io.BytesIO(raw)).load()
    except TamperedMessage:
        raise
    except Exception as e:  # noqa: BLE001 - truncated or forged bytes
        raise TamperedMessage(f"unreadable message ({type(e).__name__})") from None
    if not isinstance(msg, tuple) or not msg or not isinstance(msg[0], str):
        raise TamperedMessage("a message that is not a (kind, ...) tuple")
    return msg


def timing_mac(key: bytes, payload: dict) -> str:
    """The timing report's authentication: the key reaches the worker only after its timed rounds."""
    return hmac.new(key, json.dumps(payload, sort_keys=True).encode(), hashlib.sha256).hexdigest()
