import math
import random
from dataclasses import astuple

import pytest
import torch

from cudaopt.evaluate import compare
from cudaopt.evaluate.compare import compare_outputs, compare_tensor


def test_exact_and_within_tolerance():
    r = torch.randn(100, 50)
    assert compare_tensor(r, r.clone()).ok
    assert compare_tensor(r, r + 1e-6).ok
    assert not compare_tensor(r, r + 1e-2).ok


def test_tolerance_scales_with_outputs_so_zeros_fail_on_small_outputs():
    r = torch.randn(1000) * 1e-7  # a fixed atol of 1e-4 would let zeros pass here
    assert not compare_tensor(r, torch.zeros_like(r)).ok
    assert not compare_tensor(r, torch.full_like(r, float(r.mean()))).ok
    assert compare_tensor(r, r * (1 + 1e-6)).ok


def test_shape_dtype_type_mismatch():
    r = torch.randn(4, 4)
    assert "shape" in compare_tensor(r, torch.randn(4, 5)).reason
    assert "dtype" in compare_tensor(r, r.double()).reason
    assert "expected a tensor" in compare_tensor(r, [1, 2]).reason


def test_nan_and_inf_must_match():
    r = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    assert compare_tensor(r, r.clone()).ok
    c = r.clone()
    c[0] = float("nan")
    res = compare_tensor(r, c)
    assert not res.ok and res.nan_where_finite
    c = r.clone()
    c[2] = -float("inf")
    assert not compare_tensor(r, c).ok


def test_half_precision_default_tolerance():
    r = torch.randn(256).half()
    assert compare_tensor(r, (r.float() * (1 + 3e-3)).half()).ok
    assert not compare_tensor(r, (r.float() * 1.05).half()).ok


def test_constant_output_is_marked():
    r = torch.randn(64)
    res = compare_tensor(r, torch.full_like(r, 0.3))
    assert not res.ok and res.constant_output


def test_tuples_and_counts():
    a, b = torch.randn(3), torch.randn(2)
    assert compare_outputs((a, b), (a.clone(), b.clone())).ok
    assert "2 outputs" not in compare_outputs((a, b), (a, b)).reason
    assert not compare_outputs((a, b), (a,)).ok


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool])
def test_integer_outputs_exact(dtype):
    r = torch.randint(0, 5, (10,)).to(dtype)
    assert compare_tensor(r, r.clone()).ok
    c = r.clone()
    c[0] = ~c[0] if dtype == torch.bool else c[0] + 1
    assert not compare_tensor(r, c).ok


# --- chunked comparison against a straightforward whole-tensor oracle ---------------------------------

CHUNK = 64  # tensors below span several chunks of this many elements
NAN, INF = float("nan"), float("inf")


def oracle(ref, cand, atol=None, rtol=None, scale=None) -> compare.Comparison:
    """compare_tensor's semantics on whole tensors, written plainly (no chunks, no shortcuts)."""
    C = compare.Comparison
    if not isinstance(cand, torch.Tensor):
        return C(False, f"output is {type(cand).__name__}, expected a tensor")
    if tuple(cand.shape) != tuple(ref.shape):
        return C(False, f"shape {tuple(cand.shape)} != reference {tuple(ref.shape)}")
    if cand.dtype != ref.dtype:
        return C(False, f"dtype {cand.dtype} != reference {ref.dtype}")
    a, r = compare.tolerances(ref.dtype, atol, rtol)
    if not ref.is_floating_point():
        eq = torch.equal(ref, cand)
        return C(eq, "" if eq else "integer output differs")
    work = torch.float64 if ref.dtype == torch.float64 else torch.float32
    x, y = ref.to(work).reshape(-1), cand.to(work).reshape(-1)
    xn, yn = torch.isnan(x), torch.isnan(y)
    if not torch.equal(xn, yn):
        return C(False, "NaN positions differ from the reference", nan_where_finite=bool((yn & ~xn).any()))
    xi, yi = torch.isinf(x), torch.isinf(y)
    if not torch.equal(xi, yi) or not torch.equal(x[xi], y[yi]):
        return C(False, "Inf positions or signs differ from the reference")
    fin = torch.isfinite(x)
    x, y = x[fin], y[fin]
    n = x.numel()
    if n == 0:
        return C(True)
    if scale is None:
        scale = float(torch.linalg.vector_norm(x, dtype=torch.float64)) / n ** 0.5
    diff = (y - x).abs()
    max_abs = float(diff.max())
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else INF)
    ok = bool((diff <= x.abs() * r + a * scale).all())
    constant = n > 1 and float(y.max() - y.min()) == 0.0 and float(x.max() - x.min()) > 0.0
    cand_rms = float(torch.linalg.vector_norm(y, dtype=torch.float64)) / n ** 0.5
    tiny = scale > 0 and cand_rms < compare.TINY_OUTPUT_RATIO * scale
    reason = "" if ok else f"max abs error {max_abs:.3g} exceeds tolerance (atol {a:g} x output rms {scale:.3g} + rtol {r:g} x |ref|)"
    return C(ok, reason, max_abs, max_rel, False, constant, tiny)


def assert_same(got, want):
    """Equal field by field; max_rel within 1e-12 (the rms combines per-chunk float64 norms)."""
    g, w = astuple(got), astuple(want)
    assert (g[:3], g[4:]) == (w[:3], w[4:]), (got, want)
    assert g[3] == w[3] or math.isclose(g[3], w[3], rel_tol=1e-12) or (math.isnan(g[3]) and math.isnan(w[3])), (got, want)


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", CHUNK)


def _pair(dtype=torch.float32, n=5 * CHUNK + 17, rel=1e-6, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = torch.randn(n, generator=g, dtype=torch.float64)
    c = r * (1 + rel * torch.randn(n, generator=g, dtype=torch.float64))
    return r.to(dtype), c.to(dtype)


def _set(t, idx, val):
    t = t.clone()
    t.view(-1)[idx] = val
    return t


def _cases(dtype):
    """(name, ref, cand): shapes span several chunks (the last one partial)."""
    r, c = _pair(dtype)
    n = r.numel()
    last = n - 1
    cs = [
        ("equal", r, r.clone()),
        ("within tolerance", r, c),
        ("one wrong element in the last chunk", r, _set(c, last, float(c[last]) + 1.0)),
        ("one slightly wrong element in a middle chunk", r, _set(c, 2 * CHUNK + 3, float(r[2 * CHUNK + 3]) * 1.05 + 0.05)),
        ("matched NaN and Inf in different chunks",
         _set(_set(_set(r, 3, NAN), CHUNK + 5, INF), 4 * CHUNK + 1, -INF),
         _set(_set(_set(c, 3, NAN), CHUNK + 5, INF), 4 * CHUNK + 1, -INF)),
        ("a chunk of NaN only, matched", _set(r, slice(CHUNK, 2 * CHUNK), NAN), _set(c, slice(CHUNK, 2 * CHUNK), NAN)),
        ("NaN moved to another chunk", _set(r, 3, NAN), _set(c, 3 * CHUNK, NAN)),
        ("candidate NaN in the last chunk only", r, _set(c, last, NAN)),
        ("reference NaN the candidate lacks", _set(r, 2 * CHUNK, NAN), c),
        ("Inf sign flipped in the last chunk", _set(r, last, INF), _set(c, last, -INF)),
        ("Inf where the reference is finite", r, _set(c, CHUNK + 1, INF)),
        ("Inf mismatch in chunk 0, NaN mismatch in chunk 4 (NaN reported)",
         r, _set(_set(c, 0, INF), 4 * CHUNK + 2, NAN)),
        ("Inf mismatch in chunk 0, matched NaN later", _set(r, 4 * CHUNK, NAN), _set(_set(c, 4 * CHUNK, NAN), 1, -INF)),
        ("constant candidate", r, torch.full_like(r, 0.3)),
        ("constant reference and candidate", torch.full_like(r, 0.3), torch.full_like(r, 0.3)),
        ("constant candidate but one element in the last chunk", r, _set(torch.full_like(r, 0.3), last, 0.4)),
        ("tiny candidate", r, (r.double() * 1e-4).to(dtype)),
        ("zero candidate", r, torch.zeros_like(r)),
        ("small, not tiny, candidate beside matched NaNs in several chunks", _set(r, slice(CHUNK, 5 * CHUNK, 2), NAN),
         _set((r.double() * 1.2e-3).to(dtype), slice(CHUNK, 5 * CHUNK, 2), NAN)),
        ("zero reference", torch.zeros_like(r), c),
        ("all NaN, matched", torch.full_like(r, NAN), torch.full_like(r, NAN)),
        ("2-d, not contiguous", r[: 20 * 16].reshape(20, 16).t(), c[: 20 * 16].reshape(20, 16).t()),
    ]
    if dtype in (torch.float32, torch.float64):
        big = torch.finfo(dtype).max / 2
        cs.append(("difference overflows to inf in one chunk", _set(r, 2 * CHUNK, big * 1.5), _set(c, 2 * CHUNK, -big * 1.5)))
    return cs


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_chunked_matches_oracle(small_chunks, dtype):
    for name, r, c in _cases(dtype):
        assert r.numel() <= CHUNK or r.numel() > 2 * CHUNK  # most cases span several chunks
        want = oracle(r, c)
        assert_same(compare.compare_tensor(r, c), want)
        for kw in ({"scale": 0.5}, {"scale": 0.0}, {"atol": 1e-3, "rtol": 0.0}):
            assert_same(compare.compare_tensor(r, c, **kw), oracle(r, c, **kw))


def test_cases_cover_each_outcome(small_chunks):
    """The oracle comparisons above see passes, tolerance failures, NaN/Inf failures and the flags."""
    got = {name: compare.compare_tensor(r, c) for name, r, c in _cases(torch.float32)}
    assert got["within tolerance"].ok and got["matched NaN and Inf in different chunks"].ok
    assert got["all NaN, matched"] == compare.Comparison(True)
    wrong = got["one wrong element in the last chunk"]
    assert not wrong.ok and wrong.max_abs == pytest.approx(1.0, rel=1e-3) and "exceeds tolerance" in wrong.reason
    assert not got["one slightly wrong element in a middle chunk"].ok
    assert got["NaN moved to another chunk"].nan_where_finite
    assert not got["reference NaN the candidate lacks"].nan_where_finite
    assert got["Inf mismatch in chunk 0, NaN mismatch in chunk 4 (NaN reported)"].reason.startswith("NaN positions")
    assert got["Inf mismatch in chunk 0, matched NaN later"].reason.startswith("Inf positions")
    assert got["Inf sign flipped in the last chunk"].reason.startswith("Inf positions")
    assert got["constant candidate"].constant_output
    assert not got["constant reference and candidate"].constant_output
    assert not got["constant candidate but one element in the last chunk"].constant_output
    assert got["tiny candidate"].tiny_output and not got["within tolerance"].tiny_output
    assert not got["small, not tiny, candidate beside matched NaNs in several chunks"].tiny_output  # rms over finite elements
    assert got["difference overflows to inf in one chunk"].max_abs == INF


def test_float64_is_compared_in_float64(small_chunks):
    r = torch.randn(4 * CHUNK, dtype=torch.float64)
    c = _set(r, 4 * CHUNK - 1, float(r[-1]) + 1e-12)  # lost in float32
    res = compare.compare_tensor(r, c, atol=0.0, rtol=0.0)
    assert not res.ok and 0 < res.max_abs < 1e-11
    assert_same(res, oracle(r, c, atol=0.0, rtol=0.0))


def test_randomized_against_oracle(monkeypatch):
    rng = random.Random(1)
    for i in range(300):
        monkeypatch.setattr(compare, "CHUNK_ELEMENTS", rng.choice([1, 3, 16, 64, 10_000]))
        dtype = rng.choice(DTYPES)
        r, c = _pair(dtype, n=rng.choice([1, 2, 7, 100, 300]), rel=10 ** rng.uniform(-8, -1), seed=i)
        for t in (r, c):
            for _ in range(rng.choice([0, 0, 1, 3])):
                t[rng.randrange(t.numel())] = rng.choice([NAN, INF, -INF, 0.0])
        if rng.random() < 0.2:
            c.fill_(rng.choice([0.0, 0.25]))
        scale = rng.choice([None, None, None, 1.0])
        assert_same(compare.compare_tensor(r, c, scale=scale), oracle(r, c, scale=scale))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool], ids=str)
def test_integer_chunked(small_chunks, dtype):
    r = torch.randint(0, 2, (5 * CHUNK + 3,)).to(dtype)
    assert compare.compare_tensor(r, r.clone()) == compare.Comparison(True)
    c = _set(r, r.numel() - 1, ~r[-1] if dtype == torch.bool else r[-1] + 1)
    assert compare.compare_tensor(r, c) == compare.Comparison(False, "integer output differs") == oracle(r, c)


@pytest.mark.parametrize("dtype", DTYPES + [torch.int64, torch.bool], ids=str)
def test_empty(small_chunks, dtype):
    r = torch.empty(0, 3, dtype=dtype)
    assert compare.compare_tensor(r, r.clone()) == oracle(r, r.clone()) == compare.Comparison(True)


def test_mismatches_before_values(small_chunks):
    r = torch.randn(3 * CHUNK)
    for c in (torch.randn(3 * CHUNK + 1), r.reshape(3, CHUNK), r.double(), r.half(), r.tolist(), None):
        assert_same(compare.compare_tensor(r, c), oracle(r, c))
        assert not compare.compare_tensor(r, c).ok


def test_compare_outputs_chunked(small_chunks):
    a, b = _pair(torch.float32), _pair(torch.bfloat16, seed=1)
    assert compare.compare_outputs([a[0], b[0]], [a[1], b[1]]).ok
    res = compare.compare_outputs([a[0], b[0]], [a[1], _set(b[1], b[1].numel() - 1, 5.0)])
    assert not res.ok and res.reason.startswith("output 1: max abs error")


# --- intra-op threads ----------------------------------------------------------------------------------


@pytest.fixture
def two_threads():
    prev = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(prev)


def test_intra_op_threads_sets_and_restores(two_threads):
    with compare.intra_op_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError, match="boom"), compare.intra_op_threads(1):
        assert torch.get_num_threads() == 1
        raise RuntimeError("boom")
    assert torch.get_num_threads() == 2
    with compare.intra_op_threads(8):  # never more than the process's own setting
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == 2


def test_overlapping_comparisons_restore_the_setting_from_before_both(two_threads):
    # the local pool's slot threads compare at once; ends out of order must not leave a lowered count
    a, b = compare.intra_op_threads(1), compare.intra_op_threads(1)
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)
    assert torch.get_num_threads() == 1  # b still compares
    b.__exit__(None, None, None)
    assert torch.get_num_threads() == 2


def test_compare_threads_choice(monkeypatch):
    assert compare.compare_threads(1 << 18) == 1
    assert compare.compare_threads(compare.PARALLEL_MIN_ELEMENTS - 1) == 1
    for cpus, want in ((1, 1), (2, 1), (8, 2), (16, 4), (128, 4)):
        monkeypatch.setattr(compare, "_cpus", lambda cpus=cpus: cpus)
        assert compare.compare_threads(1 << 26) == want


def test_compare_tensor_runs_on_bounded_threads_and_restores(monkeypatch, two_threads):
    seen = []

    def fake(ref, cand, atol, rtol, scale):
        seen.append(torch.get_num_threads())
        raise RuntimeError("inside the comparison")

    monkeypatch.setattr(compare, "_compare_values", fake)
    r = torch.randn(10)
    with pytest.raises(RuntimeError, match="inside the comparison"):
        compare.compare_tensor(r, r.clone())
    assert seen == [1] and torch.get_num_threads() == 2
    monkeypatch.undo()
    assert compare.compare_tensor(r, r.clone()).ok and torch.get_num_threads() == 2
