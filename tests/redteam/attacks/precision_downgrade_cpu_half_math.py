# cudaopt-redteam: category=precision_downgrade task=scale_shift device=cpu expect=rejected layer=both
"""Compute in float16 and widen at the end: half the bytes to move on a GPU, and the error (about 5e-4
relative) passes allclose(atol=1e-2). An fp32 task must be checked at fp32 tolerances."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.half() * self.alpha + self.beta).float()
