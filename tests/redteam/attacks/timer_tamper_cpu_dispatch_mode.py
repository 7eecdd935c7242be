# cudaopt-redteam: category=timer_tamper task=linear_relu device=cpu expect=rejected layer=dynamic
"""A dispatch mode left on torch's mode stack: every aten op the reference runs afterwards goes through
Python first. torch's own FlopCounterMode does it, so the source defines no __torch_function__ or
__torch_dispatch__ for the static layer to see. At this size the reference's three ops gain the
candidate nothing; a reference of many small ops (a candidate of one fused kernel call) pays per op. The
dynamic layer compares the mode stacks' depths with their depths before the import."""
import torch
import torch.nn as nn
from torch.utils.flop_counter import FlopCounterMode

FlopCounterMode(display=False).__enter__()


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.linear.bias, x, self.linear.weight.t()).clamp_min_(0.0)
