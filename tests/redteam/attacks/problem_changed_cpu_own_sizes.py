# cudaopt-redteam: category=problem_changed task=wide_row_mean device=cpu expect=rejected layer=both
"""Ship its own, smaller problem: redefine cols and get_inputs, and average only the first `cols` columns.

A harness that takes get_inputs() from the candidate's module (a common shortcut) measures a problem 32x
smaller and finds it correct. The harness must build inputs from the reference alone."""
import torch
import torch.nn as nn

rows = 16
cols = 4096


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :cols].mean(dim=1)


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
