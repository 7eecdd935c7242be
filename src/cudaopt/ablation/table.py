"""The ablation table in the seeds' format: per variant, mean, median, quartiles, success, share >1.01x.

Scores are each task's best correct speedup, 0 for a task without a correct candidate (as in
`cudaopt.report.stats`); training and held-out tasks are separate rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cudaopt.report.markdown import markdown_table
from cudaopt.report.stats import ScoreSummary

ABLATION_HEADERS = ["variant", "tasks", "mean", "median", "p25", "p75", "success", ">1.01x", "candidates", "note"]


@dataclass(frozen=True)
class TableRow:
    variant: str
    split: str  # "train" | "held-out"
    summary: ScoreSummary | None  # None: the variant did not run
    candidates: int = 0
    note: str = ""


def _x(v: float) -> str:
    return f"{v:.2f}x"


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def ablation_rows(rows: Sequence[TableRow], split: str) -> list[list[str]]:
    out = []
    for r in rows:
        if r.split != split:
            continue
        s = r.summary
        if s is None:
            out.append([r.variant, "-", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "-", r.note or "not run"])
        else:
            out.append([r.variant, str(s.n), _x(s.mean), _x(s.median), _x(s.p25), _x(s.p75), _pct(s.success_rate),
                        _pct(s.above_floor), str(r.candidates), r.note or ""])
    return out


def ablation_markdown(rows: Sequence[TableRow], *, budget: int, title: str = "") -> str:
    parts = [
        f"# cudaopt ablation{': ' + title if title else ''}", "",
        f"Every variant ran the same tasks with the same budget ({budget} candidates per task) and seed, each in its "
        "own database. Per task the score is its best correct speedup (0 without a correct candidate); success is "
        "the share of tasks with a correct candidate, >1.01x the share faster than 1.01x the reference.", "",
        "## Training tasks", "", markdown_table(ABLATION_HEADERS, ablation_rows(rows, "train")), "",
    ]
    held = ablation_rows(rows, "held-out")
    if any(r[1] not in ("-", "0") for r in held):
        parts += ["## Held-out tasks", "", markdown_table(ABLATION_HEADERS, held), ""]
    return "\n".join(parts)
