"""Mean of each row of a very wide matrix (a bandwidth-bound reduction whose outputs are small).

The outputs of a mean over 131072 standard-normal values are about 0.003, so a fixed atol of 1e-2 would
let an all-zero answer pass: this task exists to prove the evaluator's tolerances scale with the outputs.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1)


# Full size: 512 MB read, 4 KB written.
rows = 1024
cols = 131072


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []


SMALL = {"rows": 16, "cols": 131072}
