"""2D convolution, 3x3 kernel, stride 1, padding 1, with bias (nn.Conv2d), fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


# Full size estimate: 2*B*H*W*Cout*Cin*9 = 19.3 GFLOP -> ~400-500 us eager (cuDNN fp32, no TF32);
# memory 67 MB in + 67 MB out + cuDNN workspace = ~200 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 549 us median, peak ~201 MB allocated.
batch_size = 16
in_channels = 64
out_channels = 64
kernel_size = 3
height = 128
width = 128


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]


SMALL = {"batch_size": 2, "in_channels": 4, "out_channels": 8, "height": 12, "width": 10}
