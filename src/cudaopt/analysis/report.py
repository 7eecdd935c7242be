"""Which techniques the fastest stored kernels use, and how each one's presence relates to speedup.

Every correct, timed kernel in an ExemplarDB is tagged (`cudaopt.analysis.techniques`). Then:

- Top quartile: within each task, the kernels whose speedup is at least the ceil(n/4)-th largest (ties
  included). Per task and per level (pooling the tasks' quartiles) the report gives each technique's share
  among those kernels and among the rest.
- Effect: for each technique, the difference in mean log-speedup between the kernels that use it and those
  that do not, with a bootstrap 95% interval (kernels resampled with replacement), and the point-biserial
  correlation of presence with log-speedup. By default log-speedups are centred within each task first, so
  that a technique is not credited for being common in tasks that happen to allow large speedups, and the
  comparison uses only the kernels of "mixed" tasks, those with kernels both with and without the
  technique (a task where all or none use it says nothing about it). The report says how many kernels
  and tasks each estimate rests on. `within_task=False` compares raw log-speedups over all kernels.

These are associations over whatever the search happened to store, not causal effects: techniques come
together (float4 kernels are also fused ones) and the tagger is heuristic (docs/techniques.md).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from cudaopt.analysis.techniques import DESCRIPTIONS, TECHNIQUE_NAMES, tag_names

_BOOTSTRAP_CELLS = 4_000_000  # resample matrix size per chunk (bounded memory for large databases)


@dataclass(frozen=True)
class KernelRow:
    """One distinct kernel source of one task: its speedup and techniques."""

    id: int  # the first stored candidate with this source
    task: str
    level: int
    speedup: float  # the median over repeated evaluations of the same source
    tags: frozenset[str]
    top: bool = False  # in its task's top quartile


@dataclass(frozen=True)
class Prevalence:
    technique: str
    top_with: int
    top_n: int
    rest_with: int
    rest_n: int

    @property
    def top_share(self) -> float | None:
        return self.top_with / self.top_n if self.top_n else None

    @property
    def rest_share(self) -> float | None:
        return self.rest_with / self.rest_n if self.rest_n else None


@dataclass(frozen=True)
class Effect:
    technique: str
    n_with: int
    n_without: int
    tasks_mixed: int  # tasks with kernels both with and without the technique
    n_basis: int  # kernels diff, ci and r_pb rest on: those of the mixed tasks (within_task) or all
    geomean_with: float | None  # geometric mean speedup over all kernels (not centred)
    geomean_without: float | None
    diff: float | None  # mean (centred) log-speedup with - without, over the basis
    ci_low: float | None
    ci_high: float | None
    r_pb: float | None  # point-biserial correlation of presence with (centred) log-speedup


@dataclass(frozen=True)
class Scope:
    """One slice of the kernels (all levels, one level, one task) with its prevalence and effects."""

    label: str
    kernels: int
    tasks: int
    prevalence: tuple[Prevalence, ...]
    effects: tuple[Effect, ...]


@dataclass(frozen=True)
class TaskSummary:
    task: str
    level: int
    kernels: int
    best_speedup: float
    best_tags: tuple[str, ...]
    prevalence: tuple[Prevalence, ...]


@dataclass(frozen=True)
class TechniqueAnalysis:
    source: str  # the database (password hidden)
    within_task: bool
    bootstrap: int
    seed: int
    kernels: tuple[KernelRow, ...]
    overall: Scope
    levels: tuple[Scope, ...]
    tasks: tuple[TaskSummary, ...]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kernels"] = [{**asdict(k), "tags": sorted(k.tags)} for k in self.kernels]
        return d


# ----------------------------------------------------------------------------------------------------------
# Reading the database


def _display_url(url: str) -> str:
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - only for display
        return url


def load_kernels(db_url: str | Path, *, levels: Sequence[int] | None = None) -> list[KernelRow]:
    """Every correct, timed candidate, one row per (task, distinct source), tagged against its reference."""
    from sqlalchemy import select

    from cudaopt.db.models import CandidateRow, TaskRow
    from cudaopt.db.store import ExemplarDB

    wanted = set(levels) if levels else None
    groups: dict[tuple[int, str], list[tuple[int, str, float]]] = defaultdict(list)
    tasks: dict[int, tuple[str, int, str]] = {}
    with ExemplarDB(db_url) as db:
        with db.session() as s:
            for t in s.scalars(select(TaskRow)):
                if wanted is None or t.level in wanted:
                    tasks[t.id] = (t.name, t.level, t.source)
            q = (select(CandidateRow.id, CandidateRow.task_id, CandidateRow.source_hash, CandidateRow.source, CandidateRow.speedup)
                 .where(CandidateRow.status == "ok", CandidateRow.speedup.is_not(None)).order_by(CandidateRow.id))
            for cid, task_id, shash, source, speedup in s.execute(q):
                if task_id in tasks and speedup > 0 and math.isfinite(speedup):
                    groups[(task_id, shash)].append((cid, source, float(speedup)))
        # The tags stored with each candidate (computed and stored now where missing or stale).
        try:
            stored = db.techniques([evals[0][0] for evals in groups.values()])
        except Exception:  # noqa: BLE001 - a read-only database: tag in memory below
            stored = {}
    rows = []
    for (task_id, _), evals in groups.items():
        name, level, ref_source = tasks[task_id]
        first_id, source, _ = evals[0]
        speedup = statistics.median(sp for _, _, sp in evals)
        tags = stored[first_id] if first_id in stored else tag_names(source, ref_source)
        rows.append(KernelRow(first_id, name, level, speedup, frozenset(tags)))
    return sorted(rows, key=lambda k: k.id)


# ----------------------------------------------------------------------------------------------------------
# Statistics


def top_quartile(speedups: Sequence[float]) -> list[bool]:
    """True for speedups at least the ceil(n/4)-th largest (ties at the edge all count as top)."""
    if not speedups:
        return []
    k = math.ceil(len(speedups) / 4)
    edge = sorted(speedups, reverse=True)[k - 1]
    return [s >= edge for s in speedups]


def mark_top_quartile(kernels: Sequence[KernelRow]) -> list[KernelRow]:
    by_task: dict[str, list[int]] = defaultdict(list)
    for i, k in enumerate(kernels):
        by_task[k.task].append(i)
    top = [False] * len(kernels)
    for idx in by_task.values():
        for i, flag in zip(idx, top_quartile([kernels[i].speedup for i in idx])):
            top[i] = flag
    return [KernelRow(k.id, k.task, k.level, k.speedup, k.tags, t) for k, t in zip(kernels, top)]


def log_speedups(kernels: Sequence[KernelRow], *, within_task: bool = True) -> np.ndarray:
    """log(speedup), minus its task's mean when within_task."""
    x = np.array([math.log(k.speedup) for k in kernels], dtype=float)
    if within_task and len(x):
        by_task: dict[str, list[int]] = defaultdict(list)
        for i, k in enumerate(kernels):
            by_task[k.task].append(i)
        for idx in by_task.values():
            x[idx] -= x[idx].mean()
    return x


def mean_difference(x: np.ndarray, present: np.ndarray) -> float | None:
    if present.all() or not present.any():
        return None
    return float(x[present].mean() - x[~present].mean())


def point_biserial(x: np.ndarray, present: np.ndarray) -> float | None:
    """Pearson correlation of a 0/1 indicator with x: (m1 - m0) / sd * sqrt(p (1 - p)), sd over all."""
    d = mean_difference(x, present)
    if d is None:
        return None
    sd = float(x.std())
    if sd == 0.0:
        return None
    p = float(present.mean())
    return d / sd * math.sqrt(p * (1.0 - p))


def bootstrap_interval(x: np.ndarray, present: np.ndarray, *, resamples: int, seed: int,
                       level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of the mean difference over kernels resampled with replacement.

    None with fewer than two kernels on either side (there is nothing to resample)."""
    n1 = int(present.sum())
    if resamples < 1 or n1 < 2 or len(x) - n1 < 2:
        return None
    rng = np.random.default_rng(seed)
    n = len(x)
    p = present.astype(float)
    diffs = []
    chunk = max(1, _BOOTSTRAP_CELLS // n)
    done = 0
    while done < resamples:
        b = min(chunk, resamples - done)
        idx = rng.integers(0, n, size=(b, n))
        pi, xi = p[idx], x[idx]
        c1 = pi.sum(axis=1)
        c0 = n - c1
        ok = (c1 > 0) & (c0 > 0)
        s1 = (pi * xi).sum(axis=1)
        s0 = xi.sum(axis=1) - s1
        diffs.append(s1[ok] / c1[ok] - s0[ok] / c0[ok])
        done += b
    d = np.concatenate(diffs)
    if not len(d):
        return None
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(d, [tail, 100 - tail])
    return float(lo), float(hi)


def _geomean(values: Sequence[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _prevalence(kernels: Sequence[KernelRow], technique: str) -> Prevalence:
    top = [k for k in kernels if k.top]
    rest = [k for k in kernels if not k.top]
    return Prevalence(technique, sum(technique in k.tags for k in top), len(top),
                      sum(technique in k.tags for k in rest), len(rest))


def _effect(kernels: Sequence[KernelRow], x: np.ndarray, technique: str, *, within_task: bool, resamples: int,
            seed: int) -> Effect:
    present = np.array([technique in k.tags for k in kernels], dtype=bool)
    by_task: dict[str, set[bool]] = defaultdict(set)
    for k, p in zip(kernels, present):
        by_task[k.task].add(bool(p))
    mixed = {t for t, seen in by_task.items() if len(seen) == 2}
    # Within tasks, only tasks with kernels on both sides say anything about the technique.
    basis = np.array([k.task in mixed for k in kernels], dtype=bool) if within_task else np.ones(len(kernels), dtype=bool)
    xb, pb = x[basis], present[basis]
    ci = bootstrap_interval(xb, pb, resamples=resamples, seed=seed)
    return Effect(
        technique=technique,
        n_with=int(present.sum()),
        n_without=int((~present).sum()),
        tasks_mixed=len(mixed),
        n_basis=int(basis.sum()),
        geomean_with=_geomean([k.speedup for k, p in zip(kernels, present) if p]),
        geomean_without=_geomean([k.speedup for k, p in zip(kernels, present) if not p]),
        diff=mean_difference(xb, pb),
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        r_pb=point_biserial(xb, pb),
    )


def _scope(label: str, kernels: Sequence[KernelRow], x: np.ndarray, *, within_task: bool, resamples: int, seed: int) -> Scope:
    return Scope(
        label=label,
        kernels=len(kernels),
        tasks=len({k.task for k in kernels}),
        prevalence=tuple(_prevalence(kernels, t) for t in TECHNIQUE_NAMES),
        effects=tuple(_effect(kernels, x, t, within_task=within_task, resamples=resamples, seed=seed) for t in TECHNIQUE_NAMES),
    )


def analyze(kernels: Sequence[KernelRow], *, source: str = "", within_task: bool = True, bootstrap: int = 2000,
            seed: int = 0) -> TechniqueAnalysis:
    """Top-quartile prevalence and effects over all kernels, per level and per task."""
    kernels = mark_top_quartile(list(kernels))
    x = log_speedups(kernels, within_task=within_task)  # centring is per task, so slicing by level keeps it
    overall = _scope("all levels", kernels, x, within_task=within_task, resamples=bootstrap, seed=seed)
    levels = []
    for level in sorted({k.level for k in kernels}):
        idx = [i for i, k in enumerate(kernels) if k.level == level]
        levels.append(_scope(f"level {level}", [kernels[i] for i in idx], x[idx], within_task=within_task, resamples=bootstrap, seed=seed))
    tasks = []
    by_task: dict[str, list[KernelRow]] = defaultdict(list)
    for k in kernels:
        by_task[k.task].append(k)
    for name in sorted(by_task, key=lambda n: (by_task[n][0].level, n)):
        ks = by_task[name]
        best = max(ks, key=lambda k: (k.speedup, -k.id))
        tasks.append(TaskSummary(name, ks[0].level, len(ks), best.speedup,
                                 tuple(t for t in TECHNIQUE_NAMES if t in best.tags),
                                 tuple(_prevalence(ks, t) for t in TECHNIQUE_NAMES)))
    return TechniqueAnalysis(source, within_task, bootstrap, seed, tuple(kernels), overall, tuple(levels), tuple(tasks))


def analyze_db(db_url: str | Path, *, levels: Sequence[int] | None = None, within_task: bool = True,
               bootstrap: int = 2000, seed: int = 0) -> TechniqueAnalysis:
    from cudaopt.db.store import existing_database

    url = existing_database(db_url)
    return analyze(load_kernels(url, levels=levels), source=_display_url(url), within_task=within_task,
                   bootstrap=bootstrap, seed=seed)


# ----------------------------------------------------------------------------------------------------------
# Rendering


def _share(k: int, n: int) -> str:
    return "-" if n == 0 else f"{100 * k / n:.0f}% ({k}/{n})"


def _num(v: float | None, fmt: str = "{:+.3f}") -> str:
    return "-" if v is None else fmt.format(v)


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _ci(e: Effect) -> str:
    return "-" if e.ci_low is None else f"[{e.ci_low:+.3f}, {e.ci_high:+.3f}]"


SCOPE_HEADERS = ["technique", "top quartile", "rest", "with / without", "geomean with / without",
                 "Δ mean log-speedup [95% CI]", "r_pb", "rests on"]


def scope_rows(scope: Scope) -> list[list[str]]:
    """One row per technique seen in the scope (never-seen techniques are listed separately)."""
    rows = []
    for p, e in zip(scope.prevalence, scope.effects):
        if e.n_with == 0:
            continue
        rows.append([e.technique, _share(p.top_with, p.top_n), _share(p.rest_with, p.rest_n),
                     f"{e.n_with} / {e.n_without}", f"{_x(e.geomean_with)} / {_x(e.geomean_without)}",
                     f"{_num(e.diff)} {_ci(e)}" if e.diff is not None else "-", _num(e.r_pb, "{:+.2f}"), f"{e.n_basis} kernels, {e.tasks_mixed} mixed task{'' if e.tasks_mixed == 1 else 's'}"])
    return rows


def _markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    from cudaopt.report.markdown import markdown_table

    return markdown_table(headers, rows)


def _task_rows(analysis: TechniqueAnalysis) -> list[list[str]]:
    rows = []
    for t in analysis.tasks:
        over = []
        for p in t.prevalence:
            if p.top_n and p.rest_n and p.top_with / p.top_n > p.rest_with / p.rest_n:
                over.append((p.top_with / p.top_n - p.rest_with / p.rest_n, p))
        over.sort(key=lambda d: -d[0])
        rows.append([t.task, str(t.level), str(t.kernels), _x(t.best_speedup), ", ".join(t.best_tags) or "-",
                     ", ".join(f"{p.technique} {100 * p.top_share:.0f}% vs {100 * p.rest_share:.0f}%" for _, p in over[:4]) or "-"])
    return rows


def render_markdown(analysis: TechniqueAnalysis, *, chart: Path | None = None, base: Path | None = None) -> str:
    a = analysis
    centring = ("log-speedups centred within each task" if a.within_task else "raw log-speedups (not centred per task)")
    lines = [
        "# Techniques of the stored kernels",
        "",
        (f"Database: `{a.source}`. {len(a.kernels)} correct, timed kernels (distinct sources per task) over "
        f"{len({k.task for k in a.kernels})} tasks."),
        "",
        "How to read: *top quartile* / *rest* give the share of kernels using a technique among each task's "
        "fastest quarter (ties included) and among the others. *Δ mean log-speedup* is the mean log-speedup of "
        f"kernels with the technique minus those without ({centring}); +0.693 is twice as fast. The interval is a "
        f"{a.bootstrap}-resample bootstrap over kernels (seed {a.seed}); it needs two kernels on each side. *r_pb* is "
        "the point-biserial correlation of presence with the same log-speedups. *rests on*: the kernels Δ and r_pb "
        "are computed over and the number of mixed tasks (tasks with kernels both with and without the technique)"
        + ("; within tasks only mixed tasks' kernels count. " if a.within_task else ". ")
        + "*top quartile*, *rest*, *with / without* and *geomean* count all kernels. Associations, not causes: "
        "techniques come together and the tags are heuristic (docs/techniques.md).",
        "",
    ]
    if not a.kernels:
        lines += ["No correct, timed kernels in this database (or at the levels asked for).", ""]
        return "\n".join(lines)
    if chart is not None:
        rel = chart.relative_to(base) if base is not None and chart.is_relative_to(base) else chart
        lines += [f"![Δ mean log-speedup by technique]({rel})", ""]
    for scope in (a.overall, *a.levels):
        lines += [f"## {scope.label.capitalize()} ({scope.kernels} kernels, {scope.tasks} tasks)", "",
                  _markdown_table(SCOPE_HEADERS, scope_rows(scope)), ""]
    unseen = [e.technique for e in a.overall.effects if e.n_with == 0]
    if unseen:
        lines += ["Not seen in any kernel: " + ", ".join(unseen) + ".", ""]
    lines += ["## Per task", "",
              _markdown_table(["task", "level", "kernels", "best", "techniques of the fastest kernel",
                               "more common in the top quartile (top vs rest)"], _task_rows(a)), ""]
    lines += ["## Technique tags", "", _markdown_table(["tag", "detects"], [[n, DESCRIPTIONS[n]] for n in TECHNIQUE_NAMES]), ""]
    return "\n".join(lines)


def technique_table(analysis: TechniqueAnalysis, scope: Scope | None = None):
    """A rich Table of one scope (all levels by default) for the terminal."""
    from rich.table import Table

    scope = scope or analysis.overall
    table = Table(title=f"Techniques vs speedup: {scope.label} ({scope.kernels} kernels, {scope.tasks} tasks)")
    for h in SCOPE_HEADERS:
        table.add_column(h, justify="left" if h == "technique" else "right")
    for row in scope_rows(scope):
        table.add_row(*row)
    return table


def technique_chart(analysis: TechniqueAnalysis, path: str | Path) -> Path | None:
    """Horizontal bars of Δ mean log-speedup with their intervals; None without matplotlib or data."""
    from cudaopt.report.plots import have_matplotlib

    effects = [e for e in analysis.overall.effects if e.diff is not None]
    if not effects or not have_matplotlib():
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    effects.sort(key=lambda e: e.diff)
    names = [f"{e.technique} (n={e.n_with})" for e in effects]
    diffs = [e.diff for e in effects]
    lo = [e.diff - e.ci_low if e.ci_low is not None else 0.0 for e in effects]
    hi = [e.ci_high - e.diff if e.ci_high is not None else 0.0 for e in effects]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(effects) + 1.5), dpi=120)
    colors = ["#4477aa" if d >= 0 else "#cc6677" for d in diffs]
    ax.barh(names, diffs, xerr=[lo, hi], color=colors, ecolor="#333333", capsize=2)
    ax.axvline(0.0, color="#333333", linewidth=0.8)
    ax.set_xlabel("Δ mean log-speedup, with - without" + (" (centred per task)" if analysis.within_task else ""))
    ax.set_title("Technique presence vs speedup (all levels)")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def technique_report(db_url: str | Path, out_dir: str | Path, *, levels: Sequence[int] | None = None,
                     within_task: bool = True, bootstrap: int = 2000, seed: int = 0, console=None) -> Path:
    """Write techniques.md, techniques.json and (with matplotlib) techniques.png to out_dir; returns the
    Markdown path. With a rich `console`, also prints the all-levels table."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    analysis = analyze_db(db_url, levels=levels, within_task=within_task, bootstrap=bootstrap, seed=seed)
    chart = technique_chart(analysis, out / "techniques.png")
    md = out / "techniques.md"
    md.write_text(render_markdown(analysis, chart=chart, base=out))
    (out / "techniques.json").write_text(json.dumps(analysis.to_dict(), indent=1, default=list))
    if console is not None:
        console.print(technique_table(analysis))
    return md
