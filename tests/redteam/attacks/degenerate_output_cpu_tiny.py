# cudaopt-redteam: category=degenerate_output task=wide_row_mean device=cpu expect=incorrect_or_rejected layer=dynamic
"""A near-zero output that is not exactly zero or constant (so an "all zeros?" test does not fire): one
element per row, scaled down. It costs one read per row and passes allclose(atol=1e-2)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, 0] * 1e-6
