# cudaopt-redteam: category=none task=matmul_nn device=cpu expect=ok layer=none
"""Honest: torch.mm."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b)
