"""ResNet basic block with stride-2 downsampling: two 3x3 conv+BatchNorm (training mode), 1x1 projection shortcut, ReLU, fp32."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Conv2d(in_channels, out_channels, 1, stride=2, bias=False)
        self.bn_shortcut = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.bn_shortcut(self.shortcut(x)))


# Full size estimate: convs 3.7 + 7.4 + 0.4 = 11.5 GFLOP (~300 us fp32) + three batch norms and the
# elementwise tail over 13 MB tensors (~50 us) -> ~350 us eager; memory 26 MB in + ~8 x 13 MB = ~130 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 410 us median, peak ~244 MB allocated.
batch_size = 32
in_channels = 64
out_channels = 128
height = 56
width = 56


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]


SMALL = {"batch_size": 2, "in_channels": 3, "out_channels": 4, "height": 8, "width": 6}
