"""RMSNorm over the last dimension written out op by op, with a learned per-feature weight, fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        # Not all ones, so that skipping the weight changes the output.
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean_sq = x.pow(2).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(mean_sq + self.eps) * self.weight


# Full size estimate: pow, mean, add, rsqrt, two muls over a 67 MB tensor (~470 MB traffic) -> ~130 us
# eager; one fused kernel moves 134 MB (~35 us); memory ~270 MB.
batch_size = 4096
dim = 4096
eps = 1e-6


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, eps]


SMALL = {"batch_size": 4, "dim": 257}
