"""Transposed 2D convolution that doubles the resolution (kernel 4, stride 2, padding 1), fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size=4, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(x)


# Full size estimate: 2*B*H*W*Cin*Cout*16 = 8.6 GFLOP -> ~200-300 us eager (cuDNN fp32);
# memory 34 MB in + 67 MB out = ~100 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 884 us median, peak ~168 MB allocated.
batch_size = 32
in_channels = 64
out_channels = 32
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]


SMALL = {"batch_size": 2, "in_channels": 4, "out_channels": 3, "height": 6, "width": 5}
