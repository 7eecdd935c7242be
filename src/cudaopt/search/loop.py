"""The search behind `cudaopt optimize`: rounds of sample -> prompt -> generate -> evaluate -> store.

Round 0 evaluates the built-in proposers (torch.compile modes, CUDA-graph capture); rounds 1.. ask the
LLM with contrastive prompts built from exemplars the sampler draws from the database. Every candidate
is committed as soon as it is evaluated, and a candidate whose source the run has already stored is
never evaluated again, so `resume=True` after a crash or Ctrl-C loses nothing and repeats nothing.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

from cudaopt.db.sampling import make_sampler
from cudaopt.db.store import CandidateRecord, ExemplarDB, RunInfo
from cudaopt.evaluate.result import EvalOptions, EvalResult
from cudaopt.llm.base import LLM
from cudaopt.llm.spec import make_llm
from cudaopt.prompts.builder import PromptBuilder
from cudaopt.prompts.parser import parse_response
from cudaopt.report.markdown import task_report
from cudaopt.report.plots import speedup_histogram
from cudaopt.report.stats import cost_of
from cudaopt.search.progress import SearchProgress
from cudaopt.search.proposers import ProposerError, builtin_proposals
from cudaopt.search.stopping import INTERRUPTED, interruptible
from cudaopt.tasks.loader import Task, resolve_task

EvaluateFn = Callable[[Task, str, EvalOptions], EvalResult]


@dataclass(frozen=True)
class SearchConfig:
    budget: int = 32  # candidates per task (evaluated or not), proposers included
    rounds: int = 8  # LLM rounds after the proposers' round 0
    per_round: int = 4  # prompts per round
    patience: int = 3  # stop after this many LLM rounds without a gain above min_gain
    min_gain: float = 0.01  # relative: 1.00x -> 1.01x counts, 1.00x -> 1.005x does not
    sampler: str = "bucket"  # bucket | island | uniform
    n_exemplars: int = 2
    bucket_width: float = 0.25
    tau: float = 1.0
    n_islands: int = 4
    island_reset_every: int = 4
    proposers: tuple[str, ...] | None = None  # None: the defaults that fit the device; (): none
    seed: int = 0
    build_ahead: bool = True  # build a round's new extensions side by side first (with the local evaluator)

    def __post_init__(self) -> None:
        if self.budget < 1 or self.rounds < 0 or self.per_round < 1:
            raise ValueError("budget and per_round must be at least 1, rounds at least 0")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["proposers"] = list(self.proposers) if self.proposers is not None else None
        return d


@dataclass(frozen=True)
class SearchResult:
    task: str
    level: int
    run_id: int
    db_url: str
    out_dir: Path
    best_speedup: float | None
    best_candidate_id: int | None
    best_path: Path | None
    report_path: Path | None
    plot_path: Path | None
    candidates: int  # this run's candidates for the task
    evaluated: int
    failures: dict = field(default_factory=dict)  # "status@stage" -> count
    stopped: str = ""
    gpu_seconds: float = 0.0
    llm_tokens: int = 0


def default_evaluate(task: Task, source: str, options: EvalOptions) -> EvalResult:
    from cudaopt.evaluate import evaluate

    return evaluate(task, source, options)


def _safe_evaluate(fn: EvaluateFn, task: Task, source: str, options: EvalOptions) -> EvalResult:
    try:
        return fn(task, source, options)
    except Exception as e:  # noqa: BLE001 - a broken evaluator call is recorded, the search goes on
        return EvalResult(status="runtime_error", stage_reached="load", message=f"evaluator raised {type(e).__name__}: {e}",
                          device=options.device, task=task.name)


def _round_rng(seed: int, rnd: int, index: int) -> random.Random:
    # Deterministic per (seed, round, prompt) so a resumed search draws what the first one would have.
    return random.Random(seed * 1_000_003 + rnd * 1009 + index)


class TaskSearch:
    """One task's search inside one run (a single-task run, or one task of a suite run)."""

    def __init__(self, task: Task, db: ExemplarDB, run: RunInfo, out_dir: Path, config: SearchConfig,
                 llm: LLM | None, evaluate_fn: EvaluateFn, options: EvalOptions, builder: PromptBuilder,
                 progress: SearchProgress, pool=None):
        self.task, self.db, self.run, self.out_dir, self.cfg = task, db, run, out_dir, config
        self.llm, self.evaluate_fn, self.options, self.builder, self.progress = llm, evaluate_fn, options, builder, progress
        self.pool = pool  # an EvaluatorPool: a round's candidates are evaluated concurrently, one per device
        self.sampler = make_sampler(config.sampler, n=config.n_exemplars, width=config.bucket_width, tau=config.tau,
                                    n_islands=config.n_islands, reset_every=config.island_reset_every, seed=config.seed)
        self.task_id = db.ensure_task(task)
        history = db.candidates(task_id=self.task_id, run_id=run.id)
        self.count = len(history)
        self.best = max((c.speedup for c in history if c.status == "ok" and c.speedup is not None), default=None)
        self.next_round = max((c.round for c in history), default=-1) + 1
        self.stale_rounds = self._stale_rounds(history)
        for c in history:
            self.progress.failures[f"{c.status}@{c.stage_reached}" if c.stage_reached else c.status] += c.status != "ok"

    def _stale_rounds(self, history: list[CandidateRecord]) -> int:
        """LLM rounds since the last gain, rebuilt from the stored history (for resume)."""
        best, stale = None, 0
        for rnd in sorted({c.round for c in history}):
            got = [c.speedup for c in history if c.round == rnd and c.status == "ok" and c.speedup is not None]
            top = max(got, default=None)
            if top is not None and (best is None or top > best * (1 + self.cfg.min_gain)):
                best, stale = top, 0
            elif rnd > 0:
                stale += 1
        return stale

    # -- one candidate --------------------------------------------------------------------------------
    def _store(self, record: CandidateRecord) -> CandidateRecord:
        rec = self.db.add_candidate(record)
        self.count += 1
        if rec.status == "ok" and rec.speedup is not None and (self.best is None or rec.speedup > self.best):
            self.best = rec.speedup
        self.progress.record(rec.status, rec.stage_reached)
        self.progress.update(evaluated=self.count, best=self.best)
        return rec

    def _evaluate_and_store(self, source: str, **meta) -> CandidateRecord | None:
        stored = self._evaluate_batch([(source, meta)])
        return stored[0] if stored else None

    def _evaluate_batch(self, items: list, limit: int | None = None) -> list[CandidateRecord]:
        """Evaluate a round's candidates (concurrently when there is a pool) and store each as it finishes.

        Storing happens here, in this thread, one committed row per result: a crash loses nothing
        already evaluated. Sources already evaluated in this run are skipped (resume, repeats).
        """
        todo, seen = [], set()
        for item in items:
            if isinstance(item, CandidateRecord):  # already decided (no code, a repeat): stored in its place
                todo.append(item)
                continue
            source, meta = item
            if source in seen or self.db.has_source(self.task_id, source, run_id=self.run.id):
                continue
            seen.add(source)
            todo.append(item)
        todo = todo[:limit] if limit is not None else todo
        if not todo:
            return []
        opts = replace(self.options, previous_best=self.best)
        stored = []
        to_run = [t for t in todo if not isinstance(t, CandidateRecord)]
        self._build_ahead([source for source, _ in to_run])
        if self.pool is None or len(to_run) <= 1:
            for item in todo:
                if isinstance(item, CandidateRecord):
                    stored.append(self._store(item))
                    continue
                source, meta = item
                self.progress.update(phase=f"evaluating {meta.get('origin', '')}")
                result = _safe_evaluate(self.evaluate_fn, self.task, source, opts)
                stored.append(self._store(CandidateRecord.from_result(result, task_id=self.task_id, run_id=self.run.id, source=source, **meta)))
            return stored
        stored += [self._store(t) for t in todo if isinstance(t, CandidateRecord)]
        self.progress.update(phase=f"evaluating {len(to_run)} candidates on {self.pool.size} devices")
        jobs = {self.pool.submit(self.task, source, opts): (source, meta) for source, meta in to_run}
        for job in self.pool.as_completed(list(jobs)):
            source, meta = jobs[job]
            stored.append(self._store(CandidateRecord.from_result(job.result(), task_id=self.task_id, run_id=self.run.id,
                                                                  source=source, **meta)))
        return stored

    def _build_ahead(self, sources: list[str]) -> None:
        """A round's new extensions built side by side before its evaluations run one after another."""
        from cudaopt.evaluate.prebuild import build_ahead, needs_build

        # only where the evaluations run on this machine, with the evaluator whose cache this fills
        if not self.cfg.build_ahead or self.evaluate_fn is not default_evaluate:
            return

        n = sum(needs_build(s) for s in sources)
        if n < 2:
            return
        self.progress.update(phase=f"building {n} extensions side by side")
        t0 = time.perf_counter()
        try:
            built = build_ahead(sources, device=self.options.device, reference=self.task.source,
                                timeout_s=self.options.compile_timeout_s)
            if built:
                self.progress.log(f"{self.task.name}: built {sum(b.ok for b in built)} of {len(built)} extensions ahead "
                                  f"in {time.perf_counter() - t0:.0f} s (one at a time: {sum(b.seconds for b in built):.0f} s)")
        except Exception as e:  # noqa: BLE001 - only a head start: the evaluator builds (and reports) anyway
            self.progress.log(f"[yellow]{self.task.name}: building ahead failed ({type(e).__name__}: {e}); the evaluator builds[/]")

    # -- rounds ---------------------------------------------------------------------------------------
    def _proposer_round(self) -> None:
        try:
            proposals = builtin_proposals(self.task, self.options.device, self.cfg.proposers)
        except ProposerError as e:
            self.progress.log(f"[yellow]{self.task.name}: built-in proposers skipped: {e}[/]")
            return
        self._evaluate_batch([(p.source, dict(origin=f"proposer:{p.name}", model="builtin", round=0, island=i % self.cfg.n_islands))
                              for i, p in enumerate(proposals)], limit=max(0, self.cfg.budget - self.count))

    def _llm_round(self, rnd: int) -> None:
        exemplars = self.db.exemplars(self.task_id)
        k = min(self.cfg.per_round, self.cfg.budget - self.count)
        plans = []
        for i in range(k):
            island = i % self.cfg.n_islands
            picked = self.sampler.sample(exemplars, _round_rng(self.cfg.seed, rnd, i), island=island, round=rnd)
            plans.append((island, picked, self.builder.build(self.task, picked)))
        self.progress.update(phase=f"asking {self.llm.model or 'the LLM'} ({k} prompts)")
        completions = self.llm.generate([p for _, _, p in plans], n=1, task=self.task.name)
        batch: list = []  # (source, meta) to evaluate, or a CandidateRecord already decided
        for (island, picked, prompt), c in zip(plans, completions):
            meta = dict(origin="llm" if picked else "oneshot", model=c.model or self.llm.model, prompt=prompt,
                        response=c.text, parent_ids=tuple(e.id for e in picked), prompt_tokens=c.prompt_tokens,
                        completion_tokens=c.completion_tokens, round=rnd, island=island)
            parsed = parse_response(c.text) if not c.error else None
            if parsed is None or not parsed.ok:
                status, why = ("llm_error", c.error) if parsed is None else ("parse_error", parsed.reason)
                batch.append(CandidateRecord(task_id=self.task_id, run_id=self.run.id, source="", status=status,
                                             stage_reached="", note=why, **meta))
            elif parsed.code in {b[0] for b in batch if isinstance(b, tuple)} or self.db.has_source(
                    self.task_id, parsed.code, run_id=self.run.id):
                # Tokens were spent on a repeat: keep the cost, never the work.
                batch.append(CandidateRecord(task_id=self.task_id, run_id=self.run.id, source=parsed.code, status="duplicate",
                                             note="same source as an earlier candidate of this run", **{**meta, "response": ""}))
            else:
                batch.append((parsed.code, meta))
        self._evaluate_batch(batch)

    def run_search(self) -> str:
        """Run until done; returns why it stopped."""
        cfg = self.cfg
        self.progress.update(task=self.task.name, rounds=cfg.rounds, budget=cfg.budget, evaluated=self.count, best=self.best)
        # Round 0 is idempotent (already-stored proposals are skipped), so it is safe to repeat on resume.
        if self.count < cfg.budget:
            self.progress.update(round=0)
            self._proposer_round()
        if self.llm is None:
            return "no LLM configured: built-in proposers only"
        for rnd in range(max(1, self.next_round), cfg.rounds + 1):
            if self.count >= cfg.budget:
                return f"budget of {cfg.budget} candidates spent"
            if self.stale_rounds >= cfg.patience:
                return f"no improvement in {cfg.patience} rounds"
            before = self.best
            self.progress.update(round=rnd)
            self._llm_round(rnd)
            gained = self.best is not None and (before is None or self.best > before * (1 + cfg.min_gain))
            self.stale_rounds = 0 if gained else self.stale_rounds + 1
        if self.count >= cfg.budget:
            return f"budget of {cfg.budget} candidates spent"
        return f"all {cfg.rounds} rounds done" if self.stale_rounds < cfg.patience else f"no improvement in {cfg.patience} rounds"

    # -- outputs --------------------------------------------------------------------------------------
    def write_outputs(self, stopped: str) -> SearchResult:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        records = self.db.candidates(task_id=self.task_id, run_id=self.run.id)
        ok = [r for r in records if r.status == "ok" and r.speedup is not None]
        best = max(ok, key=lambda r: r.speedup, default=None)
        best_path = None
        if best is not None:
            best_path = self.out_dir / "best_kernel.py"
            header = (f"# cudaopt optimize: best candidate for task {self.task.name}: {best.speedup:.2f}x over "
                      f"{(best.result or {}).get('baseline', 'eager')} on {best.gpu_name or (best.result or {}).get('device', '?')}\n"
                      f"# candidate #{best.id}, origin {best.origin}, run {self.run.id}. Check: cudaopt eval <reference> best_kernel.py\n")
            best_path.write_text(header + best.source)
        plot = speedup_histogram([r.speedup for r in ok], self.out_dir / "speedups.png", f"{self.task.name}: correct candidates")
        cost = cost_of(records, tasks=1)
        report = self.out_dir / "report.md"
        report.write_text(task_report(self.task.name, records, best, cost, plot, self.out_dir, stopped, best_path))
        return SearchResult(
            task=self.task.name, level=self.task.level, run_id=self.run.id, db_url=self.db.url, out_dir=self.out_dir,
            best_speedup=best.speedup if best else None, best_candidate_id=best.id if best else None, best_path=best_path,
            report_path=report, plot_path=plot, candidates=len(records), evaluated=cost.evaluated,
            failures=dict(Counter(f"{r.status}@{r.stage_reached}" if r.stage_reached else r.status for r in records if r.status != "ok")),
            stopped=stopped, gpu_seconds=cost.gpu_seconds, llm_tokens=cost.tokens,
        )


@contextlib.contextmanager
def evaluator_pool(devices: Sequence[str] | None, evaluate_fn: EvaluateFn | None):
    """A pool with one worker per device when several are given; None (evaluate in turn) otherwise."""
    if not devices or len(devices) < 2:
        yield None
        return
    from cudaopt.pool.local import EvaluatorPool

    pool = EvaluatorPool(list(devices), evaluate_fn)
    try:
        yield pool
    finally:
        pool.close(wait=True, cancel_pending=True)


def _options(options: EvalOptions | None, device: str) -> EvalOptions:
    if options is None:
        return EvalOptions(device=device)
    return options if options.device == device else replace(options, device=device)


def _open_run(db: ExemplarDB, name: str, kind: str, resume: bool, config: dict, progress: SearchProgress) -> RunInfo:
    if resume:
        run = db.latest_run(name, kind)
        if run is not None:
            db.reopen_run(run.id)
            progress.log(f"resuming run {run.id} ({name})")
            return run
        progress.log(f"[yellow]nothing to resume for {name}: starting a new run[/]")
    return db.start_run(name, config, kind)


def optimize(
    task: str | Path | Task,
    *,
    llm: LLM | str | None = None,
    budget: int = 32,
    rounds: int = 8,
    per_round: int = 4,
    patience: int = 3,
    device: str = "cuda",
    db_url: str | None = None,
    out_dir: str | Path | None = None,
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
    run_name: str | None = None,
    quiet: bool = False,
    config: SearchConfig | None = None,
) -> SearchResult:
    """Search for a faster kernel for one task. See SearchConfig for the knobs; `config` overrides them."""
    task = task if isinstance(task, Task) else resolve_task(task)
    cfg = config or SearchConfig(budget=budget, rounds=rounds, per_round=per_round, patience=patience, sampler=sampler,
                                 n_exemplars=n_exemplars, proposers=tuple(proposers) if proposers is not None else None, seed=seed)
    out = Path(out_dir) if out_dir else Path("cudaopt-runs") / task.name
    out.mkdir(parents=True, exist_ok=True)
    backend = make_llm(llm)
    opts = _options(options, device)
    progress = SearchProgress(quiet=quiet)
    with ExemplarDB(db_url or out / "cudaopt.db") as db:
        run = _open_run(db, run_name or f"optimize:{task.name}", "task", resume,
                        {"search": cfg.to_dict(), "options": opts.to_dict(), "llm": getattr(backend, "model", None)}, progress)
        with evaluator_pool(devices, evaluate_fn) as pool, progress:
            search = TaskSearch(task, db, run, out, cfg, backend, evaluate_fn or default_evaluate, opts, builder or PromptBuilder(template_dir),
                                progress, pool)
            try:
                with interruptible():
                    stopped = search.run_search()
            except KeyboardInterrupt:
                stopped = INTERRUPTED
        result = search.write_outputs(stopped)
        if stopped != INTERRUPTED:
            db.finish_run(run.id)
    return result
