"""Two-level U-Net block: conv encoder, max-pool down, conv bottleneck, transposed-conv up, skip concat, conv decoder, 1x1 head, fp32."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(),
        nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(),
    )


class Model(nn.Module):
    def __init__(self, in_channels: int, width: int, out_channels: int):
        super().__init__()
        self.encoder = double_conv(in_channels, width)
        self.bottleneck = double_conv(width, 2 * width)
        self.up = nn.ConvTranspose2d(2 * width, width, kernel_size=2, stride=2)
        self.decoder = nn.Sequential(nn.Conv2d(2 * width, width, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(width, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = self.encoder(x)
        y = self.bottleneck(F.max_pool2d(skip, 2))
        y = torch.cat([self.up(y), skip], dim=1)
        return self.head(self.decoder(y))


# Full size estimate: convs ~11.6 GFLOP (~350 us fp32, the 3-channel first conv runs poorly)
# + ReLU/pool/concat over ~17-34 MB activations (~100 us) -> ~450 us eager;
# memory 1.6 MB in + ~8 x 17-34 MB activations = ~200 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 739 us median, peak ~87 MB allocated.
batch_size = 8
in_channels = 3
width = 32
out_channels = 2
image_size = 128


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, width, out_channels]


SMALL = {"batch_size": 2, "width": 4, "image_size": 8}
