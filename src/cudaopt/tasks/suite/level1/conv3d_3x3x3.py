"""3D convolution, 3x3x3 kernel, stride 1, padding 1, with bias (nn.Conv3d), fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


# Full size estimate: 2*B*D*H*W*Cout*Cin*27 = 7.2 GFLOP -> ~200-400 us eager (cuDNN 3D convs are
# less efficient than 2D); memory 67 MB in + 134 MB out = ~200 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 584 us median, peak ~168 MB allocated.
batch_size = 4
in_channels = 16
out_channels = 32
depth = 32
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]


SMALL = {"batch_size": 1, "in_channels": 3, "out_channels": 4, "depth": 6, "height": 8, "width": 8}
