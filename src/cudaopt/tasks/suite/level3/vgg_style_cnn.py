"""Small VGG-style CNN: three conv/ReLU stages with max pooling, global average pool, linear classifier, fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, width: int, num_classes: int):
        super().__init__()
        w = width
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, w, 3, padding=1), nn.ReLU(),
            nn.Conv2d(w, w, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(),
            nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(2 * w, 4 * w, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(4 * w, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).mean(dim=(2, 3)))


# Full size estimate: five convs, 15 GFLOP (~400 us fp32) + ReLU/pool passes over ~34 MB activations
# (~100 us) -> ~500 us eager; memory 3 MB in + ~6 x 34 MB activations = ~210 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 819 us median, peak ~71 MB allocated.
batch_size = 16
in_channels = 3
width = 32
num_classes = 10
image_size = 128


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, width, num_classes]


SMALL = {"batch_size": 2, "width": 4, "image_size": 16}
