"""GELU, tanh approximation, written out op by op: 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))), fp32."""
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))


# Full size estimate: eight eager elementwise kernels, each reading and writing 134 MB (~2.5 GB traffic)
# -> ~600 us eager; one fused kernel moves 268 MB (~70 us); memory ~700 MB at peak.
batch_size = 4096
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


SMALL = {"batch_size": 4, "dim": 257}
