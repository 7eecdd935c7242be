"""Output comparison with per-dtype tolerances that scale with the outputs.

A candidate element c passes against reference r when |c - r| <= atol * scale + rtol * |r|, where
scale is the root-mean-square of the reference output. Scaling atol by the output's size means a zero
or constant output cannot pass merely because the outputs are small next to a fixed tolerance.
NaN must match NaN, +-Inf must match the same Inf; shape and dtype must match exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

# Defaults: no looser than 1e-4 for fp32 and 1e-2 for fp16/bf16 (relative to the output's scale).
TINY_OUTPUT_RATIO = 1e-3  # an output this much smaller than the reference's (rms) is named degenerate

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


def compare_tensor(ref: torch.Tensor, cand, atol: float | None = None, rtol: float | None = None,
                   scale: float | None = None) -> Comparison:
    if not isinstance(cand, torch.Tensor):
        return Comparison(False, f"output is {type(cand).__name__}, expected a tensor")
    if tuple(cand.shape) != tuple(ref.shape):
        return Comparison(False, f"shape {tuple(cand.shape)} != reference {tuple(ref.shape)}")
    if cand.dtype != ref.dtype:
        return Comparison(False, f"dtype {cand.dtype} != reference {ref.dtype}")
    a, r = tolerances(ref.dtype, atol, rtol)
    if not ref.is_floating_point():
        eq = torch.equal(ref, cand)
        return Comparison(eq, "" if eq else "integer output differs")
    work = torch.float64 if ref.dtype == torch.float64 else torch.float32
    ref64 = ref.to(work)
    c64 = cand.to(work)
    # Few passes over the data: whole outputs reach hundreds of MB, and this runs once per trial.
    if bool(torch.isfinite(ref64).all()) and bool(torch.isfinite(c64).all()):
        rf, cf = ref64.reshape(-1), c64.reshape(-1)
    else:
        ref_nan, c_nan = torch.isnan(ref64), torch.isnan(c64)
        nan_where_finite = bool((c_nan & ~ref_nan).any())
        if not torch.equal(ref_nan, c_nan):
            return Comparison(False, "NaN positions differ from the reference", nan_where_finite=nan_where_finite)
        ref_inf, c_inf = torch.isinf(ref64), torch.isinf(c64)
        if not torch.equal(ref_inf, c_inf) or not torch.equal(ref64[ref_inf], c64[c_inf]):
            return Comparison(False, "Inf positions or signs differ from the reference")
        finite = ~(ref_nan | ref_inf)
        rf, cf = ref64[finite], c64[finite]
    if rf.numel() == 0:
        return Comparison(True)
    n = rf.numel()
    scale = float(torch.linalg.vector_norm(rf, dtype=torch.float64)) / n ** 0.5 if scale is None else scale
    diff = (cf - rf).abs_()
    bound = rf.abs().mul_(r).add_(a * scale)
    max_abs = float(diff.max())
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    ok = bool((diff <= bound).all())
    del diff, bound
    c_lo, c_hi = torch.aminmax(cf)
    r_lo, r_hi = torch.aminmax(rf)
    constant = n > 1 and float(c_hi - c_lo) == 0.0 and float(r_hi - r_lo) > 0.0
    cand_rms = float(torch.linalg.vector_norm(cf, dtype=torch.float64)) / n ** 0.5
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
