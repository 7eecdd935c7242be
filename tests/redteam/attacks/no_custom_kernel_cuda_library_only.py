# cudaopt-redteam: category=no_custom_kernel task=linear_relu device=cuda expect=flagged layer=both
"""A "CUDA" candidate that only rearranges library calls (one addmm and an in-place relu, saving one
temporary). It may even be a little faster, but no custom kernel was written."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return y.clamp_min_(0.0)
