# cudaopt-redteam: category=nondeterminism task=wide_row_mean device=cpu expect=incorrect_or_rejected layer=dynamic
"""Average a random half of the columns, with a private generator seeded from the OS: half the memory
traffic, an error (about 0.003) that passes allclose(atol=1e-2), and a different answer on every call.
It leaves the harness's own random generator alone."""
import torch
import torch.nn as nn

_gen = torch.Generator()
_gen.seed()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        cols = torch.randperm(n, generator=_gen)[: n // 2]
        return x.index_select(1, cols).mean(dim=1)
