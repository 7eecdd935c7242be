"""1D convolution over long sequences, kernel 7, dilation 2, 'same' padding (nn.Conv1d), fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dilation: int):
        super().__init__()
        padding = dilation * (kernel_size - 1) // 2
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, dilation=dilation, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


# Full size estimate: 2*B*L*Cout*Cin*K = 15 GFLOP -> ~300-600 us eager (cuDNN fp32);
# memory 34 MB in + 67 MB out = ~100 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 451 us median, peak ~168 MB allocated.
batch_size = 16
in_channels = 64
out_channels = 128
kernel_size = 7
dilation = 2
length = 8192


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, dilation]


SMALL = {"batch_size": 2, "in_channels": 4, "out_channels": 6, "length": 64}
