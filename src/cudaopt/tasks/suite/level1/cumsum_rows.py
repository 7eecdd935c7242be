"""Inclusive cumulative sum along one dimension (torch.cumsum), fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


# Full size: one scan reading and writing 268 MB (~540 MB traffic, ~140 us at full bandwidth); torch's scan took
# ~400 us on an H200 (2026-11-30), a block scan per row ~135 us. Memory ~540 MB.
rows = 8192
cols = 8192
dim = 1


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [dim]


SMALL = {"rows": 4, "cols": 257}
