# cudaopt-redteam: category=none task=matmul_nn device=cpu expect=ok layer=none
"""Honest: einsum."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.einsum("mk,kn->mn", a, b)
