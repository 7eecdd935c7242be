"""Stage 2, self-supervised learning (CUDA-L1 Table 1): generate, evaluate, keep the successes, fine-tune.

Each iteration samples `samples_per_task` answers to the one-shot prompt of every training task with the
current model, evaluates them for correctness (the default options switch timing off: this stage is
about executable and correct code), stores every answer in the exemplar database, and fine-tunes on the
successes only: reward 1 for a success, failures ignored, no baseline (REINFORCE without a baseline is
exactly maximum likelihood on the successes). No success means no update for that iteration.

Held-out tasks are answered and evaluated with the same model each iteration, but never stored or
trained on; the report gives their success rate beside the training tasks'.

Resumable per iteration: <out_dir>/state.json names the last finished iteration and its model folder
(<out_dir>/iter-<i>/model); an iteration cut short is run again from its start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from cudaopt.train.holdout import HoldoutSpec, Split, split_tasks, write_split
from cudaopt.train.modeling import (FinetuneSettings, LoraSettings, default_device, load_model, load_tokenizer,
                                    require_training_stack, save_final)
from cudaopt.train.rollout import Attempt, EvaluateFn, generate_answers, judge_answer, real_evaluate, store_attempt, summarise


@dataclass(frozen=True)
class IterationReport:
    iteration: int
    train: dict  # summarise() of the training tasks
    held_out: dict  # summarise() of the held-out tasks (empty when there are none)
    trained_on: int  # successes used for the update (0: no update)
    train_loss: float | None
    model_dir: str

    @property
    def success_rate(self) -> float | None:
        return self.train["overall"]["success_rate"]

    def to_dict(self) -> dict:
        return {"iteration": self.iteration, "train": self.train, "held_out": self.held_out, "trained_on": self.trained_on,
                "train_loss": self.train_loss, "model_dir": self.model_dir}


@dataclass(frozen=True)
class SelfResult:
    out_dir: Path
    model_dir: Path
    split: Split
    iterations: tuple[IterationReport, ...] = field(default_factory=tuple)
    db_url: str = ""

    def to_dict(self) -> dict:
        return {"out_dir": str(self.out_dir), "model_dir": str(self.model_dir), "split": self.split.to_dict(),
                "db_url": self.db_url, "iterations": [r.to_dict() for r in self.iterations]}


def stage_tasks(tasks: Sequence[Any], holdout, seed: int, out: Path):
    """A stage's tasks split into training and held-out ones, the split written beside the stage's output.

    Returns (all tasks, training tasks, Split)."""
    out.mkdir(parents=True, exist_ok=True)
    all_tasks = resolve_tasks(tasks)
    split = split_tasks([t.name for t in all_tasks], holdout, seed=seed)
    write_split(split, out / "split.json")
    train_tasks = [t for t in all_tasks if t.name in split.train]
    if not train_tasks:
        raise ValueError("every task is held out; lower --holdout or give more tasks")
    return all_tasks, train_tasks, split


def resolve_tasks(tasks: Sequence[Any]) -> list:
    from cudaopt.tasks.loader import Task, resolve_task

    out = [t if isinstance(t, Task) else resolve_task(t) for t in tasks]
    names = [t.name for t in out]
    if len(set(names)) != len(names):
        raise ValueError("two tasks share a name; rename one (names key the held-out split and the reports)")
    return out


def _load_state(out: Path) -> dict:
    path = out / "state.json"
    return json.loads(path.read_text()) if path.is_file() else {"completed": 0, "model_dir": None, "reports": []}


def _save_state(out: Path, state: dict) -> None:
    tmp = out / "state.json.tmp"
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.replace(out / "state.json")  # atomic: a crash leaves the old state or the new, never half


def train_self(model: str | Path | Any, tasks: Sequence[Any], out_dir: str | Path, *, iterations: int = 3,
               samples_per_task: int = 8, tokenizer: Any = None, db_url: str | Path | None = None,
               evaluate_fn: EvaluateFn | None = None, options: Any = None, holdout: HoldoutSpec = None, seed: int = 0,
               lora: bool = False, epochs: float = 1.0, learning_rate: float = 1e-5, batch_size: int = 1, grad_accum: int = 8,
               max_length: int | None = 8192, max_new_tokens: int = 4096, temperature: float = 1.0, top_p: float = 0.95,
               generation_batch_size: int = 4, resume: bool = False, template_dir: str | Path | None = None,
               eval_holdout: bool = True, bf16: bool | None = None, chat: bool | None = None,
               overrides: dict | None = None) -> SelfResult:
    """Run `iterations` rounds of generate -> evaluate -> keep successes -> fine-tune. See the module docstring."""
    require_training_stack()
    from cudaopt.db.store import ExemplarDB
    from cudaopt.evaluate.result import EvalOptions
    from cudaopt.llm.transformers_local import TransformersLLM
    from cudaopt.prompts.builder import PromptBuilder
    from cudaopt.train.sft import fine_tune

    out = Path(out_dir)
    all_tasks, train_tasks, split = stage_tasks(tasks, holdout, seed, out)
    held_tasks = [t for t in all_tasks if t.name in split.held_out] if eval_holdout else []
    opts = options or EvalOptions(device=default_device(), timing=False)
    evaluate_fn = evaluate_fn or real_evaluate
    builder = PromptBuilder(Path(template_dir) if template_dir else None)
    settings = FinetuneSettings(epochs=epochs, learning_rate=learning_rate, batch_size=batch_size, grad_accum=grad_accum,
                                max_length=max_length, save_steps=10**9, seed=seed, bf16=bf16,
                                lora=LoraSettings() if lora else None, overrides=dict(overrides or {}))
    state = _load_state(out) if resume else {"completed": 0, "model_dir": None, "reports": []}
    current: Any = state["model_dir"] or (str(model) if isinstance(model, Path) else model)
    tok = load_tokenizer(model if isinstance(model, (str, Path)) else current, tokenizer)
    reports = [IterationReport(**r) for r in state["reports"]]
    db_path = db_url or out / "cudaopt.db"
    with ExemplarDB(db_path) as db:
        run_name = f"train-self:{out.resolve()}"
        run = (db.latest_run(run_name, "train") if resume else None) or db.start_run(run_name, {"stage": "self"}, "train")
        task_ids = {t.name: db.ensure_task(t) for t in train_tasks}
        for it in range(state["completed"] + 1, iterations + 1):
            lm = load_model(current)
            llm = TransformersLLM(lm, tok, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                                  batch_size=generation_batch_size, device=default_device())
            name = str(current) if isinstance(current, (str, Path)) else llm.model
            attempts: list[Attempt] = []
            for task in train_tasks + held_tasks:
                prompt = builder.oneshot(task)
                for text in generate_answers(llm, [prompt], samples_per_task):
                    attempt, result = judge_answer(task, prompt, text, evaluate_fn, opts)
                    if task.name in task_ids:  # held-out answers never reach the database
                        attempt = store_attempt(db, run.id, task_ids[task.name], attempt, result, origin="self", model=name, round=it)
                    attempts.append(replace(attempt, reward=1.0 if attempt.success else 0.0))
            wins = [{"prompt": a.prompt, "completion": a.response, "task": a.task}
                    for a in attempts if a.success and a.task in task_ids]
            loss, model_dir = None, str(current)
            if wins:
                trainer, loss, _ = fine_tune(lm, tok, wins, out / f"iter-{it}" / "checkpoints", settings, chat=chat)
                model_dir = str(save_final(trainer.model, tok, out / f"iter-{it}" / "model"))
                current = model_dir
                del trainer
            report = IterationReport(it, summarise(attempts, split.train), summarise(attempts, [t.name for t in held_tasks]),
                                     len(wins), loss, model_dir)
            reports.append(report)
            with (out / "iterations.jsonl").open("a") as f:
                f.write(json.dumps(report.to_dict()) + "\n")
            state = {"completed": it, "model_dir": current if isinstance(current, str) else None,
                     "reports": [r.to_dict() for r in reports]}
            _save_state(out, state)
            del llm, lm
        db.finish_run(run.id)
        url = db.url
    final_dir = Path(state["model_dir"]) if state["model_dir"] else out  # out: a loaded model never updated
    result = SelfResult(out, final_dir, split, tuple(reports), url)
    (out / "report.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return result
