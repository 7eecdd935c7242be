"""Reverse (suffix) cumulative sum along the last dimension: y[i] = sum_{j >= i} x[j], fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(torch.cumsum(torch.flip(x, [self.dim]), dim=self.dim), [self.dim])


# Full size estimate: flip, cumsum, flip each read and write 268 MB (~1.6 GB traffic) -> ~400 us eager;
# one fused kernel moves 537 MB (~140 us); memory ~800 MB at peak (input + two temporaries).
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 659 us median, peak ~1074 MB allocated.
rows = 32768
cols = 2048
dim = 1


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [dim]


SMALL = {"rows": 16, "cols": 100}
