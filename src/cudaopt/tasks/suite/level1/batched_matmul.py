"""Batched fp32 matrix multiplication: (B x M x K) @ (B x K x N) with torch.bmm."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


# Full size estimate: 2*B*M*K*N = 8.6 GFLOP -> ~170 us eager at ~50 TFLOP/s fp32;
# memory 64 MB + 64 MB + 32 MB = 160 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 191 us median, peak ~235 MB allocated.
batch_size = 128
m = 256
k = 512
n = 256


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []


SMALL = {"batch_size": 3, "m": 16, "k": 24, "n": 8}
