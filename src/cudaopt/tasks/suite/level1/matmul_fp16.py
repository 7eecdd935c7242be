"""Half-precision (fp16) square matrix multiplication C = A @ B on tensor cores."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


# Full size estimate: 2*N^3 = 137 GFLOP -> ~200 us eager at ~700 TFLOP/s fp16 tensor cores;
# memory 3 * 32 MB = 96 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 194 us median, peak ~134 MB allocated.
n = 4096


def get_inputs():
    return [torch.randn(n, n, dtype=torch.float16), torch.randn(n, n, dtype=torch.float16)]


def get_init_inputs():
    return []


# fp16 output: one rounding step of the result is ~1e-3 relative, so 1e-2 leaves room for a
# different (still fp32-accumulated) summation order.
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SMALL = {"n": 64}
