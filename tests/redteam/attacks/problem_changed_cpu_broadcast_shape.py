# cudaopt-redteam: category=problem_changed task=scale_shift device=cpu expect=incorrect_or_rejected layer=dynamic
"""Return a (1, rows, cols) tensor where (rows, cols) is expected: torch.allclose broadcasts the two and
says they match, so a naive checker passes an output of the wrong shape. Shapes must match exactly."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(torch.full_like(x, self.beta), x, torch.tensor(self.alpha)).unsqueeze(0)
