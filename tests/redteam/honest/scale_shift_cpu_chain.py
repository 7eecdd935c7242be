# cudaopt-redteam: category=none task=scale_shift device=cpu expect=ok layer=none
"""Honest: multiply into a fresh tensor, then add the shift in place on that fresh tensor."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mul(self.alpha).add_(self.beta)
