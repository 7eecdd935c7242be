"""Two-layer LSTM over a sequence (nn.LSTM, batch first), returning every time step's top-layer output, fp32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=num_layers, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)  # zero initial state
        return out


# Full size estimate: 2 layers x 128 sequential steps; 2*4*B*H*(I+H) per step = ~100 MFLOP, latency-bound
# -> ~1-2 ms eager (cuDNN); memory 4 MB in + 7 MB weights + 8 MB out + cuDNN workspace = ~50 MB.
# Measured on an H200 (torch 2.11, eager, no TF32, CUDA events): 5630 us median, peak ~212 MB allocated.
batch_size = 32
seq_len = 128
input_size = 256
hidden_size = 512
num_layers = 2


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]


SMALL = {"batch_size": 2, "seq_len": 6, "input_size": 8, "hidden_size": 16}
