"""Square fp32 matrix multiplication C = A @ B."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


# Full size estimate: 2*N^3 = 17.2 GFLOP -> ~350 us eager at ~50 TFLOP/s fp32 (no TF32);
# memory 3 * 16 MB = 48 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 360 us median, peak ~67 MB allocated.
n = 2048


def get_inputs():
    return [torch.randn(n, n), torch.randn(n, n)]


def get_init_inputs():
    return []


SMALL = {"n": 64}
