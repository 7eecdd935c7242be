"""Tensors as plain bytes between processes, and the framing of the harness's messages.

Shared-memory tensor passing needs the sender alive until the receiver maps the memory; a candidate
process may die at any moment, so outputs travel as bytes (dtype, shape, raw data) instead, each
tensor's bytes as a message of its own (pickle protocol 5 out-of-band buffers: no extra copies).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import pickle
import warnings

import torch

_TAG = "__cudaopt_tensor__"


def pack(obj):
    if isinstance(obj, torch.Tensor):
        t = obj.detach().to("cpu").contiguous()
        # The bytes travel out of band (send_msg): no copy into the pickle stream, none out of it.
        raw = pickle.PickleBuffer(t.reshape(-1).view(torch.uint8).numpy()) if t.numel() else b""
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
        if isinstance(raw, pickle.PickleBuffer):  # sent and received in one process (tests)
            raw = raw.raw()
        with warnings.catch_warnings():  # received bytes are read-only; nothing writes to them
            warnings.simplefilter("ignore", UserWarning)
            return torch.frombuffer(raw, dtype=torch.uint8).view(dt).reshape(shape)
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


MAX_BUFFERS = 256  # tensors in one message (an output's tensors, or a sample's)
BUFFER_WAIT_S = 60.0


def send_msg(conn, msg: tuple) -> None:
    """One message: a pickle of the small parts, then each tensor's bytes as a message of its own."""
    bufs: list[pickle.PickleBuffer] = []
    head = pickle.dumps(msg, protocol=5, buffer_callback=bufs.append)
    conn.send_bytes(len(bufs).to_bytes(4, "little") + head)
    for b in bufs:
        conn.send_bytes(b.raw())


def _recv_bounded(conn, limit: int) -> bytes:
    try:
        return conn.recv_bytes(limit)
    except OSError as e:
        if "bad message length" in str(e):
            raise TamperedMessage(f"a message over the {limit}-byte limit") from None
        raise


def recv_plain(conn):
    """The receiving side of send_msg, for an untrusted sender: plain data or TamperedMessage."""
    first = _recv_bounded(conn, MAX_MESSAGE_BYTES)
    n = int.from_bytes(first[:4], "little")
    if len(first) < 5 or n > MAX_BUFFERS:
        raise TamperedMessage("a message without the harness's framing")
    bufs, total = [], 0
    for _ in range(n):
        if not conn.poll(BUFFER_WAIT_S):  # a sender that announces buffers and stops must not hang us
            raise TamperedMessage("a message announced data that never came")
        bufs.append(_recv_bounded(conn, MAX_MESSAGE_BYTES - total))  # all of a message's data stays under the cap
        total += len(bufs[-1])
    try:
        msg = _PlainDataUnpickler(io.BytesIO(memoryview(first)[4:]), buffers=bufs).load()
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
