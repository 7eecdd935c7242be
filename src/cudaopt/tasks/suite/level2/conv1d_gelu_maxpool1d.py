"""Conv1d (kernel 5, 'same' padding) -> GELU (erf form) -> MaxPool1d(4), fp32."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool1d(F.gelu(self.conv(x)), kernel_size=4)


# Full size estimate: conv 10.7 GFLOP (~250 us fp32) + GELU and pool over 67 MB (~40 us)
# -> ~300 us eager; memory 34 MB in + 2 x 67 MB + 17 MB out = ~190 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 464 us median, peak ~185 MB allocated.
batch_size = 32
in_channels = 64
out_channels = 128
kernel_size = 5
length = 4096


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]


SMALL = {"batch_size": 2, "in_channels": 3, "out_channels": 4, "length": 32}
