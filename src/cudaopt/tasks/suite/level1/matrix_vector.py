"""fp32 matrix-vector product y = A @ x with x a (K x 1) column."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, x)


# Full size estimate: memory-bound, reads the 512 MB matrix once -> ~130 us eager at ~4 TB/s;
# memory ~512 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 138 us median, peak ~537 MB allocated.
m = 8192
k = 16384


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, 1)]


def get_init_inputs():
    return []


SMALL = {"m": 64, "k": 128}
