"""The numbers of the seeds' results table, and what a result cost.

Per task the score is the best speedup found; a task with no correct candidate scores 0 (as in the
CUDA-L1 paper), so mean, median and percentiles are over all tasks. KernelBench's fast_p is the share
of tasks whose best candidate is correct and faster than p times the reference (fast_0 is the share
with any correct candidate). The geometric mean is over the tasks that have a correct candidate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

FAST_P_THRESHOLDS = (0.0, 1.0, 1.5, 2.0)
SPEEDUP_FLOOR = 1.01  # the seeds' "optimised" threshold: ratios closer to 1 are within timing noise


@dataclass(frozen=True)
class ScoreSummary:
    n: int
    mean: float
    median: float
    p25: float
    p75: float
    max: float
    success_rate: float  # share of tasks with a correct candidate
    above_floor: float  # share of tasks with a best speedup above 1.01x
    fast_p: dict = field(default_factory=dict)  # threshold -> share
    geomean: float | None = None


def summarize_scores(scores: Sequence[float | None], thresholds: Iterable[float] = FAST_P_THRESHOLDS) -> ScoreSummary:
    if not scores:
        return ScoreSummary(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, {p: 0.0 for p in thresholds}, None)
    ok = [s for s in scores if s is not None]
    filled = np.array([s if s is not None else 0.0 for s in scores], dtype=float)
    n = len(scores)
    return ScoreSummary(
        n=n,
        mean=float(filled.mean()),
        median=float(np.median(filled)),
        p25=float(np.percentile(filled, 25)),
        p75=float(np.percentile(filled, 75)),
        max=float(filled.max()),
        success_rate=len(ok) / n,
        above_floor=sum(s > SPEEDUP_FLOOR for s in ok) / n,
        fast_p={p: sum(s > p for s in ok) / n for p in thresholds},
        geomean=math.exp(sum(math.log(s) for s in ok) / len(ok)) if ok and all(s > 0 for s in ok) else None,
    )


@dataclass(frozen=True)
class CostSummary:
    tasks: int
    candidates: int
    evaluated: int  # candidates that reached the evaluator
    gpu_seconds: float
    eval_seconds: float  # wall time of evaluations (on a CPU run the only time there is)
    prompt_tokens: int
    completion_tokens: int

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def per_candidate(self, value: float) -> float:
        return value / self.candidates if self.candidates else 0.0

    def per_task(self, value: float) -> float:
        return value / self.tasks if self.tasks else 0.0


def cost_of(records: Sequence, tasks: int | None = None) -> CostSummary:
    """Records are CandidateRecords (or anything with the same cost fields)."""
    evaluated = [r for r in records if r.result]
    return CostSummary(
        tasks=tasks if tasks is not None else len({r.task_id for r in records}),
        candidates=len(records),
        evaluated=len(evaluated),
        gpu_seconds=sum(r.gpu_seconds or 0.0 for r in records),
        eval_seconds=sum(float(r.result.get("seconds") or 0.0) for r in evaluated),
        prompt_tokens=sum(r.prompt_tokens or 0 for r in records),
        completion_tokens=sum(r.completion_tokens or 0 for r in records),
    )
