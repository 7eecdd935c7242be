# cudaopt-redteam: category=timer_tamper task=linear_relu device=cuda expect=rejected layer=dynamic
"""The CUDA form of timer_tamper_cpu_grad_left_on: grad mode left on after each call, so the reference's
next call records an autograd graph (host work between its launches, saved activations). Library
kernels only (flagged no_custom_kernel, which alone would not reject)."""
import torch
import torch.nn as nn

_grad = getattr(torch, "set_grad" + "_enabled")


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            out = torch.addmm(self.linear.bias, x, self.linear.weight.t()).clamp_min_(0.0)
        _grad(True)
        return out
