"""Conv2d 3x3 -> ReLU -> MaxPool2d(2) -> add a per-channel bias, fp32."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)
        self.channel_bias = nn.Parameter(0.5 * torch.randn(out_channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.conv(x))
        y = F.max_pool2d(y, kernel_size=2)
        return y + self.channel_bias


# Full size estimate: conv 9.7 GFLOP (~250 us fp32) + ReLU/pool over 67 MB (~40 us) -> ~300 us eager;
# memory 34 MB in + 2 x 67 MB intermediates + 17 MB out = ~190 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 469 us median, peak ~185 MB allocated.
batch_size = 16
in_channels = 32
out_channels = 64
height = 128
width = 128


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]


SMALL = {"batch_size": 2, "in_channels": 3, "out_channels": 5, "height": 10, "width": 8}
