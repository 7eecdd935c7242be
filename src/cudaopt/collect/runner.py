"""`collect`: CUDA-L1 stage 1 data augmentation over several models.

For each task and each model: one-shot prompts (the reference and the rules, no exemplars), up to
`attempts` answers, stopping once `successes` of them compiled, ran and matched the reference. Every
attempt is stored in the exemplar database with the model's name (origin "collect"), so the SFT export
(`cudaopt.train.data.export_sft`) reads the successes directly. With `resume=True` the counts start from
what the database already holds for each (task, model) pair, so an interrupted collection continues.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from cudaopt.collect.summary import CollectCell, collect_markdown, collect_rich_table
from cudaopt.db.store import CandidateRecord, ExemplarDB
from cudaopt.evaluate.result import EvalOptions
from cudaopt.llm.base import LLM
from cudaopt.llm.spec import make_llm
from cudaopt.prompts.builder import PromptBuilder
from cudaopt.prompts.parser import parse_response
from cudaopt.search.loop import (
    EvaluateFn,
    _open_run,
    _options,
    _safe_evaluate,
    default_evaluate,
)
from cudaopt.search.progress import SearchProgress
from cudaopt.tasks.loader import Task, discover_tasks, resolve_task

ORIGIN = "collect"
_LABEL = re.compile(r"^([A-Za-z0-9_.\-]+)=(.+)$")


@dataclass(frozen=True)
class CollectResult:
    run_id: int
    db_url: str
    out_dir: Path
    cells: tuple[CollectCell, ...]
    report_path: Path
    summary_path: Path
    stopped: str = ""

    @property
    def successes(self) -> int:
        return sum(c.successes for c in self.cells)

    @property
    def attempts(self) -> int:
        return sum(c.attempts for c in self.cells)


def resolve_tasks(tasks: str | Path | Task | Sequence[str | Path | Task]) -> list[Task]:
    """A folder (every task in it), a file or built-in name, a Task, or a list of any of these."""
    items = [tasks] if isinstance(tasks, (str, Path, Task)) else list(tasks)
    out: list[Task] = []
    for item in items:
        if isinstance(item, Task):
            out.append(item)
        elif Path(item).is_dir():
            out.extend(discover_tasks(item))
        else:
            out.append(resolve_task(item))
    seen: set[tuple[str, str]] = set()
    out = [t for t in out if (t.name, t.digest) not in seen and not seen.add((t.name, t.digest))]
    if not out:
        raise ValueError("no tasks selected; give task files, a folder of tasks or built-in task names")
    return out


def _backend(entry: str | LLM) -> tuple[str, LLM]:
    """(label, backend). A string may be `NAME=SPEC` to choose the name stored with each attempt."""
    if isinstance(entry, LLM):
        return entry.model or type(entry).__name__, entry
    spec = entry.strip()
    m = _LABEL.match(spec)
    if m and ":" not in m.group(1):
        return m.group(1), make_llm(m.group(2))
    backend = make_llm(spec)
    if spec.startswith("replay:") or spec.endswith(".jsonl"):
        return "replay:" + Path(spec.removeprefix("replay:")).stem, backend
    return backend.model or spec, backend


def _backends(llms: Sequence[str | LLM]) -> list[tuple[str, LLM]]:
    if not llms:
        raise ValueError("no models given; pass at least one --llm")
    pairs = [_backend(e) for e in llms]
    labels = [label for label, _ in pairs]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ValueError(f"two models share the name {dup[0]!r}; name them apart with NAME=SPEC (e.g. a={dup[0]})")
    return pairs


class _PairCollector:
    """One (task, model) pair: prompt, generate, evaluate, store until the success target or the limit."""

    def __init__(self, task: Task, task_id: int, label: str, llm: LLM, db: ExemplarDB, run_id: int, prompt: str,
                 evaluate_fn: EvaluateFn, options: EvalOptions, count_all_runs: bool):
        self.task, self.task_id, self.label, self.llm, self.db, self.run_id = task, task_id, label, llm, db, run_id
        self.prompt, self.evaluate_fn, self.options = prompt, evaluate_fn, options
        held = [r for r in db.candidates(task_id=task_id, run_id=None if count_all_runs else run_id)
                if r.origin == ORIGIN and r.model == label]
        self.attempts = len(held)
        self.successes = sum(r.status == "ok" for r in held)

    def _store(self, **kw) -> None:
        rec = self.db.add_candidate(CandidateRecord(task_id=self.task_id, run_id=self.run_id, origin=ORIGIN, model=self.label,
                                                    prompt=self.prompt, round=self.attempts + 1, **kw))
        self.attempts += 1
        self.successes += rec.status == "ok"

    def run(self, attempts: int, successes: int) -> None:
        while self.attempts < attempts and self.successes < successes:
            # Ask for exactly what is still needed: a batch can then never overshoot the success target.
            k = min(successes - self.successes, attempts - self.attempts)
            for c in self.llm.generate([self.prompt] * k, n=1, task=self.task.name):
                cost = dict(response=c.text, prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens)
                parsed = parse_response(c.text) if not c.error else None
                if parsed is None or not parsed.ok:
                    status, why = ("llm_error", c.error) if parsed is None else ("parse_error", parsed.reason)
                    self._store(source="", status=status, note=why, **cost)
                elif self.db.has_source(self.task_id, parsed.code):
                    # A repeat teaches the SFT set nothing new and its result is already known.
                    self._store(source=parsed.code, status="duplicate", note="same source as a stored candidate of this task", **cost)
                else:
                    result = _safe_evaluate(self.evaluate_fn, self.task, parsed.code, self.options)
                    rec = CandidateRecord.from_result(result, task_id=0, run_id=0, source=parsed.code)
                    self._store(source=parsed.code, status=rec.status, result=rec.result, stage_reached=rec.stage_reached,
                                speedup=rec.speedup, gpu_name=rec.gpu_name, gpu_seconds=rec.gpu_seconds, **cost)


def collect(
    tasks: str | Path | Task | Sequence[str | Path | Task],
    llms: Sequence[str | LLM],
    *,
    attempts: int = 20,
    successes: int = 2,
    device: str = "cuda",
    db_url: str | None = None,
    options: EvalOptions | None = None,
    evaluate_fn: EvaluateFn | None = None,
    out_dir: str | Path = "cudaopt-runs/collect",
    resume: bool = False,
    template_dir: str | Path | None = None,
    levels: tuple[int, ...] | None = None,
    run_name: str | None = None,
    quiet: bool = False,
) -> CollectResult:
    """Collect one-shot attempts from every model for every task. `options` defaults to correctness only
    (`EvalOptions(device=device, timing=False)`): stage 1 needs executable and correct code, not speed."""
    if attempts < 1 or successes < 1:
        raise ValueError("attempts and successes must be at least 1")
    task_list = [t for t in resolve_tasks(tasks) if not levels or t.level in levels]
    if not task_list:
        raise ValueError("no tasks left after the level filter; check --level")
    backends = _backends(llms)
    opts = _options(options or EvalOptions(device=device, timing=False), device)
    builder = PromptBuilder(template_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    console = Console(stderr=True, quiet=quiet)
    cells: list[CollectCell] = []
    stopped = ""
    config = {"attempts": attempts, "successes": successes, "models": [label for label, _ in backends],
              "tasks": [t.name for t in task_list], "options": opts.to_dict()}
    with ExemplarDB(db_url or out / "cudaopt.db") as db:
        run = _open_run(db, run_name or "collect", "collect", resume, config, SearchProgress(quiet=quiet))
        try:
            for i, task in enumerate(task_list, 1):
                task_id = db.ensure_task(task)
                prompt = builder.oneshot(task)
                for label, llm in backends:
                    pair = _PairCollector(task, task_id, label, llm, db, run.id, prompt, evaluate_fn or default_evaluate, opts,
                                          count_all_runs=resume)
                    pair.run(attempts, successes)
                    cells.append(CollectCell(task.name, task.level, label, pair.attempts, pair.successes))
                    console.print(f"[{i}/{len(task_list)}] {task.name} / {label}: {pair.successes} of {pair.attempts} attempts succeeded")
        except KeyboardInterrupt:
            stopped = "interrupted (every attempt so far is stored; --resume continues)"
        if not stopped:
            db.finish_run(run.id)
        url = db.url
    report = out / "collect.md"
    report.write_text(collect_markdown(cells, run_name or "collect"))
    summary = out / "collect.json"
    summary.write_text(json.dumps({"run_id": run.id, "db_url": url, "stopped": stopped, **config,
                                   "cells": [c.__dict__ for c in cells]}, indent=2))
    console.print(collect_rich_table(cells))
    return CollectResult(run.id, url, out, tuple(cells), report, summary, stopped)
