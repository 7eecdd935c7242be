"""Sum over one dimension of a 3D tensor, keeping it (torch.sum(x, dim, keepdim=True)), fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


# Full size estimate: memory-bound, 537 MB read, 262 KB written -> ~140 us eager; memory ~540 MB.
# One eager op: a custom kernel can at best match the bandwidth torch already reaches here.
batch_size = 64
reduce_size = 2048
inner_size = 1024
dim = 1


def get_inputs():
    return [torch.randn(batch_size, reduce_size, inner_size)]


def get_init_inputs():
    return [dim]


SMALL = {"batch_size": 3, "reduce_size": 50, "inner_size": 33}
