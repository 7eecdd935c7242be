"""Tensors as plain bytes between processes.

Shared-memory tensor passing needs the sender alive until the receiver maps the memory; a candidate
process may die at any moment, so outputs travel as bytes (dtype, shape, raw data) instead.
"""

from __future__ import annotations

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
