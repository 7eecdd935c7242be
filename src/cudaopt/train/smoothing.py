"""Reward smoothing (CUDA-L1, Section 3.2) and the group-relative advantage it feeds (Equation 4).

Smoothing: r_norm = (r - mu) / sigma with mu, sigma the running mean and (population) standard deviation
of every raw reward seen so far, the current batch included; r_smooth = clip(r_norm, -k, k), k = 1.5.
A hacked 50x speedup therefore counts no more than any other reward 1.5 deviations above the mean.

TRL's GRPOTrainer then computes, per group of G completions of one prompt,
A_i = (r_i - mean(r)) / (std(r) + 1e-4) with Bessel's correction in std. `group_advantages` is that
formula written out, so the tests can pin both steps to hand-computed numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

TRL_ADVANTAGE_EPS = 1e-4


@dataclass
class RewardSmoother:
    """Running mean/deviation (Welford) of raw rewards, and the clipped z-score against them."""

    k: float = 1.5
    count: int = 0
    mean: float = 0.0
    m2: float = 0.0  # sum of squared deviations from the running mean

    def __post_init__(self) -> None:
        if self.k <= 0:
            raise ValueError(f"the clip bound k must be positive, got {self.k}")

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / self.count) if self.count else 0.0

    def update(self, rewards: Sequence[float]) -> None:
        for r in rewards:
            self.count += 1
            delta = r - self.mean
            self.mean += delta / self.count
            self.m2 += delta * (r - self.mean)

    def transform(self, rewards: Sequence[float]) -> list[float]:
        sigma = self.std
        if sigma <= 1e-12:  # every reward so far is the same: nothing to prefer
            return [0.0 for _ in rewards]
        return [max(-self.k, min(self.k, (r - self.mean) / sigma)) for r in rewards]

    def __call__(self, rewards: Sequence[float]) -> list[float]:
        """Add the batch to the running statistics, then smooth it."""
        self.update(rewards)
        return self.transform(rewards)

    def state(self) -> dict:
        return {"k": self.k, "count": self.count, "mean": self.mean, "m2": self.m2}

    @classmethod
    def from_state(cls, d: dict) -> "RewardSmoother":
        return cls(k=float(d["k"]), count=int(d["count"]), mean=float(d["mean"]), m2=float(d["m2"]))


def group_advantages(rewards: Sequence[float], group_size: int, eps: float = TRL_ADVANTAGE_EPS) -> list[float]:
    """TRL's default ('group' scaling) advantage: within each consecutive group of `group_size`."""
    if group_size < 2 or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size} (need group_size >= 2)")
    out: list[float] = []
    for start in range(0, len(rewards), group_size):
        g = rewards[start : start + group_size]
        mu = sum(g) / group_size
        sd = math.sqrt(sum((r - mu) ** 2 for r in g) / (group_size - 1))
        out += [(r - mu) / (sd + eps) for r in g]
    return out
