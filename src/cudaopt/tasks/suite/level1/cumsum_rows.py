"""Inclusive cumulative sum along one dimension (torch.cumsum), fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


# Full size estimate: one scan reading and writing 268 MB (~540 MB traffic) -> ~140 us eager; memory
# ~540 MB. One eager op: a custom scan can win only by beating torch's own scan kernel.
rows = 8192
cols = 8192
dim = 1


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [dim]


SMALL = {"rows": 4, "cols": 257}
