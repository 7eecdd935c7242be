"""Log-sum-exp of each row of logits with a spread of about 8 (a softmax normaliser).

The stable form subtracts the row maximum before exponentiating. Skipping that pass is exact enough for
these logits (exp(40) is far from float32's limit of about exp(88)), and overflows to inf once the inputs
are four times larger: the shape of a shortcut that only holds for one input distribution.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(x, dim=1)


# Full size: 256 MB read, 64 KB written.
rows = 16384
cols = 4096


def get_inputs():
    return [torch.randn(rows, cols) * 8.0]


def get_init_inputs():
    return []


SMALL = {"rows": 64, "cols": 4096}
