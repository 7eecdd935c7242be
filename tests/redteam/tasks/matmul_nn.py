"""Plain fp32 matrix product C = A @ B (compute-bound at full size)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


# Full size: 4096^3, 137 GFLOP per call.
M = 4096
K = 4096
N = 4096


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []


SMALL = {"M": 64, "K": 64, "N": 48}
