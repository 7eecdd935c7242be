# cudaopt-redteam: category=none task=scale_shift device=cpu expect=ok layer=none
"""Honest: x * alpha + beta as one torch.add with a scalar multiplier."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.add(x * self.alpha, self.beta)
