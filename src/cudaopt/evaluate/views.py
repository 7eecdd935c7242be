"""What of an output travels to the comparing parent: all of it, or a challenged sample.

Moving every output of every trial between processes costs more than the evaluation itself once
outputs reach hundreds of megabytes (seen on the H200: ~30 s per evaluation). So the first trials
travel whole, and later trials travel as a random sample of elements plus whole-tensor statistics
(NaN/Inf counts and the root-mean-square), computed on the device.

The sample is a challenge: the parent draws its seed only after the candidate's output of that trial
exists, so candidate code cannot know which elements will be looked at when it computes them. The
judge gets the same seeds (it never runs candidate code) and samples the reference identically.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cudaopt.evaluate.codec import pack, unpack
from cudaopt.evaluate.compare import flatten_outputs

FULL_TRIALS = 2  # the first trials are compared element by element, whatever their size
FULL_LIMIT = 1 << 20  # outputs up to this many elements always travel whole
SAMPLE_N = 1 << 18  # elements per sampled output
_TAG = "__cudaopt_sample__"


def wants_sample(trial: int) -> bool:
    return trial >= FULL_TRIALS


def view(out, seed: int | None, full_limit: int = FULL_LIMIT):
    """The packed form of `out`: whole, or (when seed is given) sampled tensor by tensor."""
    if seed is None:
        return pack(out)
    res = []
    for k, t in enumerate(flatten_outputs(out)):
        if not isinstance(t, torch.Tensor) or type(t) is not torch.Tensor or t.numel() <= full_limit:
            res.append(pack(t))
            continue
        flat = t.detach().reshape(-1)
        gen = torch.Generator(device=flat.device).manual_seed((seed + 7919 * k) % (2**63))
        idx = torch.randint(flat.numel(), (SAMPLE_N,), device=flat.device, generator=gen)
        if flat.is_floating_point():
            f = flat.float() if flat.dtype != torch.float64 else flat
            finite = torch.isfinite(f)
            stats = {
                "nan": int(torch.isnan(f).sum()),
                "posinf": int((f == float("inf")).sum()),
                "neginf": int((f == float("-inf")).sum()),
                "rms": float(torch.where(finite, f, torch.zeros_like(f)).double().pow(2).mean().sqrt()),
            }
        else:
            stats = {"sum": int(flat.long().sum())}
        res.append((_TAG, str(t.dtype).removeprefix("torch."), tuple(t.shape), pack(flat[idx]), stats))
    return res


@dataclass(frozen=True)
class Sampled:
    """A sampled output on the parent's side: its metadata, sampled values and whole-tensor stats."""

    dtype: torch.dtype
    shape: tuple
    values: torch.Tensor
    stats: dict

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


def unview(obj):
    if isinstance(obj, list) and obj and all(isinstance(o, tuple) for o in obj) and any(
            len(o) == 5 and o[0] == _TAG for o in obj):
        return [Sampled(getattr(torch, o[1]), o[2], unpack(o[3]), o[4]) if (len(o) == 5 and o[0] == _TAG) else unpack(o)
                for o in obj]
    return unpack(obj)
