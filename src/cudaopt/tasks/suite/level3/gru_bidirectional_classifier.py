"""Bidirectional GRU encoder -> mean over time -> Linear classifier logits, fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_classes: int):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden_size, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)  # (batch, time, 2 * hidden)
        return self.head(out.mean(dim=1))


# Full size estimate: 2 directions x 256 sequential steps, latency-bound -> ~1-3 ms eager (cuDNN);
# memory 8 MB in + 1.2 MB weights + 34 MB GRU output + workspace = ~100 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 8976 us median, peak ~485 MB allocated.
batch_size = 64
seq_len = 256
input_size = 128
hidden_size = 256
num_classes = 32


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_classes]


SMALL = {"batch_size": 3, "seq_len": 5, "input_size": 8, "hidden_size": 12, "num_classes": 6}
