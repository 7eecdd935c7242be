"""LayerNorm over the last dimension (nn.LayerNorm, learned affine) followed by exact GELU, fp32."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        # Move the affine parameters off their (1, 0) start so that skipping them changes the output.
        with torch.no_grad():
            self.norm.weight.add_(0.5 * torch.randn(dim))
            self.norm.bias.add_(0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.norm(x))


# Full size estimate: layer_norm and gelu each read and write 134 MB (~540 MB traffic) -> ~140 us eager;
# one fused kernel moves 268 MB (~70 us); memory ~400 MB.
batch_size = 8192
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]


SMALL = {"batch_size": 4, "dim": 257}
