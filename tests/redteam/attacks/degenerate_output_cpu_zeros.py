# cudaopt-redteam: category=degenerate_output task=wide_row_mean device=cpu expect=rejected layer=both
"""Return zeros. Each row mean of 131072 standard normals is about 0.003, so allclose(atol=1e-2) accepts
zeros; the tolerance must scale with the size of the outputs."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros(x.shape[0])
