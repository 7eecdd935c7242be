"""Batched matmul scaled by 1/sqrt(K) -> add a bias vector -> Tanh -> sum over the last dim, fp32."""
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(n))

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # The 1/sqrt(K) scale keeps the products ~N(0, 1), so tanh stays out of saturation.
        y = torch.bmm(a, b) * (1.0 / math.sqrt(a.shape[-1]))
        return torch.tanh(y + self.bias).sum(dim=-1)


# Full size estimate: bmm 8.6 GFLOP (~170 us fp32) + scale, bias, tanh, sum over 67 MB (~60 us)
# -> ~230 us eager; memory 34 + 34 MB in + 3 x 67 MB = ~270 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 373 us median, peak ~269 MB allocated.
batch_size = 64
m = 512
k = 256
n = 512


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return [n]


SMALL = {"batch_size": 2, "m": 6, "k": 16, "n": 10}
