"""Which earlier candidates go into a contrastive prompt (kept apart from storage).

Bucket sampling (CUDA-L1, Equation 1): successful candidates are grouped into score buckets of width
`width`; bucket i is chosen with probability softmax((mean_i - mean of bucket means) / tau); N distinct
buckets are drawn one after another (each draw renormalised over the buckets still left), and one
candidate is taken uniformly from each. Centring on the mean of bucket means keeps a task whose scores
sit around 10x from collapsing onto its top bucket.

The island variant (FunSearch/AlphaEvolve style): every candidate belongs to an island, a prompt draws
only from one island, and every `reset_every` rounds the worse half of the islands is emptied and
re-seeded with the best candidate of a surviving island. Membership is a pure function of the stored
(island, round, speedup) triples, so a resumed search sees the same islands.

Uniform random sampling is there for ablations.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Protocol, Sequence


@dataclass(frozen=True)
class Exemplar:
    id: int
    source: str
    speedup: float
    island: int = 0
    round: int = 0


class Sampler(Protocol):
    n: int

    def sample(self, exemplars: Sequence[Exemplar], rng: random.Random, *, island: int = 0, round: int = 0) -> list[Exemplar]: ...


def bucket_key(speedup: float, width: float) -> int:
    return math.floor(speedup / width)


def group_into_buckets(exemplars: Sequence[Exemplar], width: float) -> dict[int, list[Exemplar]]:
    buckets: dict[int, list[Exemplar]] = {}
    for e in exemplars:
        buckets.setdefault(bucket_key(e.speedup, width), []).append(e)
    return dict(sorted(buckets.items()))


def bucket_probabilities(bucket_means: Sequence[float], tau: float) -> list[float]:
    """Equation 1: softmax over centred bucket means at temperature tau."""
    if tau <= 0:
        raise ValueError("tau must be positive")
    mu = sum(bucket_means) / len(bucket_means)
    logits = [(m - mu) / tau for m in bucket_means]
    top = max(logits)  # subtracting the max changes nothing but keeps exp() finite
    weights = [math.exp(x - top) for x in logits]
    total = sum(weights)
    return [w / total for w in weights]


def draw_distinct(probabilities: Sequence[float], k: int, rng: random.Random) -> list[int]:
    """k distinct indices, drawn one at a time with the remaining probabilities renormalised."""
    left = list(range(len(probabilities)))
    chosen: list[int] = []
    for _ in range(min(k, len(left))):
        total = sum(probabilities[i] for i in left)
        x, acc = rng.random() * total, 0.0
        pick = left[-1]  # guards against rounding leaving x just above the last cumulative sum
        for i in left:
            acc += probabilities[i]
            if x < acc:
                pick = i
                break
        chosen.append(pick)
        left.remove(pick)
    return chosen


def _fill_up(picked: list[Exemplar], pool: Sequence[Exemplar], n: int, rng: random.Random) -> list[Exemplar]:
    """With fewer buckets than N, top up with other candidates so the prompt still shows N of them."""
    if len(picked) >= n:
        return picked
    taken = {e.id for e in picked}
    rest = [e for e in pool if e.id not in taken]
    return picked + rng.sample(rest, min(n - len(picked), len(rest)))


@dataclass(frozen=True)
class BucketSampler:
    n: int = 2
    width: float = 0.25  # bucket width in speedup units (1.00-1.25x, 1.25-1.50x, ...)
    tau: float = 1.0

    def probabilities(self, exemplars: Sequence[Exemplar]) -> dict[int, float]:
        buckets = group_into_buckets(exemplars, self.width)
        means = [sum(e.speedup for e in b) / len(b) for b in buckets.values()]
        return dict(zip(buckets, bucket_probabilities(means, self.tau))) if buckets else {}

    def sample(self, exemplars: Sequence[Exemplar], rng: random.Random, *, island: int = 0, round: int = 0) -> list[Exemplar]:
        if not exemplars:
            return []
        buckets = group_into_buckets(exemplars, self.width)
        keys = list(buckets)
        means = [sum(e.speedup for e in buckets[k]) / len(buckets[k]) for k in keys]
        chosen = draw_distinct(bucket_probabilities(means, self.tau), self.n, rng)
        picked = [rng.choice(buckets[keys[i]]) for i in chosen]
        return _fill_up(picked, exemplars, self.n, rng)


@dataclass(frozen=True)
class UniformSampler:
    n: int = 2

    def sample(self, exemplars: Sequence[Exemplar], rng: random.Random, *, island: int = 0, round: int = 0) -> list[Exemplar]:
        return rng.sample(list(exemplars), min(self.n, len(exemplars)))


def island_members(
    exemplars: Sequence[Exemplar], n_islands: int, reset_every: int, current_round: int, seed: int = 0
) -> dict[int, list[Exemplar]]:
    """Island membership as of `current_round`, replaying every reset boundary passed so far."""
    members: dict[int, list[Exemplar]] = {i: [] for i in range(n_islands)}
    ordered = sorted((e for e in exemplars if e.round <= current_round), key=lambda e: (e.round, e.id))
    boundaries = list(range(reset_every, current_round + 1, reset_every)) if reset_every > 0 else []
    pos = 0
    for boundary in boundaries + [None]:
        while pos < len(ordered) and (boundary is None or ordered[pos].round < boundary):
            e = ordered[pos]
            members[e.island % n_islands].append(e)
            pos += 1
        if boundary is None:
            break
        best = {i: max((e.speedup for e in m), default=-math.inf) for i, m in members.items()}
        ranked = sorted(members, key=lambda i: (best[i], -i))  # worst first; ties: higher index goes first
        losers, survivors = ranked[: n_islands // 2], ranked[n_islands // 2 :]
        rng = random.Random(seed * 1_000_003 + boundary)
        for i in losers:
            donor = rng.choice(survivors)
            seeds = [max(members[donor], key=lambda e: e.speedup)] if members[donor] else []
            members[i] = seeds
    return members


@dataclass(frozen=True)
class IslandSampler:
    n: int = 2
    n_islands: int = 4
    reset_every: int = 4  # rounds between culls of the worse half
    width: float = 0.25
    tau: float = 1.0
    seed: int = 0

    def sample(self, exemplars: Sequence[Exemplar], rng: random.Random, *, island: int = 0, round: int = 0) -> list[Exemplar]:
        members = island_members(exemplars, self.n_islands, self.reset_every, round, self.seed)[island % self.n_islands]
        # An island with nothing yet borrows from everyone, so its first prompt is still contrastive.
        pool = members if members else list(exemplars)
        return BucketSampler(self.n, self.width, self.tau).sample(pool, rng)


SAMPLERS = ("bucket", "island", "uniform")


def make_sampler(name: str = "bucket", *, n: int = 2, width: float = 0.25, tau: float = 1.0,
                 n_islands: int = 4, reset_every: int = 4, seed: int = 0) -> Sampler:
    if name == "bucket":
        return BucketSampler(n=n, width=width, tau=tau)
    if name == "island":
        return IslandSampler(n=n, n_islands=n_islands, reset_every=reset_every, width=width, tau=tau, seed=seed)
    if name == "uniform":
        return UniformSampler(n=n)
    raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")
