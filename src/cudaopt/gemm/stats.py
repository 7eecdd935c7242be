"""Speedup statistics over shapes, as the CUDA-L2 seed reports them, plus the sturdier ones.

For per-shape times t_ref and t_ours: the seed's mean of (t_ref / t_ours - 1), the geometric mean
speedup minus one, the median ratio and the win rate (ratio > 1), overall and per work class.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from cudaopt.gemm.shapes import WORK_CLASS_NAMES, Shape, work_class


@dataclass(frozen=True)
class SpeedupSummary:
    baseline: str
    group: str  # "all" or a work-class name
    n: int
    mean_speedup: float  # mean of (t_ref / t_ours - 1): the seed's number
    geomean_speedup: float  # exp(mean(log ratio)) - 1
    median_ratio: float
    win_rate: float  # fraction of shapes with ratio > 1
    min_ratio: float


def ratios(ref_times: dict[Shape, float], our_times: dict[Shape, float]) -> dict[Shape, float]:
    """t_ref / t_ours for shapes timed on both sides (finite, positive times only)."""
    out = {}
    for s, t_ref in ref_times.items():
        t_ours = our_times.get(s)
        if t_ours and t_ref and math.isfinite(t_ref) and math.isfinite(t_ours) and t_ref > 0 and t_ours > 0:
            out[s] = t_ref / t_ours
    return out


def summarize(baseline: str, group: str, values: list[float]) -> SpeedupSummary:
    if not values:
        nan = float("nan")
        return SpeedupSummary(baseline, group, 0, nan, nan, nan, nan, nan)
    return SpeedupSummary(
        baseline=baseline,
        group=group,
        n=len(values),
        mean_speedup=statistics.fmean(v - 1 for v in values),
        geomean_speedup=math.exp(statistics.fmean(math.log(v) for v in values)) - 1,
        median_ratio=statistics.median(values),
        win_rate=sum(v > 1 for v in values) / len(values),
        min_ratio=min(values),
    )


def class_groups(shape_ratios: dict[Shape, float]) -> list[tuple[str, list[float]]]:
    """("all", every ratio), then (work class, its ratios) for each work class, in class order (empty ones too)."""
    return [("all", list(shape_ratios.values()))] + [
        (name, [r for s, r in shape_ratios.items() if work_class(s) == name]) for name in WORK_CLASS_NAMES]


def summarize_by_class(baseline: str, shape_ratios: dict[Shape, float]) -> list[SpeedupSummary]:
    """One summary over all shapes, then one per non-empty work class, in class order."""
    return [summarize(baseline, name, vals) for name, vals in class_groups(shape_ratios) if vals or name == "all"]


# Paired comparisons: (name, reference candidates (the fastest of them per round), ours candidate).
PAIRS = (("ours vs torch", ("torch",), "ours"),
         ("ours vs lt_auto_max", ("lt_auto_nn", "lt_auto_tn"), "ours"),
         ("dispatch vs torch", ("torch",), "dispatch"),
         # (session 39) the floor's comparison: per-shape medians taken apart carry the round-to-round clock changes
         # under the power cap (the run's A/A sd 1.1%, so a tie reads under 0.98x on ~4% of shapes); paired they cancel
         ("dispatch vs lt_auto_max", ("lt_auto_nn", "lt_auto_tn"), "dispatch"),
         # (session 39, CUDAOPT_GEMM_BENCH_BT=1) our B^T twins against cuBLASLt on the same B^T, and against ours
         ("ours_bt vs lt_auto_tn", ("lt_auto_tn",), "ours_bt"),
         ("ours_bt vs ours", ("ours",), "ours_bt"),
         # (session 42) hgemm's B^T route (the caller holds B transposed) against that caller's baselines
         ("dispatch_bt vs torch_bt", ("torch_bt",), "dispatch_bt"),
         ("dispatch_bt vs lt_auto_tn", ("lt_auto_tn",), "dispatch_bt"),
         # (session 49) which layout hgemm should read when handed both (> 1: the B^T route faster; --both), and hgemm
         # handed both (the seed's protocol) against the baselines that may read either
         ("dispatch_bt vs dispatch", ("dispatch",), "dispatch_bt"),
         ("dispatch_both vs lt_auto_max", ("lt_auto_nn", "lt_auto_tn"), "dispatch_both"),
         ("dispatch_both vs cublas_max", ("cublas_nn", "cublas_tn"), "dispatch_both"),
         ("dispatch_both vs torch", ("torch",), "dispatch_both"),
         # (session 40) gemm-table-from-grids' moves read within rounds too (its --paired): dispatch against what a
         # shape may move to. On a shape the dispatcher runs ours, "ours vs dispatch" is one kernel twice: an A/A.
         ("ours vs dispatch", ("dispatch",), "ours"),
         ("lt_auto_nn vs dispatch", ("dispatch",), "lt_auto_nn"))


def paired_ratio(per_round: dict[str, list[float]], refs: tuple[str, ...], ours: str) -> float | None:
    """Median over rounds of t_ref / t_ours taken within each round. A round's replays run back to back,
    so clock changes under the power cap, slower than a round, cancel in the ratio where they move both
    medians apart. With several refs (the "max" baselines' layouts) the reference is the one with the
    smallest median over all rounds, chosen once: the faster of them in each round would pick whichever
    drew the lucky sample, which under single-call noise (server mode) read cuBLASLt ~4 points faster
    than either layout alone (session 19). None without usable rounds."""
    return _median_or_none(round_ratios(per_round, refs, ours))


def _median_or_none(vals: list[float]) -> float | None:
    return statistics.median(vals) if vals else None


def round_ratios(per_round: dict[str, list[float]], refs: tuple[str, ...], ours: str) -> list[float]:
    """The within-round ratios t_ref / t_ours that paired_ratio takes the median of (ref chosen as it says)."""
    def med(name: str) -> float:
        finite = [t for t in per_round.get(name) or [] if math.isfinite(t) and t > 0]
        return statistics.median(finite) if finite else math.inf

    ref_name = min(refs, key=med)
    series = [per_round.get(ref_name) or [], per_round.get(ours) or []]
    return [ref / t for ref, t in zip(*series) if math.isfinite(ref) and math.isfinite(t) and ref > 0 and t > 0]


def median_upper_bound(vals: list[float], confidence: float = 0.95) -> float | None:
    """A one-sided, distribution-free upper confidence bound on the median of the population `vals` were drawn from:
    the j-th smallest value, j the least with P(Binomial(n, 1/2) <= j - 1) >= confidence (X_(j) lies above the
    median unless j or more draws fell below it). For 20 rounds j = 15. None where n is too small for the confidence
    (n < 5 at 95%). Where it is under 0.98 the shape reads under the floor beyond its own round-to-round noise."""
    xs = sorted(v for v in vals if math.isfinite(v))
    n, cdf = len(xs), 0.0
    for j in range(1, n + 1):
        cdf += math.comb(n, j - 1) / 2 ** n  # P(Bin(n, 1/2) <= j - 1)
        if cdf >= confidence:
            return xs[j - 1]
    return None


def _over_pairs(per_round: dict[str, list[float]], stat) -> dict[str, float]:
    """Every PAIRS comparison whose candidates all ran: name -> stat(its within-round ratios), where not None."""
    out = {}
    for name, refs, ours in PAIRS:
        if all(c in per_round for c in (*refs, ours)):
            v = stat(round_ratios(per_round, refs, ours))
            if v is not None:
                out[name] = v
    return out


def paired_upper_bounds(per_round: dict[str, list[float]], confidence: float = 0.95) -> dict[str, float]:
    """Every PAIRS comparison whose candidates all ran: name -> median_upper_bound of its within-round ratios."""
    return _over_pairs(per_round, lambda vals: median_upper_bound(vals, confidence))


def paired_ratios(per_round: dict[str, list[float]]) -> dict[str, float]:
    """Every PAIRS comparison whose candidates all ran: name -> paired ratio (paired_ratio's median)."""
    return _over_pairs(per_round, _median_or_none)


def max_of(*per_layout: dict[Shape, float]) -> dict[Shape, float]:
    """The seed's "max" baseline: per shape, the faster (smaller time) of several layouts."""
    out: dict[Shape, float] = {}
    for times in per_layout:
        for s, t in times.items():
            if t and math.isfinite(t) and (s not in out or t < out[s]):
                out[s] = t
    return out


def aa_spread(shape_ratios: dict[Shape, float]) -> list[tuple[str, int, float, float, float]]:
    """A/A spread of one kernel timed as two candidates (ratio 1 in truth): per group ("all", then each work
    class with at least 2 shapes) (group, n, geomean ratio, standard deviation of the ratio, largest |ratio - 1|).
    The benchmark's own per-shape noise floor: a single shape's ratio against a baseline means little inside it
    (session 32's grids: sd 0.4-0.8% below 1e10 FLOP, about 2% at 1e10-1e11 under the power cap)."""
    rows = []
    for name, vals in class_groups(shape_ratios):
        if len(vals) >= 2:
            geo = math.exp(statistics.fmean(math.log(v) for v in vals))
            rows.append((name, len(vals), geo, statistics.pstdev(vals), max(abs(v - 1) for v in vals)))
    return rows


# What hgemm can run on the B it is given (K x N, row-major): every candidate but the TN layouts, which read a
# pre-transposed B that the "*_max" baselines get for free (the seed's protocol).
NN_READABLE = ("ours", "dispatch", "torch", "cublas_nn", "lt_heur_nn", "lt_auto_nn")


@dataclass(frozen=True)
class FloorShape:
    """A shape the dispatcher runs below the floor against a baseline (see dispatch_floor)."""

    shape: Shape
    ratio: float  # t_baseline / t_dispatch, < floor
    best_nn: str  # the fastest NN-readable candidate measured on the shape in the same run
    tn_gain: float  # t_best_nn / t_baseline's TN layout (nan where the baseline has none)
    tn_only: bool  # the TN layout beats every NN-readable candidate by more than the margin


def dispatch_floor(times: dict[str, dict[Shape, float]], baseline: str = "lt_auto_max", floor: float = 0.98,
                   margin: float = 0.02, shape_ratios: dict[Shape, float] | None = None,
                   who: str = "dispatch") -> list[FloorShape]:
    """The shapes where dispatch runs below `floor` x the baseline (the issue: none may), slowest first. Each says
    whether a table choice could lift it: tn_only marks the shapes where the baseline's TN layout (for a "*_max"
    baseline, its "*_tn" part) is more than `margin` faster than every NN-readable candidate timed in the run, which
    only a faster kernel reading B as given can match; on the others the run's best NN option was within reach.
    shape_ratios: baseline / dispatch per shape from elsewhere (the within-round paired ratios) instead of the
    ratio of the two medians; tn_only still reads the medians. who: the candidate read (session 49: "dispatch_both")."""
    tn = times.get(baseline[: -len("_max")] + "_tn", {}) if baseline.endswith("_max") else {}
    out = []
    if shape_ratios is None:
        shape_ratios = ratios(times.get(baseline, {}), times.get(who, {}))
    for s, ratio in shape_ratios.items():
        if ratio >= floor:
            continue
        nn = {c: times[c][s] for c in NN_READABLE
              if c in times and s in times[c] and times[c][s] and math.isfinite(times[c][s])}
        if not nn:  # (paired ratios of a shape whose medians did not all come through)
            out.append(FloorShape(s, ratio, "", math.nan, False))
            continue
        best = min(nn, key=nn.get)
        t_tn = tn.get(s, math.nan)
        gain = nn[best] / t_tn if t_tn and math.isfinite(t_tn) else math.nan
        out.append(FloorShape(s, ratio, best, gain, bool(gain > 1 / (1 - margin))))
    return sorted(out, key=lambda f: f.ratio)

