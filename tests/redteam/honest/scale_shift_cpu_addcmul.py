# cudaopt-redteam: category=none task=scale_shift device=cpu expect=ok layer=none
"""Honest: one fused addcmul into a freshly allocated output."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        shift = torch.full_like(x, self.beta)
        torch.addcmul(shift, x, torch.tensor(self.alpha, dtype=x.dtype), out=out)
        return out
