"""`cudaopt optimize --suite`: the search over every task of a folder, and the seeds' table per level."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cudaopt.db.store import ExemplarDB
from cudaopt.evaluate.result import EvalOptions
from cudaopt.llm.base import LLM
from cudaopt.llm.spec import make_llm
from cudaopt.prompts.builder import PromptBuilder
from cudaopt.report.markdown import SuiteTaskRow, suite_report
from cudaopt.report.plots import speedup_histogram
from cudaopt.report.stats import ScoreSummary, cost_of, summarize_scores
from cudaopt.search.loop import (
    EvaluateFn,
    SearchConfig,
    SearchResult,
    TaskSearch,
    _open_run,
    _options,
    default_evaluate,
    evaluator_pool,
)
from cudaopt.search.progress import SearchProgress
from cudaopt.tasks.loader import SUITE_DIR, Task, discover_tasks


@dataclass(frozen=True)
class SuiteResult:
    run_id: int
    db_url: str
    out_dir: Path
    tasks: tuple[SearchResult, ...]
    summary: ScoreSummary  # over all tasks; the report has it per level too
    report_path: Path
    plot_path: Path | None
    stopped: str = ""


def optimize_suite(
    tasks: str | Path | list[Task] | None = None,
    *,
    llm: LLM | str | None = None,
    budget: int = 8,
    rounds: int = 2,
    per_round: int = 4,
    patience: int = 2,
    device: str = "cuda",
    db_url: str | None = None,
    out_dir: str | Path = "cudaopt-runs/suite",
    resume: bool = False,
    evaluate_fn: EvaluateFn | None = None,
    devices: Sequence[str] | None = None,
    builder: PromptBuilder | None = None,  # e.g. a retrieval or profile-aware builder (cudaopt.retrieval, cudaopt.profile)
    options: EvalOptions | None = None,
    sampler: str = "bucket",
    n_exemplars: int = 2,
    proposers: tuple[str, ...] | None = None,
    template_dir: str | Path | None = None,
    seed: int = 0,
    levels: tuple[int, ...] | None = None,
    name_filter: str | None = None,
    run_name: str | None = None,
    quiet: bool = False,
    config: SearchConfig | None = None,
) -> SuiteResult:
    """Optimize each task of a folder (default: the built-in suite) in one run sharing one database.
    `budget`, `rounds`, ... apply per task; `levels` / `name_filter` (a substring) pick tasks."""
    if tasks is None or isinstance(tasks, (str, Path)):
        root = Path(tasks) if tasks is not None else SUITE_DIR
        task_list = discover_tasks(root)
        title = str(tasks) if tasks is not None else "built-in suite"
    else:
        task_list, title = list(tasks), "tasks"
    if levels:
        task_list = [t for t in task_list if t.level in levels]
    if name_filter:
        task_list = [t for t in task_list if name_filter in t.name]
    if not task_list:
        raise ValueError("no tasks selected; check the folder, --level and the name filter")
    cfg = config or SearchConfig(budget=budget, rounds=rounds, per_round=per_round, patience=patience, sampler=sampler,
                                 n_exemplars=n_exemplars, proposers=tuple(proposers) if proposers is not None else None, seed=seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    backend = make_llm(llm)
    opts = _options(options, device)
    builder = builder or PromptBuilder(template_dir)
    progress = SearchProgress(quiet=quiet)
    results: list[SearchResult] = []
    stopped = ""
    with ExemplarDB(db_url or out / "cudaopt.db") as db:
        run = _open_run(db, run_name or f"suite:{title}", "suite", resume,
                        {"search": cfg.to_dict(), "options": opts.to_dict(), "llm": getattr(backend, "model", None),
                         "tasks": [t.name for t in task_list]}, progress)
        with evaluator_pool(devices, evaluate_fn) as pool, progress:
            for i, task in enumerate(task_list, 1):
                progress.log(f"[{i}/{len(task_list)}] {task.name} (level {task.level})")
                progress.failures.clear()
                search = TaskSearch(task, db, run, out / f"level{task.level}" / task.name, cfg, backend,
                                    evaluate_fn or default_evaluate, opts, builder, progress, pool)
                try:
                    why = search.run_search()
                except KeyboardInterrupt:
                    results.append(search.write_outputs("interrupted"))
                    stopped = "interrupted (everything evaluated so far is stored; --resume continues)"
                    break
                results.append(search.write_outputs(why))
        all_records = db.candidates(run_id=run.id)
        rows = [SuiteTaskRow(r.task, r.level, r.best_speedup, r.candidates, r.stopped) for r in results]
        plot = speedup_histogram([r.best_speedup for r in results if r.best_speedup is not None], out / "speedups.png",
                                 "best speedup per task")
        report = out / "report.md"
        report.write_text(suite_report(rows, cost_of(all_records, tasks=len(results)), plot, out, title))
        if not stopped:
            db.finish_run(run.id)
    return SuiteResult(run.id, db.url, out, tuple(results), summarize_scores([r.best_speedup for r in results]), report, plot, stopped)
