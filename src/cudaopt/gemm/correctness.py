"""Per-shape correctness checks for an HGEMM implementation `fn(a, b, out)`.

- exact 0/1: A, B of random 0/1 entries; every output whose fp32 reference is below 2048 (where
  fp16 represents integers exactly) must equal it exactly (the CUDA-L2 seed's check).
- random normal: relative Frobenius error against an fp32 reference must stay within
  `bound_factor` x that of the fp32-accumulate vendor path (torch.matmul) on the same inputs, and
  under an absolute ceiling; an fp16-accumulate path exceeds it once K is a few hundred.
- NaN: a NaN in A[0, 0] must make output row 0 all NaN and leave other rows finite.
- guard bands: the output lives inside a larger buffer whose rows above and below hold a sentinel
  that must survive; the output itself is poisoned with NaN first, so unwritten entries fail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

EXACT_LIMIT = 2048.0
REL_ERR_CEILING = 2e-3  # fp32 accumulate + fp16 output rounding sits near 3e-4
SENTINEL = 1234.0


@dataclass(frozen=True)
class CheckResult:
    exact_ok: bool
    normal_ok: bool
    nan_ok: bool
    guard_ok: bool
    rel_err: float
    ref_rel_err: float  # torch.matmul's error on the same inputs

    @property
    def ok(self) -> bool:
        return self.exact_ok and self.normal_ok and self.nan_ok and self.guard_ok


def exact_match_ok(out, ref, limit: float = EXACT_LIMIT) -> bool:
    """All entries whose reference is below `limit` match exactly (works on numpy or torch)."""
    mask = ref < limit
    return bool((out[mask] == ref[mask]).all())


def rel_error(out, ref) -> float:
    import torch

    diff = torch.linalg.vector_norm((out.double() - ref.double()).flatten())
    denom = torch.linalg.vector_norm(ref.double().flatten())
    return float(diff / denom) if float(denom) > 0 else float(diff)


def normal_ok(rel_err: float, ref_rel_err: float, bound_factor: float = 1.25) -> bool:
    """Within bound_factor x the fp32-accumulate reference path's error (floor 1e-5) and the ceiling."""
    if not math.isfinite(rel_err):
        return False
    return rel_err <= max(bound_factor * ref_rel_err, 1e-5) and rel_err <= REL_ERR_CEILING


def zero_one_probability(k: int) -> float:
    """P(entry = 1) so that a typical output, K p^2, sits near 512: most entries checkable."""
    return min(0.5, math.sqrt(512.0 / k))


def _guarded_out(m: int, n: int, device):
    import torch

    buf = torch.full((m + 2, n), SENTINEL, dtype=torch.float16, device=device)
    out = buf[1 : m + 1]
    out.fill_(float("nan"))
    return buf, out


def _guards_intact(buf) -> bool:
    return bool((buf[0] == SENTINEL).all() and (buf[-1] == SENTINEL).all())


def check_gemm(fn, m: int, n: int, k: int, device="cuda", seed: int = 0, bound_factor: float = 1.25) -> CheckResult:
    """Run all checks on fn(a, b, out) for one shape; out is a contiguous view into a guarded buffer."""
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # an fp32 reference must be fp32
    try:
        guard = True
        # exact 0/1
        p = zero_one_probability(k)
        a = (torch.rand((m, k), generator=gen, device=device) < p).half()
        b = (torch.rand((k, n), generator=gen, device=device) < p).half()
        ref = a.float() @ b.float()
        buf, out = _guarded_out(m, n, device)
        fn(a, b, out)
        torch.cuda.synchronize()
        exact = exact_match_ok(out.float(), ref) and not bool(out.isnan().any())
        guard &= _guards_intact(buf)
        # random normal, against fp32 and against torch.matmul's error
        a = torch.randn((m, k), generator=gen, device=device).half()
        b = torch.randn((k, n), generator=gen, device=device).half()
        ref = a.float() @ b.float()
        buf, out = _guarded_out(m, n, device)
        fn(a, b, out)
        torch.cuda.synchronize()
        err = rel_error(out, ref)
        ref_err = rel_error(torch.matmul(a, b), ref)
        guard &= _guards_intact(buf)
        # NaN propagation
        a[0, 0] = float("nan")
        buf, out = _guarded_out(m, n, device)
        fn(a, b, out)
        torch.cuda.synchronize()
        nan = bool(out[0].isnan().all()) and (m == 1 or bool(out[1:].isfinite().all()))
        guard &= _guards_intact(buf)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    return CheckResult(exact, normal_ok(err, ref_err, bound_factor), nan, guard, err, ref_err)
