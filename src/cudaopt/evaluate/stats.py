"""Timing statistics: the seeds' protocol for turning paired rounds into one trustworthy speedup.

Paired rounds (reference and candidate back to back, in random order) give one ratio t_ref / t_cand
each. The rounds, in time order, are cut into seven buckets; the bucket means (geometric: see estimate())
must agree (variance gate),
their median is the speedup, and it is rounded toward 1.00 so noise never reads as a gain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median

N_BUCKETS = 7  # the seeds' bucket count; also the df+1 of the interval below
VARIANCE_GATE = 0.005  # inter-bucket variance above which a measurement is not trusted (seeds)
# Bucket averages are trimmed means: one round in which the OS or the driver preempted a call gives a
# ratio of 100x or 0.01x, and a plain mean lets that single round move a whole bucket. Trimming 10% at
# each end keeps the seeds' bucket-mean-median structure while bounding what one round can do.
TRIM = 0.10
VERIFY_ABOVE = 3.0  # speedups above this are re-measured in a fresh process (seeds)
VERIFY_PREVIOUS_FACTOR = 2.0  # ... and those above twice the task's previous best
VERIFY_TOLERANCE = 0.10  # the re-measurement must agree within 10% (seeds)
# Two-sided 95% Student-t quantiles by degrees of freedom; df = buckets - 1.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def round_toward_one(x: float) -> float:
    """Truncate to two decimals toward 1.00: 1.118 -> 1.11, 0.992 -> 1.00, 0.987 -> 0.99."""
    if not math.isfinite(x):
        return x
    eps = 1e-9  # keeps 1.11 (stored as 1.10999...) at 1.11
    if x >= 1.0:
        return math.floor(x * 100 + eps) / 100
    return math.ceil(x * 100 - eps) / 100


def trimmed_mean(xs: list[float], trim: float = TRIM) -> float:
    """Mean after dropping the `trim` share at each end (at least one each side once there are 10)."""
    s = sorted(xs)
    k = int(len(s) * trim)
    s = s[k: len(s) - k] if k else s
    return sum(s) / len(s)


def bucket_means(values: list[float], n_buckets: int = N_BUCKETS, trim: float = TRIM) -> list[float]:
    """Trimmed means of `n_buckets` contiguous, time-ordered groups of nearly equal size."""
    n = len(values)
    if n < n_buckets:
        raise ValueError(f"need at least {n_buckets} rounds for {n_buckets} buckets, got {n}")
    edges = [round(i * n / n_buckets) for i in range(n_buckets + 1)]
    return [trimmed_mean(values[a:b], trim) for a, b in zip(edges, edges[1:])]


def variance(xs: list[float]) -> float:
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1) if len(xs) > 1 else 0.0


@dataclass(frozen=True)
class SpeedupEstimate:
    raw: float  # median of bucket means
    rounded: float
    ci_low: float
    ci_high: float
    bucket_means: tuple[float, ...]
    bucket_variance: float
    stable: bool  # passed the variance gate
    rounds: int

    @property
    def rel_half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2 / self.raw if self.raw > 0 else float("inf")


def estimate(ratios: list[float], gate: float = VARIANCE_GATE, n_buckets: int = N_BUCKETS, trim: float = TRIM) -> SpeedupEstimate:
    """Speedup from time-ordered per-round ratios t_ref / t_cand.

    The interval is a 95% Student-t interval over the bucket means, centred on their median: it
    carries the drift between time buckets, not only the round-to-round scatter.

    A bucket's mean is taken over log ratios (a trimmed geometric mean). The arithmetic mean of t_ref /
    t_cand reads above 1 whenever the ratios scatter, even between identical sides: a round at 1.15 and
    its mirror at 1/1.15 average to 1.0098. On the H200 that was 47 of 58 A/A tasks above 1, mean 1.0048,
    8 of them rounding to 1.01-1.03. On the log scale the two sides are symmetric: swapping them gives
    exactly the inverse speedup.
    """
    logs = [math.log(max(r, 1e-12)) for r in ratios]  # a zero time would be no measurement at all
    means = [math.exp(m) for m in bucket_means(logs, n_buckets, trim)]
    med = median(means)
    var = variance(means)
    half = _T95.get(n_buckets - 1, 1.96) * math.sqrt(var / n_buckets)
    return SpeedupEstimate(
        raw=med,
        rounded=round_toward_one(med),
        ci_low=med - half,
        ci_high=med + half,
        bucket_means=tuple(means),
        bucket_variance=var,
        stable=var <= gate,
        rounds=len(ratios),
    )


def balanced_orders(rng):
    """Which side runs first in each paired round: True for the reference. Each pair of rounds (0-1, 2-3,
    ...) holds one round of each order, the pair's order drawn at random. A position effect (the first call
    of a round warmer or colder than the second) then cancels within every pair, so within every bucket
    of an even number of rounds; with an independent coin per round it did not: the imbalance of a short
    run (30 of 70 rounds reference-first) turned a first-call effect into an A/A bias of over 1%."""
    while True:
        first = rng.random() < 0.5
        yield first
        yield not first


def needs_verification(speedup: float, previous_best: float | None) -> bool:
    """The seeds' rule: re-measure anything above 3x, or above twice the task's previous best."""
    if speedup > VERIFY_ABOVE:
        return True
    return previous_best is not None and previous_best > 0 and speedup > VERIFY_PREVIOUS_FACTOR * previous_best


def verification_agrees(first: float, second: float, tolerance: float = VERIFY_TOLERANCE) -> bool:
    return abs(second - first) <= tolerance * first


def sign_test_p(k: int, n: int) -> float:
    """Two-sided binomial p-value for k of n A/A ratios above 1 when either side is equally likely to win:
    a small p is a side bias that the rounding may still hide task by task (the H200 A/A read 47 of 58
    above 1 before session 5's fixes, p ~ 2e-6; 32 of 58 after, p = 0.51)."""
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail)
