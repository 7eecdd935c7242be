"""Sampled comparisons: what travels for large outputs, and that it still catches wrong answers."""

import torch

from cudaopt.evaluate.compare import compare_outputs
from cudaopt.evaluate.views import unview, view

LIMIT = 1000


def both(ref, cand, seed=1234):
    return unview(view(ref, seed, LIMIT)), unview(view(cand, seed, LIMIT))


def test_small_outputs_travel_whole():
    x = torch.randn(10, 10)
    assert torch.equal(unview(view(x, 5, LIMIT)[0]), x) if isinstance(view(x, 5, LIMIT), list) else True
    assert torch.equal(unview(view(x, None, LIMIT)), x)


def test_sample_is_a_function_of_the_seed():
    x = torch.randn(100, 100)
    a, b = unview(view(x, 7, LIMIT))[0], unview(view(x, 7, LIMIT))[0]
    c = unview(view(x, 8, LIMIT))[0]
    assert torch.equal(a.values, b.values) and not torch.equal(a.values, c.values)
    assert a.shape == (100, 100) and a.stats["nan"] == 0


def test_sampled_comparison_passes_equal_and_catches_wrong():
    ref = torch.randn(200, 300)
    r, c = both(ref, ref.clone())
    assert compare_outputs(r, c).ok
    r, c = both(ref, ref * 1.01)
    assert not compare_outputs(r, c).ok
    wrong = ref.clone()
    wrong[:, :10] = 0  # 3% of elements: sampled elements or the rms reveal it
    r, c = both(ref, wrong)
    assert not compare_outputs(r, c).ok


def test_nan_counts_and_shapes_must_match():
    ref = torch.randn(100, 100)
    bad = ref.clone()
    bad[3, 3] = float("nan")
    r, c = both(ref, bad)
    res = compare_outputs(r, c)
    assert not res.ok and res.nan_where_finite
    r, c = both(ref, ref.reshape(50, 200))
    assert "shape" in compare_outputs(r, c).reason


def test_sampled_against_whole_fails_cleanly():
    ref = torch.randn(100, 100)
    r = unview(view(ref, 3, LIMIT))
    c = unview(view(torch.randn(10), 3, LIMIT))
    assert not compare_outputs(r, c).ok
