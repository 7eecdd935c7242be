"""The collection summary: successes and attempts per model and per level, as Markdown and a rich table."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.table import Table

from cudaopt.report.markdown import markdown_table


@dataclass(frozen=True)
class CollectCell:
    """One (task, model) pair after collection."""

    task: str
    level: int
    model: str
    attempts: int
    successes: int


def summarize_collection(cells: Iterable[CollectCell]) -> dict[tuple[str, str], dict]:
    """(model, level label) -> {"tasks", "tasks_with_success", "attempts", "successes"}; level label "all" too."""
    out: dict[tuple[str, str], dict] = defaultdict(lambda: {"tasks": 0, "tasks_with_success": 0, "attempts": 0, "successes": 0})
    for c in cells:
        for key in ((c.model, f"level {c.level}"), (c.model, "all"), ("all models", f"level {c.level}"), ("all models", "all")):
            d = out[key]
            d["tasks"] += 1
            d["tasks_with_success"] += c.successes > 0
            d["attempts"] += c.attempts
            d["successes"] += c.successes
    return dict(out)


HEADERS = ["model", "level", "task-model pairs", "with a success", "attempts", "successes", "success per attempt"]


def _rows(cells: Sequence[CollectCell]) -> list[list[str]]:
    summary = summarize_collection(cells)
    models = sorted({m for m, _ in summary if m != "all models"}) + ["all models"]
    levels = sorted({lv for _, lv in summary if lv != "all"}, key=lambda s: int(s.split()[-1])) + ["all"]
    rows = []
    for m in models:
        for lv in levels:
            d = summary.get((m, lv))
            if d is None:
                continue
            rate = d["successes"] / d["attempts"] if d["attempts"] else 0.0
            rows.append([m, lv, str(d["tasks"]), str(d["tasks_with_success"]), str(d["attempts"]), str(d["successes"]), f"{100 * rate:.1f}%"])
    return rows


def collect_markdown(cells: Sequence[CollectCell], title: str = "") -> str:
    per_task = [[c.task, str(c.level), c.model, str(c.attempts), str(c.successes)]
                for c in sorted(cells, key=lambda c: (c.level, c.task, c.model))]
    return "\n".join([
        f"# cudaopt collect{': ' + title if title else ''}", "",
        "A success is an attempt that compiled, ran and matched the reference (status ok). Each task-model pair "
        "stops at its success target or its attempt limit.", "",
        markdown_table(HEADERS, _rows(cells)), "", "## Per task and model", "",
        markdown_table(["task", "level", "model", "attempts", "successes"], per_task), "",
    ])


def collect_rich_table(cells: Sequence[CollectCell], title: str = "cudaopt collect") -> Table:
    table = Table(title=title)
    for h in HEADERS:
        table.add_column(h, justify="left" if h in ("model", "level") else "right")
    for row in _rows(cells):
        table.add_row(*row)
    return table
