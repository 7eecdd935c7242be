"""Maximum over the middle dimension of a 3D tensor (torch.amax over dim 1), fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x, dim=self.dim)


# Full size estimate: memory-bound, 537 MB read, 128 KB written -> ~140 us eager; memory ~540 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 141 us median, peak ~688 MB allocated.
batch_size = 128
reduce_size = 4096
inner_size = 256
dim = 1


def get_inputs():
    return [torch.randn(batch_size, reduce_size, inner_size)]


def get_init_inputs():
    return [dim]


SMALL = {"batch_size": 3, "reduce_size": 50, "inner_size": 7}
