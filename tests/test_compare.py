import pytest
import torch

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
