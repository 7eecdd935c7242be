"""`run_ablation`: the seeds' ablation variants on one budget and one task set, one table.

Each variant runs the ordinary suite search (`cudaopt.search.optimize_suite`) in its own database under
`out_dir/<variant>/`, so no variant sees another's exemplars. A model given as a spec string is opened
afresh for each variant (a replay file then answers every variant from its first record); an `LLM`
object is shared as it is. Variants that belong to training ("no-smoothing") are listed as not
applicable rather than imitated.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cudaopt.ablation.table import (
    ABLATION_HEADERS,
    TableRow,
    ablation_markdown,
    ablation_rows,
)
from cudaopt.ablation.variants import Variant, variant
from cudaopt.collect.runner import resolve_tasks
from cudaopt.evaluate.result import EvalOptions
from cudaopt.llm.base import LLM
from cudaopt.llm.spec import make_llm
from cudaopt.report.stats import summarize_scores
from cudaopt.search.loop import EvaluateFn, SearchConfig
from cudaopt.search.suite import SuiteResult, optimize_suite
from cudaopt.tasks.loader import Task
from cudaopt.train.holdout import HoldoutSpec, Split, split_tasks

DEFAULT_VARIANTS = ("random", "bucket", "island", "no-contrastive", "no-smoothing")


@dataclass(frozen=True)
class VariantOutcome:
    variant: Variant
    suite: SuiteResult | None  # None: not applicable to the search
    best: dict  # task name -> best speedup (None: no correct candidate)


@dataclass(frozen=True)
class AblationResult:
    out_dir: Path
    split: Split
    outcomes: tuple[VariantOutcome, ...]
    rows: tuple[TableRow, ...]
    report_path: Path
    summary_path: Path


def _rows(outcome: VariantOutcome, split: Split) -> list[TableRow]:
    v = outcome.variant
    if outcome.suite is None:
        return [TableRow(v.name, "train", None, note=f"not applicable: {v.not_applicable}"), TableRow(v.name, "held-out", None)]
    counts = {t.task: t.candidates for t in outcome.suite.tasks}
    rows = []
    for name, part in (("train", split.train), ("held-out", split.held_out)):
        rows.append(TableRow(v.name, name, summarize_scores([outcome.best[t] for t in part]),
                             candidates=sum(counts[t] for t in part), note=outcome.suite.stopped))
    return rows


def _rich(rows: Sequence[TableRow], split_name: str, title: str) -> Table:
    table = Table(title=title)
    for h in ABLATION_HEADERS:
        table.add_column(h, justify="left" if h in ("variant", "note") else "right")
    for r in ablation_rows(rows, split_name):
        table.add_row(*r)
    return table


def run_ablation(
    tasks: str | Path | Task | Sequence[str | Path | Task],
    *,
    variants: Sequence[str] = DEFAULT_VARIANTS,
    budget: int = 8,
    llm: str | LLM,
    device: str = "cuda",
    out_dir: str | Path = "cudaopt-runs/ablation",
    holdout: HoldoutSpec = None,
    seed: int = 0,
    rounds: int = 2,
    per_round: int = 4,
    patience: int = 2,
    n_exemplars: int = 2,
    proposers: tuple[str, ...] | None = (),
    evaluate_fn: EvaluateFn | None = None,
    options: EvalOptions | None = None,
    resume: bool = False,
    quiet: bool = False,
) -> AblationResult:
    """Run each variant's suite search on the same tasks, budget and seed; write and print one table.
    `proposers=()` by default: the built-in proposals are the same in every variant and would blur it."""
    if llm is None:
        raise ValueError("the ablation compares prompting variants, so it needs a model: pass --llm")
    chosen = [variant(v) for v in dict.fromkeys(variants)]
    if not chosen:
        raise ValueError("no variants given; choose from random, bucket, island, no-contrastive, no-smoothing")
    task_list = resolve_tasks(tasks)
    split = split_tasks([t.name for t in task_list], holdout, seed=seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    outcomes: list[VariantOutcome] = []
    for v in chosen:
        if v.not_applicable:
            outcomes.append(VariantOutcome(v, None, {}))
            continue
        cfg = SearchConfig(budget=budget, rounds=rounds, per_round=per_round, patience=patience, sampler=v.sampler,
                           n_exemplars=n_exemplars if v.n_exemplars is None else v.n_exemplars,
                           proposers=tuple(proposers) if proposers is not None else None, seed=seed)
        backend = make_llm(llm)  # a fresh backend per variant when llm is a spec string
        suite = optimize_suite(task_list, llm=backend, device=device, out_dir=out / v.name, evaluate_fn=evaluate_fn,
                               options=options, config=cfg, resume=resume, run_name=f"ablation:{v.name}", quiet=quiet)
        outcomes.append(VariantOutcome(v, suite, {t.task: t.best_speedup for t in suite.tasks}))
    rows = tuple(r for o in outcomes for r in _rows(o, split))
    report = out / "ablation.md"
    report.write_text(ablation_markdown(rows, budget=budget))
    summary = out / "ablation.json"
    summary.write_text(json.dumps({
        "budget": budget, "seed": seed, "split": split.to_dict(),
        "variants": {o.variant.name: {"not_applicable": o.variant.not_applicable, "best": o.best} for o in outcomes},
    }, indent=2))
    console = Console(stderr=True, quiet=quiet)
    console.print(_rich(rows, "train", "ablation: training tasks"))
    if split.held_out:
        console.print(_rich(rows, "held-out", "ablation: held-out tasks"))
    return AblationResult(out, split, tuple(outcomes), rows, report, summary)
