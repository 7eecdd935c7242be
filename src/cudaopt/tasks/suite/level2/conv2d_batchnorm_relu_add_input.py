"""Conv2d 3x3 (same channels) -> BatchNorm2d in training mode -> ReLU -> add the block input, fp32."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.conv(x))) + x


# Full size estimate: conv 10.9 GFLOP (~250 us fp32) + BatchNorm, ReLU, add over 38 MB (~40 us)
# -> ~300 us eager; memory 38 MB in + 3 x 38 MB = ~150 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 519 us median, peak ~151 MB allocated.
batch_size = 16
channels = 64
height = 96
width = 96


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]


SMALL = {"batch_size": 2, "channels": 4, "height": 6, "width": 7}
