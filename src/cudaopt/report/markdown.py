"""Markdown reports: one task's search, and a suite's table per level (the seeds' Table 5 columns)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from cudaopt.report.stats import FAST_P_THRESHOLDS, CostSummary, ScoreSummary, summarize_scores


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


SUMMARY_HEADERS = ["level", "tasks", "mean", "median", "p25", "p75", "max", "success", ">1.01x",
                   *[f"fast_{p:g}" for p in FAST_P_THRESHOLDS], "geomean"]


def summary_row(label: str, s: ScoreSummary) -> list[str]:
    return [label, str(s.n), _x(s.mean), _x(s.median), _x(s.p25), _x(s.p75), _x(s.max), _pct(s.success_rate),
            _pct(s.above_floor), *[_pct(s.fast_p.get(p, 0.0)) for p in FAST_P_THRESHOLDS], _x(s.geomean)]


def cost_section(cost: CostSummary) -> str:
    rows = [
        ["GPU-seconds", f"{cost.gpu_seconds:.1f}", f"{cost.per_candidate(cost.gpu_seconds):.2f}", f"{cost.per_task(cost.gpu_seconds):.1f}"],
        ["evaluation wall seconds", f"{cost.eval_seconds:.1f}", f"{cost.per_candidate(cost.eval_seconds):.2f}", f"{cost.per_task(cost.eval_seconds):.1f}"],
        ["LLM tokens (prompt + completion)", str(cost.tokens), f"{cost.per_candidate(cost.tokens):.0f}", f"{cost.per_task(cost.tokens):.0f}"],
        ["LLM prompt tokens", str(cost.prompt_tokens), f"{cost.per_candidate(cost.prompt_tokens):.0f}", f"{cost.per_task(cost.prompt_tokens):.0f}"],
        ["LLM completion tokens", str(cost.completion_tokens), f"{cost.per_candidate(cost.completion_tokens):.0f}", f"{cost.per_task(cost.completion_tokens):.0f}"],
    ]
    return (f"## Cost\n\n{cost.candidates} candidates ({cost.evaluated} evaluated) over {cost.tasks} task(s).\n\n"
            + markdown_table(["", "total", "per candidate", "per task"], rows))


def _plot_line(plot: Path | None, base: Path) -> str:
    if plot is None:
        return "_Speedup plot skipped: matplotlib is not installed (pip install 'cudaopt[plot]')._"
    try:
        rel = plot.relative_to(base)
    except ValueError:
        rel = plot
    return f"![speedup distribution]({rel})"


def task_report(task_name: str, records: Sequence, best, cost: CostSummary, plot: Path | None, out_dir: Path,
                stopped: str = "", best_path: Path | None = None) -> str:
    """`records`: this run's CandidateRecords for the task; `best`: the best one (or None)."""
    statuses = Counter(r.status for r in records)
    lines = [f"# cudaopt optimize: {task_name}", ""]
    if best is not None:
        res = best.eval_result
        ci = res.speedup_ci if res else None
        ci_s = f" (95% interval {ci[0]:.3f}-{ci[1]:.3f})" if ci else ""
        lines += [f"**Best speedup: {best.speedup:.2f}x**{ci_s}, candidate #{best.id} ({best.origin}), "
                  f"on {best.gpu_name or (res.device if res else '?')}."]
        if best_path is not None:
            lines += ["", f"Best kernel: `{best_path.name}`. Re-check it with `cudaopt eval <reference> {best_path.name}`."]
    else:
        lines += ["**No correct candidate was found.**"]
    lines += ["", f"Stopped: {stopped or '-'}.", "", "## Candidates", ""]
    lines += [markdown_table(["status", "count"], sorted(statuses.items(), key=lambda kv: -kv[1]))]
    ok = sorted((r for r in records if r.status == "ok" and r.speedup is not None), key=lambda r: -r.speedup)
    if ok:
        lines += ["", "### Correct candidates, fastest first", ""]
        lines += [markdown_table(["id", "speedup", "origin", "round", "parents"],
                                 [[r.id, _x(r.speedup), r.origin, r.round, ",".join(map(str, r.parent_ids)) or "-"] for r in ok[:20]])]
    failed = [r for r in records if r.status not in ("ok", "duplicate")]
    if failed:
        lines += ["", "### Failures (most recent 10)", ""]
        lines += [markdown_table(["id", "status", "stage", "why"],
                                 [[r.id, r.status, r.stage_reached or "-", _why(r)] for r in failed[-10:]])]
    lines += ["", "## Speedup distribution", "", _plot_line(plot, out_dir), "", cost_section(cost), ""]
    return "\n".join(lines)


def _why(r) -> str:
    msg = (r.result or {}).get("message", "") or r.note
    return str(msg).replace("|", "/").replace("\n", " ")[:120]


@dataclass(frozen=True)
class SuiteTaskRow:
    name: str
    level: int
    best: float | None
    candidates: int
    stopped: str = ""


def suite_report(rows: Sequence[SuiteTaskRow], cost: CostSummary, plot: Path | None, out_dir: Path, title: str = "") -> str:
    levels = sorted({r.level for r in rows})
    table = [summary_row(f"level {lv}", summarize_scores([r.best for r in rows if r.level == lv])) for lv in levels]
    table.append(summary_row("all", summarize_scores([r.best for r in rows])))
    per_task = [[r.name, r.level, _x(r.best), r.candidates, r.stopped or "-"] for r in sorted(rows, key=lambda r: (r.level, r.name))]
    return "\n".join([
        f"# cudaopt optimize --suite{': ' + title if title else ''}", "",
        "Per task the score is its best correct speedup; a task without a correct candidate scores 0 in the "
        "mean, median and percentiles. fast_p: share of tasks correct and faster than p x; the geometric mean "
        "is over tasks with a correct candidate.", "",
        markdown_table(SUMMARY_HEADERS, table), "", "## Speedup distribution (best per task)", "", _plot_line(plot, out_dir), "",
        cost_section(cost), "", "## Tasks", "", markdown_table(["task", "level", "best", "candidates", "stopped"], per_task), "",
    ])
