"""fp32 matrix multiplication with a transposed first operand: C = A^T @ B, A stored as (K x M)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a.T, b)


# Full size estimate: 2*M*K*N = 17.2 GFLOP -> ~350 us eager at ~50 TFLOP/s fp32;
# memory 32 MB (A) + 16 MB (B) + 8 MB (C) = 56 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 364 us median, peak ~67 MB allocated.
k = 4096
m = 2048
n = 1024


def get_inputs():
    return [torch.randn(k, m), torch.randn(k, n)]


def get_init_inputs():
    return []


SMALL = {"k": 48, "m": 32, "n": 16}
