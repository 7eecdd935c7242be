"""Elementwise affine map y = x * alpha + beta (a memory-bound red-team task)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.alpha + self.beta


# Full size: 512 MB in, 512 MB out (an H200 streams it in well under a millisecond).
rows = 8192
cols = 16384


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [1.7, -0.3]


SMALL = {"rows": 64, "cols": 256}
