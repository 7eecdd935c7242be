"""Output comparison with per-dtype tolerances that scale with the outputs.

A candidate element c passes against reference r when |c - r| <= atol * scale + rtol * |r|, where
scale is the root-mean-square of the reference output. Scaling atol by the output's size means a zero
or constant output cannot pass merely because the outputs are small next to a fixed tolerance.
NaN must match NaN, +-Inf must match the same Inf; shape and dtype must match exactly.
Large outputs are compared chunk by chunk on a few intra-op threads (see _compare_values, compare_threads).
"""

from __future__ import annotations

import math
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch

# Defaults: no looser than 1e-4 for fp32 and 1e-2 for fp16/bf16 (relative to the output's scale).
TINY_OUTPUT_RATIO = 1e-3  # an output this much smaller than the reference's (rms) is named degenerate
# Floating-point outputs are compared this many elements at a time (see _compare_values). For 67M fp32
# elements on a 2-core EPYC (32 MB L3): ~0.25-0.3 s with chunks of 128k-512k, ~0.37 s at 1M, ~1.5 s at 4M.
CHUNK_ELEMENTS = 1 << 18
PARALLEL_MIN_ELEMENTS = 1 << 22  # tensors smaller than this are compared on one thread (see compare_threads)

DEFAULT_TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
}


@dataclass(frozen=True)
class Comparison:
    ok: bool
    reason: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    nan_where_finite: bool = False  # candidate NaN where the reference has a value (poison seen)
    constant_output: bool = False  # candidate output constant where the reference is not
    tiny_output: bool = False  # candidate output far smaller than the reference (a near-zero shortcut)


def flatten_outputs(out) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        res = []
        for o in out:
            res.extend(flatten_outputs(o))
        return res
    return [out]


def tolerances(dtype: torch.dtype, atol: float | None = None, rtol: float | None = None) -> tuple[float, float]:
    a, r = DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))  # integer and bool outputs: exact
    return (a if atol is None else atol, r if rtol is None else rtol)


_THREADS_LOCK = threading.Lock()
_THREADS_STATE = {"depth": 0, "saved": 1}  # comparisons in progress in this process; the setting before them


@contextmanager
def intra_op_threads(k: int):
    """torch's intra-op thread count set to k (never raised above the setting from before) for the block,
    and that setting restored when the last comparison in progress ends, also when a block raises. The
    local pool compares in several threads of one process at once: each saving and restoring on its own
    could leave the process at another comparison's lowered count."""
    with _THREADS_LOCK:
        if _THREADS_STATE["depth"] == 0:
            _THREADS_STATE["saved"] = torch.get_num_threads()
        _THREADS_STATE["depth"] += 1
        want = max(1, min(k, _THREADS_STATE["saved"]))
        if torch.get_num_threads() != want:
            torch.set_num_threads(want)
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _THREADS_STATE["depth"] -= 1
            if _THREADS_STATE["depth"] == 0 and torch.get_num_threads() != _THREADS_STATE["saved"]:
                torch.set_num_threads(_THREADS_STATE["saved"])


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def compare_threads(numel: int) -> int:
    """Intra-op threads for comparing a tensor of `numel` elements.

    The parent compares while its two children (judge and worker) each spin a core waiting on the GPU,
    so a pool of one thread per core is likely oversubscribed and every parallel op waits for
    descheduled threads: on a 16-core H200 host an isfinite over 262k elements took ~12 ms per call in
    an evaluation, against ~0.5 ms on one core of a 2-core CPU box. Small tensors get one thread; large
    ones a few (a quarter of the CPUs, at most 4): chunked comparison is memory-bound, and the rest of
    the cores stay with the children.
    """
    if numel < PARALLEL_MIN_ELEMENTS:
        return 1
    return min(4, max(1, _cpus() // 4))


def _all_finite(x: torch.Tensor) -> bool:
    return bool(torch.isfinite(x).all())


def _combine_norms(norms: list[float]) -> float:
    """The 2-norm of a tensor from its chunks' 2-norms; one chunk's norm unchanged, so a tensor of one
    chunk gets exactly the whole-tensor value (sums of squares overflow to inf as in a whole-tensor norm)."""
    return norms[0] if len(norms) == 1 else math.sqrt(sum(x * x for x in norms))


def compare_tensor(ref: torch.Tensor, cand, atol: float | None = None, rtol: float | None = None,
                   scale: float | None = None) -> Comparison:
    if not isinstance(cand, torch.Tensor):
        return Comparison(False, f"output is {type(cand).__name__}, expected a tensor")
    if tuple(cand.shape) != tuple(ref.shape):
        return Comparison(False, f"shape {tuple(cand.shape)} != reference {tuple(ref.shape)}")
    if cand.dtype != ref.dtype:
        return Comparison(False, f"dtype {cand.dtype} != reference {ref.dtype}")
    with intra_op_threads(compare_threads(ref.numel())), torch.no_grad():
        return _compare_values(ref, cand, atol, rtol, scale)


def _compare_values(ref: torch.Tensor, cand: torch.Tensor, atol: float | None, rtol: float | None,
                    scale: float | None) -> Comparison:
    """compare_tensor once type, shape and dtype match.

    The flattened tensors are processed in chunks of CHUNK_ELEMENTS, so temporaries stay chunk-sized and
    a chunk's several operations run while it is in cache (whole outputs reach hundreds of MB, and an
    unchunked comparison made ~10 passes with full-size temporaries). Every elementwise operation, and
    so every verdict, max_abs and min/max, is as on the whole tensor; the rms of the reference (scale)
    and of the candidate combine per-chunk float64 norms, which can differ from one whole-tensor norm
    in the last bits (as a whole-tensor norm's value differs between thread counts).
    Two passes: the reference's norm first (scale weighs every element's tolerance), then one pass over
    both tensors. A chunk whose |c - r| has a finite maximum has no NaN or Inf on either side (x - y is
    finite only if x and y are), so the NaN/Inf position checks run only on chunks that have some.
    """
    a, r = tolerances(ref.dtype, atol, rtol)
    if not ref.is_floating_point():
        eq = torch.equal(ref, cand)
        return Comparison(eq, "" if eq else "integer output differs")
    work = torch.float64 if ref.dtype == torch.float64 else torch.float32
    rflat, cflat = ref.reshape(-1), cand.reshape(-1)
    total = rflat.numel()
    # Off the CPU the per-chunk host reads would each synchronise: one chunk, the whole tensor.
    step = max(1, CHUNK_ELEMENTS) if rflat.device.type == "cpu" else max(1, total)
    bounds = [(s, min(s + step, total)) for s in range(0, total, step)]

    def chunk(t: torch.Tensor, s: int, e: int) -> torch.Tensor:
        return t[s:e].to(work)

    if scale is None:
        r_norms, n_ref = [], 0  # the reference's norm over its finite elements, chunk by chunk
        for s, e in bounds:
            rc = chunk(rflat, s, e)
            norm = float(torch.linalg.vector_norm(rc, dtype=torch.float64))
            if not math.isfinite(norm) and not _all_finite(rc):
                rc = rc[torch.isfinite(rc)]
                norm = float(torch.linalg.vector_norm(rc, dtype=torch.float64))
            r_norms.append(norm)
            n_ref += rc.numel()
        scale = _combine_norms(r_norms) / n_ref ** 0.5 if n_ref else 0.0
    tol_abs = a * scale

    nan_differs = nan_where_finite = inf_differs = False
    ok = True
    n = 0
    max_abs = 0.0
    c_norms = []
    c_lo = c_hi = r_lo = r_hi = None
    for s, e in bounds:
        rc, cc = chunk(rflat, s, e), chunk(cflat, s, e)
        diff = (cc - rc).abs_()
        dmax = float(diff.max()) if diff.numel() else None
        if dmax is not None and not math.isfinite(dmax):
            ref_nan, c_nan = torch.isnan(rc), torch.isnan(cc)
            if not nan_where_finite and bool((c_nan & ~ref_nan).any()):
                nan_where_finite = True
            if not torch.equal(ref_nan, c_nan):
                nan_differs = True
            if nan_differs and nan_where_finite:
                break  # nothing later changes the result
            if nan_differs or inf_differs:
                continue
            ref_inf, c_inf = torch.isinf(rc), torch.isinf(cc)
            if not torch.equal(ref_inf, c_inf) or not torch.equal(rc[ref_inf], cc[c_inf]):
                inf_differs = True
                continue
            finite = ~(ref_nan | ref_inf)
            rc, cc = rc[finite], cc[finite]
            diff = (cc - rc).abs_()
            dmax = float(diff.max()) if diff.numel() else None
        if nan_differs or inf_differs or dmax is None:
            continue  # after a NaN/Inf mismatch only the NaN checks above matter (they are reported first)
        n += rc.numel()
        max_abs = max(max_abs, dmax)
        if ok:  # the first chunk out of tolerance decides; max_abs and the rest still cover every chunk
            bound = rc.abs().mul_(r).add_(tol_abs)
            ok = bool((diff <= bound).all())
            del bound
        del diff
        lo, hi = torch.aminmax(cc)
        c_lo, c_hi = (lo, hi) if c_lo is None else (torch.minimum(c_lo, lo), torch.maximum(c_hi, hi))
        lo, hi = torch.aminmax(rc)
        r_lo, r_hi = (lo, hi) if r_lo is None else (torch.minimum(r_lo, lo), torch.maximum(r_hi, hi))
        c_norms.append(float(torch.linalg.vector_norm(cc, dtype=torch.float64)))
    if nan_differs:
        return Comparison(False, "NaN positions differ from the reference", nan_where_finite=nan_where_finite)
    if inf_differs:
        return Comparison(False, "Inf positions or signs differ from the reference")
    if n == 0:
        return Comparison(True)
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    constant = n > 1 and float(c_hi - c_lo) == 0.0 and float(r_hi - r_lo) > 0.0
    cand_rms = _combine_norms(c_norms) / n ** 0.5
    tiny = scale > 0 and cand_rms < TINY_OUTPUT_RATIO * scale
    reason = "" if ok else f"max abs error {max_abs:.3g} exceeds tolerance (atol {a:g} x output rms {scale:.3g} + rtol {r:g} x |ref|)"
    return Comparison(ok, reason, max_abs, max_rel, False, constant, tiny)


def compare_sampled(ref, cand, atol: float | None = None, rtol: float | None = None) -> Comparison:
    """A sampled output (see views): metadata exact, the sampled elements within tolerance (scaled by the
    whole reference's rms), NaN/Inf counts equal, and the whole-tensor rms within tolerance."""
    from cudaopt.evaluate.views import Sampled

    if not isinstance(cand, Sampled):
        return Comparison(False, f"output is {type(cand).__name__}, expected a tensor of shape {tuple(ref.shape)}")
    if tuple(cand.shape) != tuple(ref.shape):
        return Comparison(False, f"shape {tuple(cand.shape)} != reference {tuple(ref.shape)}")
    if cand.dtype != ref.dtype:
        return Comparison(False, f"dtype {cand.dtype} != reference {ref.dtype}")
    if not ref.dtype.is_floating_point:
        if cand.stats != ref.stats or not torch.equal(cand.values, ref.values):
            return Comparison(False, "integer output differs")
        return Comparison(True)
    for k in ("nan", "posinf", "neginf"):
        if cand.stats[k] != ref.stats[k]:
            return Comparison(False, f"{k} count {cand.stats[k]} != reference {ref.stats[k]}",
                              nan_where_finite=k == "nan" and cand.stats[k] > ref.stats[k])
    cmp = compare_tensor(ref.values, cand.values, atol, rtol, scale=ref.stats["rms"])
    if not cmp.ok:
        return replace(cmp, reason="sampled elements: " + cmp.reason)
    a, r = tolerances(ref.dtype, atol, rtol)
    rr, cr = ref.stats["rms"], cand.stats["rms"]
    if abs(cr - rr) > (a + r) * rr:
        return Comparison(False, f"output rms {cr:.6g} != reference rms {rr:.6g}", cmp.max_abs, cmp.max_rel,
                          tiny_output=rr > 0 and cr < TINY_OUTPUT_RATIO * rr)
    return cmp


def compare_outputs(ref, cand, atol: float | None = None, rtol: float | None = None) -> Comparison:
    refs, cands = flatten_outputs(ref), flatten_outputs(cand)
    if len(refs) != len(cands):
        return Comparison(False, f"{len(cands)} outputs, the reference returns {len(refs)}")
    worst = Comparison(True)
    for i, (r, c) in enumerate(zip(refs, cands)):
        from cudaopt.evaluate.views import Sampled

        if isinstance(r, Sampled):
            cmp = compare_sampled(r, c, atol, rtol)
            if not cmp.ok:
                return replace(cmp, reason=(f"output {i}: " if len(refs) > 1 else "") + cmp.reason)
            worst = Comparison(True, "", max(cmp.max_abs, worst.max_abs), max(cmp.max_rel, worst.max_rel))
            continue
        if isinstance(c, Sampled):
            return Comparison(False, f"output {i}: sampled candidate output against a whole reference (sizes differ)")
        if not isinstance(r, torch.Tensor):
            if r != c:
                return Comparison(False, f"output {i}: {c!r} != reference {r!r}")
            continue
        cmp = compare_tensor(r, c, atol, rtol)
        if not cmp.ok:
            return replace(cmp, reason=(f"output {i}: " if len(refs) > 1 else "") + cmp.reason)
        if cmp.max_abs >= worst.max_abs:
            worst = Comparison(True, "", cmp.max_abs, max(cmp.max_rel, worst.max_rel))
    return worst
