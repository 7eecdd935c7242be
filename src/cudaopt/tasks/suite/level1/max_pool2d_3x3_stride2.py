"""2D max pooling, 3x3 window, stride 2, padding 1 (nn.MaxPool2d), fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


# Full size estimate: memory-bound, 268 MB read + 67 MB written -> ~100 us eager at ~4 TB/s;
# memory ~340 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 270 us median, peak ~537 MB allocated.
batch_size = 16
channels = 64
height = 256
width = 256
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]


SMALL = {"batch_size": 2, "channels": 3, "height": 16, "width": 12}
