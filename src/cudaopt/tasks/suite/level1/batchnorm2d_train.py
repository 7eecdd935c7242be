"""2D batch normalization in training mode (batch statistics over N, H, W per channel), fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        # Training mode: the output uses the statistics of this batch, so every call is a full
        # two-pass reduction plus normalisation (the running-stat update does not affect the output).
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


# Full size estimate: 268 MB input read twice + 268 MB written (~800 MB traffic) -> ~200 us eager;
# memory ~540 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 566 us median, peak ~805 MB allocated.
batch_size = 16
channels = 64
height = 256
width = 256


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]


SMALL = {"batch_size": 3, "channels": 4, "height": 8, "width": 6}
