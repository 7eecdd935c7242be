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
from cudaopt.search.stopping import INTERRUPTED, interruptible
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
    report_only: bool = False,
) -> SuiteResult:
    """Optimize each task of a folder (default: the built-in suite) in one run sharing one database.
    `budget`, `rounds`, ... apply per task; `levels` / `name_filter` (a substring) pick tasks.
    `report_only`: evaluate nothing; write the table, plot and per-task outputs of the latest stored run
    again (for a run that was killed before it could write them), over the tasks it reached."""
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
        if report_only:
            return _report_only(db, run_name or f"suite:{title}", task_list, out, title, cfg, backend, opts, builder, progress)
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
                    with interruptible():
                        why = search.run_search()
                except KeyboardInterrupt:
                    partial = search.write_outputs("interrupted")
                    if partial.candidates:  # a task stopped before its first candidate is left out, not scored 0
                        results.append(partial)
                    stopped = INTERRUPTED
                    break
                results.append(search.write_outputs(why))
        report, plot = _write_suite_report(db, run.id, results, out, title)
        if not stopped:
            db.finish_run(run.id)
    return SuiteResult(run.id, db.url, out, tuple(results), summarize_scores([r.best_speedup for r in results]), report, plot, stopped)


def _write_suite_report(db: ExemplarDB, run_id: int, results: list[SearchResult], out: Path, title: str):
    all_records = db.candidates(run_id=run_id)
    rows = [SuiteTaskRow(r.task, r.level, r.best_speedup, r.candidates, r.stopped) for r in results]
    plot = speedup_histogram([r.best_speedup for r in results if r.best_speedup is not None], out / "speedups.png",
                             "best speedup per task", counted="tasks")
    report = out / "report.md"
    report.write_text(suite_report(rows, cost_of(all_records, tasks=len(results)), plot, out, title))
    return report, plot


def _report_only(db: ExemplarDB, name: str, task_list: list[Task], out: Path, title: str, cfg: SearchConfig,
                 backend, opts: EvalOptions, builder: PromptBuilder, progress: SearchProgress) -> SuiteResult:
    run = db.latest_run(name, "suite")
    if run is None:
        raise ValueError(f"no stored run named {name!r} in {db.url}; --report-only writes the report of a run that exists")
    results, missing = [], []
    for task in task_list:
        if db.find_task(task) is None:  # never stored: a report writes nothing into the database
            missing.append(task.name)
            continue
        search = TaskSearch(task, db, run, out / f"level{task.level}" / task.name, cfg, backend, default_evaluate, opts,
                            builder, progress)
        if search.count == 0:  # never reached: leaving it out keeps it from scoring 0 in the table
            missing.append(task.name)
            continue
        results.append(search.write_outputs("as stored (report written again from the database)"))
    if missing:
        title += f"; {len(results)} of {len(task_list)} tasks reached, not reached: {', '.join(missing)}"
    report, plot = _write_suite_report(db, run.id, results, out, title)
    return SuiteResult(run.id, db.url, out, tuple(results), summarize_scores([r.best_speedup for r in results]), report,
                       plot, "report only")
