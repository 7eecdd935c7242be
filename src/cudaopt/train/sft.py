"""Stage 1, supervised fine-tuning on the database's successful candidates (TRL SFTTrainer, LoRA optional).

Checkpoints go to <out_dir>/checkpoints every `save_steps`; `resume=True` continues from the latest one.
The finished model (adapters merged) and its tokenizer go to <out_dir>/final, which the next stage takes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from cudaopt.train.holdout import HoldoutSpec, Split, split_tasks, write_split
from cudaopt.train.modeling import (FinetuneSettings, LoraSettings, as_completion, as_prompt, default_bf16, latest_checkpoint,
                                    load_tokenizer, require_training_stack, save_final, uses_chat)


@dataclass(frozen=True)
class SFTResult:
    out_dir: Path
    model_dir: Path
    examples: int
    split: Split
    train_loss: float | None  # mean over the whole run (TRL's training_loss)
    resumed_from: Path | None = None
    final_loss: float | None = None  # the last logged per-step loss: how well the examples are learnt at the end
    final_token_accuracy: float | None = None  # TRL's mean_token_accuracy at the last log

    def to_dict(self) -> dict:
        return {"out_dir": str(self.out_dir), "model_dir": str(self.model_dir), "examples": self.examples,
                "split": self.split.to_dict(), "train_loss": self.train_loss, "final_loss": self.final_loss,
                "final_token_accuracy": self.final_token_accuracy,
                "resumed_from": str(self.resumed_from) if self.resumed_from else None}


def fine_tune(model: Any, tokenizer: Any, rows: Sequence[dict], work_dir: Path, settings: FinetuneSettings, *,
              resume: bool = False, chat: bool | None = None):
    """Train on (prompt, completion) rows, loss on the completion only. Returns (trainer, train loss, resumed from)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    chat = uses_chat(tokenizer, chat)
    data = Dataset.from_list([{"prompt": as_prompt(r["prompt"], chat), "completion": as_completion(r["completion"], chat)} for r in rows])
    bf16 = default_bf16() if settings.bf16 is None else settings.bf16
    config = SFTConfig(
        output_dir=str(work_dir), num_train_epochs=settings.epochs, learning_rate=settings.learning_rate,
        per_device_train_batch_size=settings.batch_size, gradient_accumulation_steps=settings.grad_accum,
        max_length=settings.max_length, save_steps=settings.save_steps, logging_steps=settings.logging_steps,
        seed=settings.seed, bf16=bf16, completion_only_loss=True, report_to=[], save_total_limit=2,
        **{"use_cpu": not _has_cuda(), "disable_tqdm": True, **settings.overrides},
    )
    trainer = SFTTrainer(model=model if not isinstance(model, Path) else str(model), args=config, train_dataset=data,
                         processing_class=tokenizer,
                         peft_config=settings.lora.peft_config() if settings.lora else None)
    checkpoint = latest_checkpoint(work_dir) if resume else None
    out = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    return trainer, float(out.training_loss) if out and out.training_loss is not None else None, checkpoint


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _rows_from(data_or_db: Any, holdout: HoldoutSpec, tasks: Sequence[str] | None, seed: int,
               template_dir: str | Path | None) -> tuple[list[dict], Split]:
    if isinstance(data_or_db, (list, tuple)):
        rows = list(data_or_db)
    elif str(data_or_db).endswith(".jsonl"):
        from cudaopt.train.data import read_jsonl

        rows = read_jsonl(data_or_db)
        sidecar = Path(str(data_or_db)).with_suffix(".split.json")  # written by export_sft: its held-out tasks
        if sidecar.is_file() and holdout is None:
            exported = json.loads(sidecar.read_text())
            return rows, Split(tuple(exported["train"]), tuple(exported["held_out"]))
    else:
        from cudaopt.db.store import ExemplarDB, existing_database
        from cudaopt.prompts.builder import PromptBuilder
        from cudaopt.train.data import sft_rows

        with ExemplarDB(existing_database(data_or_db)) as db:
            return sft_rows(db, holdout=holdout, tasks=tasks, seed=seed,
                            builder=PromptBuilder(Path(template_dir) if template_dir else None))
    # Rows from a file or a list: the held-out rule still applies to any row naming its task.
    names = {r.get("task", "") for r in rows} - {""}
    split = split_tasks([n for n in names if tasks is None or n in tasks], holdout, seed=seed)
    keep = set(split.train)
    return [r for r in rows if r.get("task", "") in keep or (not r.get("task") and not split.held_out)], split


def train_sft(model: str | Path | Any, data_or_db: str | Path | Sequence[dict], out_dir: str | Path, *,
              tokenizer: Any = None, holdout: HoldoutSpec = None, tasks: Sequence[str] | None = None,
              lora: bool = False, lora_r: int = 16, lora_alpha: int = 32, lora_target_modules: str | tuple[str, ...] = "all-linear",
              epochs: float = 1.0, learning_rate: float = 2e-5, batch_size: int = 1, grad_accum: int = 8,
              max_length: int | None = 8192, save_steps: int = 200, resume: bool = False, seed: int = 0,
              template_dir: str | Path | None = None, bf16: bool | None = None, chat: bool | None = None,
              overrides: dict | None = None) -> SFTResult:
    """Fine-tune `model` on the (prompt, completion) pairs of `data_or_db`: an exported JSONL, a database
    URL/path (exported on the fly), or a list of row dicts. Held-out tasks are dropped first."""
    require_training_stack()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows, split = _rows_from(data_or_db, holdout, tasks, seed, template_dir)
    write_split(split, out / "split.json")
    if not rows:
        raise ValueError("no training pairs: the database has no successful candidates for the training tasks")
    tok = load_tokenizer(model, tokenizer)
    settings = FinetuneSettings(epochs=epochs, learning_rate=learning_rate, batch_size=batch_size, grad_accum=grad_accum,
                                max_length=max_length, save_steps=save_steps, seed=seed, bf16=bf16,
                                lora=LoraSettings(r=lora_r, alpha=lora_alpha, target_modules=lora_target_modules) if lora else None,
                                overrides=dict(overrides or {}))
    trainer, loss, resumed = fine_tune(str(model) if isinstance(model, Path) else model, tok, rows, out / "checkpoints",
                                       settings, resume=resume, chat=chat)
    final = save_final(trainer.model, tok, out / "final")
    logged = [h for h in trainer.state.log_history if "loss" in h]
    result = SFTResult(out, final, len(rows), split, loss, resumed,
                       final_loss=float(logged[-1]["loss"]) if logged else None,
                       final_token_accuracy=float(logged[-1]["mean_token_accuracy"]) if logged and "mean_token_accuracy" in logged[-1] else None)
    (out / "report.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return result

