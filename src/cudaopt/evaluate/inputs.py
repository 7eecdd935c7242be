"""Inputs for correctness trials and timed rounds, built by the harness from the reference alone.

Every trial draws fresh inputs from the reference's `get_inputs()` under its own seed, then mixes
distributions (scale, shift, sign, uniform) so a shortcut that holds for one distribution fails. The
same (seed, transform) always gives the same tensors, so the judge and the worker agree bit for bit.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch

# Trial 0 is always the task's own distribution; the rest cycle through these transforms.
TRANSFORMS = ("plain", "scale_up", "shift", "negate", "scale_down", "uniform", "plain")
POSITIVE_SAFE = {"plain", "scale_up", "scale_down", "uniform"}


@dataclass(frozen=True)
class TrialPlan:
    index: int
    seed: int
    transform: str
    reuse_buffers: bool  # copy the new values into the previous trial's tensors (same addresses)


def trial_plan(index: int, base_seed: int = 0) -> TrialPlan:
    return TrialPlan(
        index=index,
        seed=base_seed * 1_000_003 + 7919 * index + 1,
        transform=TRANSFORMS[index % len(TRANSFORMS)],
        reuse_buffers=index % 2 == 1,
    )


# Timed outputs kept for the drift check (the last round of each slot), and the fixed input sets the
# rounds rotate through where fresh inputs per round are too slow to draw.
N_TIMING_SETS = 4


def round_seed(refresh_seed: int, round_index: int) -> int:
    """Seed of the fresh inputs of one timed round: a keyed hash of the round's index under the parent's
    per-evaluation `refresh_seed`, so one round's seed (readable with torch.initial_seed() during its
    call, were it not reseeded) says nothing about the next round's."""
    h = hashlib.blake2b(round_index.to_bytes(8, "little", signed=True), key=refresh_seed.to_bytes(8, "little"), digest_size=8)
    return int.from_bytes(h.digest(), "little") >> 2


def timing_seed(set_index: int, base_seed: int = 0) -> int:
    """Seeds for the rotated input sets of the timed rounds (disjoint from trial seeds)."""
    return base_seed * 1_000_003 + 104729 + 15485863 * (set_index + 1)


def _domain_of(module, index: int, t: torch.Tensor) -> str:
    declared = getattr(module, "INPUT_DOMAIN", {}) or {}
    d = declared.get(index)
    if d is not None:
        return d
    if not t.is_floating_point():
        return "fixed"
    return "positive" if bool((t >= 0).all()) else "any"


def _apply(t: torch.Tensor, transform: str, domain: str, seed: int) -> torch.Tensor:
    if domain == "fixed" or transform == "plain":
        return t
    if domain == "positive" and transform not in POSITIVE_SAFE:
        transform = "scale_up"
    if transform == "scale_up":
        return t * 4.0
    if transform == "scale_down":
        return t * 0.25
    if transform == "shift":
        return t + 1.5
    if transform == "negate":
        return -t
    if transform == "uniform":
        gen = torch.Generator(device=t.device).manual_seed(seed)
        u = torch.rand(t.shape, generator=gen, dtype=torch.float32, device=t.device).to(t.dtype)
        return u * 2.0 if domain == "positive" else u * 4.0 - 2.0
    raise ValueError(f"unknown transform {transform}")


def seed_generators(seed: int, device) -> None:
    """What torch.manual_seed does for the generators get_inputs() can draw from: the CPU's and `device`'s.

    torch.manual_seed also queues a seeding of every CUDA generator, and where CUDA is not initialised
    (any CPU evaluation) that queueing formats a stack trace each time: 0.7 ms a call, more than half of
    a small CPU evaluation's worker time. The values drawn are the same."""
    torch.random.default_generator.manual_seed(seed)
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_initialized():
            torch.manual_seed(seed)
            return
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        torch.cuda.default_generators[idx].manual_seed(seed)


def make_inputs(module, seed: int, transform: str, device, info: dict | None = None) -> list:
    """Build one input list on `device` from the reference module's get_inputs().

    On a GPU, get_inputs() runs with that GPU as the default device, so its random tensors are drawn
    there: drawing hundreds of MB on the CPU and copying them cost ~0.5 s a trial in each of the two
    processes on the H200, most of an evaluation. The seed fixes the values on either kind of device.
    """
    dev = torch.device(device)
    seed_generators(seed, dev)
    if dev.type == "cuda":
        try:
            with torch.device(dev):
                raw = list(module.get_inputs())
        except (RuntimeError, TypeError):  # e.g. a CPU torch.Generator passed to a factory: draw on the CPU
            seed_generators(seed, dev)
            raw = list(module.get_inputs())
            if info is not None:
                info["cpu_fallback"] = True
    else:
        raw = list(module.get_inputs())
    out = []
    for i, x in enumerate(raw):
        if isinstance(x, torch.Tensor):
            x = x.to(dev).contiguous()
            if transform != "plain":  # (the domain costs a device sync a tensor: the timed rounds' plain draws skip it)
                x = _apply(x, transform, _domain_of(module, i, x), (seed ^ 0x5F3759DF) + i)
        out.append(x)
    return out


def copy_into(dst: list, src: list) -> list:
    """Reuse the previous trial's tensors (same storage, same address) with new contents."""
    res = []
    for d, s in zip(dst, src):
        if isinstance(d, torch.Tensor) and isinstance(s, torch.Tensor) and d.shape == s.shape and d.dtype == s.dtype:
            d.copy_(s)
            res.append(d)
        else:
            res.append(s)
    return res


def make_init_inputs(module) -> list:
    return list(module.get_init_inputs())


def input_signature(inputs, _depth: int = 0) -> tuple:
    """What the harness made each input as, beyond its values: the object, its class, layout and storage, its
    instance attributes. Both sides of a timed round get the same tensor objects, so a candidate that turns an
    input into a subclass with a torch-function hook, gives it other strides (`set_`), or sets an attribute that
    shadows a Tensor method would make the reference, timed next on them, run slower. Values are input_mutation's
    bitwise check; this is the rest."""
    sig = []
    for x in inputs:
        entry: tuple = (id(x), type(x))
        if isinstance(x, torch.Tensor):
            entry += _tensor_signature(x)
        elif isinstance(x, (list, tuple)) and _depth < 2:
            entry += (input_signature(x, _depth + 1),)
        elif isinstance(x, dict) and _depth < 2:
            entry += (tuple(x), input_signature(list(x.values()), _depth + 1))
        sig.append(entry)
    return tuple(sig)


# What a tensor input is beyond its values, field by field: one table read by the signature and named in the evidence.
_TENSOR_FIELDS = (
    ("shape", lambda x: x.shape),
    ("strides", lambda x: x.stride()),
    ("storage offset", lambda x: x.storage_offset()),
    ("dtype", lambda x: x.dtype),
    ("device", lambda x: x.device),
    ("requires_grad", lambda x: x.requires_grad),
    ("storage", lambda x: x.untyped_storage().data_ptr()),
    ("attributes", lambda x: tuple((k, id(v)) for k, v in (getattr(x, "__dict__", None) or {}).items())),
    # dimension names (`rename_`; gone from newer torch), lazy conjugate and negative bits
    ("names or conjugate bits", lambda x: (getattr(x, "names", None), x.is_conj(), x.is_neg())),
)


def _tensor_signature(x: torch.Tensor) -> tuple:
    sig = []
    for _, read in _TENSOR_FIELDS:
        try:
            sig.append(read(x))
        except Exception as e:  # a field made unreadable (a subclass without storage, say) reads as what raised
            sig.append(("unreadable", type(e).__name__, str(e)[:80]))
    return tuple(sig)


def describe_signature_change(before: tuple, after: tuple) -> str:
    """Which input changed and how, in a few words (the finding's evidence)."""
    if len(before) != len(after):
        return f"{len(before)} inputs became {len(after)}"
    tensor_fields = ("object", "class") + tuple(name for name, _ in _TENSOR_FIELDS)
    for i, (b, a) in enumerate(zip(before, after)):
        if b != a:
            fields = tensor_fields if len(a) == len(tensor_fields) == len(b) else ("object", "class", "contents", "contents")
            what = [fields[j] for j in range(min(len(a), len(b), len(fields))) if a[j] != b[j]] or ["contents"]
            return f"input {i}: {', '.join(what)} changed (now a {getattr(a[1], '__name__', '?')})"
    return "unchanged"
