"""The worker's exact-equality check (`_same`), used for inputs the candidate must not write and outputs
that must not change after their call: NaN equals NaN, nothing else is loosened."""

import pytest
import torch

from cudaopt.evaluate.child import _same

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("a,b,want", [
    (torch.tensor([1.0, NAN, 3.0]), torch.tensor([1.0, NAN, 3.0]), True),
    (torch.tensor([1.0, NAN, 3.0]), torch.tensor([1.0, NAN, 4.0]), False),  # a write beside a NaN is a write
    (torch.tensor([1.0, NAN, 3.0]), torch.tensor([1.0, 2.0, 3.0]), False),
    (torch.tensor([INF, NAN]), torch.tensor([3.4028234663852886e38, NAN]), False),  # inf is not the largest float
    (torch.tensor([-INF]), torch.tensor([-INF]), True),
    (torch.tensor([-0.0]), torch.tensor([0.0]), True),
    (torch.tensor([1, 2]), torch.tensor([1, 2]), True),
    (torch.tensor([1, 2]), torch.tensor([1, 3]), False),
    (torch.zeros(2, 2), torch.zeros(4), False),
    (torch.zeros(3, dtype=torch.float16), torch.zeros(3, dtype=torch.float32), False),
    (torch.tensor([NAN], dtype=torch.bfloat16), torch.tensor([NAN], dtype=torch.bfloat16), True),
])
def test_same(a, b, want):
    assert _same(a, b) is want
