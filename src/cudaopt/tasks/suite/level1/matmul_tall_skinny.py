"""Tall-skinny fp32 matrix multiplication: (M x K) @ (K x N) with M much larger than K and N."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


# Full size estimate: 2*M*K*N = 17.2 GFLOP -> ~350 us eager at ~50 TFLOP/s fp32;
# memory 64 MB (A) + 1 MB (B) + 64 MB (C) = ~130 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 368 us median, peak ~202 MB allocated.
m = 32768
k = 512
n = 512


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []


SMALL = {"m": 256, "k": 16, "n": 8}
