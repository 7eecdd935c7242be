"""Stage 3, contrastive GRPO (CUDA-L1 Section 2.4) on TRL's GRPOTrainer.

Prompts are built when the trainer draws them, not in advance: the training set is a `datasets`
IterableDataset whose generator picks the next training task, bucket-samples exemplars from the
database as it is at that moment, and builds the contrastive prompt (one-shot while a task has none).
TRL repeats each drawn row `group_size` times, so a group shares one prompt. Accelerate reads one batch
ahead, so a prompt may miss the evaluations of the step just before it.

Reward for a completion: the evaluator's speedup, 0 when there is no code or it fails or is rejected
(or `reward_fn(task, text)` when given). Suspicious jumps go to the optional judge (a confirmed hack
scores 0 and joins the hacking-case store). Every evaluated completion is stored in the database, so the
exemplars improve with the model. The raw rewards are then smoothed (running z-score clipped to +-k)
and handed to TRL, which computes the group-relative advantage and the clipped (epsilon) objective with
the KL term (beta) against the starting model.

Resume: TRL checkpoints (<out_dir>/checkpoints/checkpoint-N, every `save_steps`) carry the smoother's
running statistics and the per-task best speedups (cudaopt_grpo_state.json); `resume=True` continues
from the latest one. The data position is not replayed (prompts are fresh draws anyway).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from cudaopt.train.hacks import HackStore, RewardChecker
from cudaopt.train.holdout import HoldoutSpec, Split
from cudaopt.train.modeling import (as_prompt, completion_text, default_bf16, default_device, latest_checkpoint,
                                    load_tokenizer, require_training_stack, save_final, uses_chat)
from cudaopt.train.rollout import Attempt, EvaluateFn, generate_answers, judge_answer, real_evaluate, store_attempt, summarise
from cudaopt.train.smoothing import RewardSmoother

STATE_FILE = "cudaopt_grpo_state.json"
RewardFn = Callable[[Any, str], float]  # (Task, completion text) -> raw reward


@dataclass(frozen=True)
class GRPOResult:
    out_dir: Path
    model_dir: Path
    split: Split
    steps: int
    train: dict  # summarise() of every completion scored during training
    final_eval: dict = field(default_factory=dict)  # {"train": summarise(), "held_out": summarise()} after training
    db_url: str = ""

    def to_dict(self) -> dict:
        return {"out_dir": str(self.out_dir), "model_dir": str(self.model_dir), "split": self.split.to_dict(),
                "steps": self.steps, "train": self.train, "final_eval": self.final_eval, "db_url": self.db_url}


class PromptStream:
    """Yields {prompt, task, parent_ids} rows forever, each prompt built from the database when drawn."""

    def __init__(self, tasks: Sequence[Any], db: Any, task_ids: dict, builder: Any, sampler: Any, chat: bool, seed: int):
        self.tasks, self.db, self.task_ids, self.builder, self.sampler = list(tasks), db, task_ids, builder, sampler
        self.chat, self.seed, self.drawn = chat, seed, 0

    def __call__(self):
        rng = random.Random(self.seed)
        while True:
            order = list(self.tasks)
            rng.shuffle(order)
            for task in order:
                picked = self.sampler.sample(self.db.exemplars(self.task_ids[task.name]), rng)
                self.drawn += 1
                yield {"prompt": as_prompt(self.builder.build(task, picked), self.chat), "task": task.name,
                       "parent_ids": json.dumps([e.id for e in picked])}

    def dataset(self):
        from datasets import Features, IterableDataset, Value

        # `datasets` pickles the generator and its arguments to fingerprint them; the stream holds a live
        # database engine, so it is passed by a key into this module's registry instead.
        key = id(self)
        _STREAMS[key] = self
        prompt = [{"role": Value("string"), "content": Value("string")}] if self.chat else Value("string")
        return IterableDataset.from_generator(_stream_rows, gen_kwargs={"key": key}, features=Features(
            {"prompt": prompt, "task": Value("string"), "parent_ids": Value("string")}))


_STREAMS: dict[int, PromptStream] = {}


def _stream_rows(key: int):
    yield from _STREAMS[key]()


class CudaoptReward:
    """The reward function handed to GRPOTrainer (called with the batch's prompts, completions and columns)."""

    __name__ = "cudaopt_speedup"

    def __init__(self, tasks: dict, db: Any, run_id: int, task_ids: dict, *, evaluate_fn: EvaluateFn, options: Any,
                 smoother: RewardSmoother, checker: RewardChecker, reward_fn: RewardFn | None, model_name: str, log_path: Path):
        self.tasks, self.db, self.run_id, self.task_ids = tasks, db, run_id, task_ids
        self.evaluate_fn, self.options, self.smoother, self.checker = evaluate_fn, options, smoother, checker
        self.reward_fn, self.model_name, self.log_path = reward_fn, model_name, log_path
        self.best: dict[str, float] = {}
        for name, tid in task_ids.items():
            speeds = [e.speedup for e in db.exemplars(tid)]
            if speeds:
                self.best[name] = max(speeds)
        self.attempts: list[Attempt] = []
        self.eval_seconds = 0.0
        self.compile_seconds = 0.0  # the evaluations' builds of new sources, a part of eval_seconds

    def _score(self, task: Any, prompt: str, text: str, parents: list[int], step: int) -> Attempt:
        if self.reward_fn is not None:
            raw = float(self.reward_fn(task, text))
            attempt = Attempt(task.name, prompt, text, None, "custom_reward", note=f"reward {raw:.4g}")
            attempt = store_attempt(self.db, self.run_id, self.task_ids[task.name], attempt, None, origin="grpo",
                                    model=self.model_name, round=step, parent_ids=parents)
            return Attempt(**{**attempt.__dict__, "reward": raw})
        from dataclasses import replace as _replace

        opts = _replace(self.options, previous_best=self.best.get(task.name)) if hasattr(self.options, "previous_best") else self.options
        attempt, result = judge_answer(task, prompt, text, self.evaluate_fn, opts)
        self.compile_seconds += float(getattr(result, "compile_seconds", 0.0) or 0.0)
        raw = attempt.speedup if attempt.success and attempt.speedup is not None else 0.0
        status = note = None
        if raw > 0:
            verdict = self.checker.check(task.name, task.source, attempt.code or "", raw, self.best.get(task.name))
            if verdict is not None and verdict.hack:
                status, note, raw = "rejected", f"judge: reward hack ({verdict.category})", 0.0
                attempt = Attempt(task.name, prompt, text, attempt.code, "rejected", None, note)
        attempt = store_attempt(self.db, self.run_id, self.task_ids[task.name], attempt, result, origin="grpo",
                                model=self.model_name, round=step, parent_ids=parents, status=status, note=note)
        if raw > self.best.get(task.name, 0.0):
            self.best[task.name] = raw
        return Attempt(**{**attempt.__dict__, "reward": raw})

    def __call__(self, prompts: list, completions: list, task: list, parent_ids: list | None = None, **kw) -> list[float]:
        state = kw.get("trainer_state")
        step = int(getattr(state, "global_step", 0) or 0) + 1
        t0 = time.perf_counter()
        self._build_ahead(completions, task)
        self.compile_seconds += time.perf_counter() - t0  # the group's builds, side by side, count as build time
        batch = []
        for i, completion in enumerate(completions):
            p = prompts[i]  # plain text, or chat messages for a tokenizer with a chat template
            prompt = p if isinstance(p, str) else "\n".join(m.get("content", "") for m in p if isinstance(m, dict))
            parents = json.loads(parent_ids[i]) if parent_ids else []
            batch.append(self._score(self.tasks[task[i]], prompt, completion_text(completion), parents, step))
        self.eval_seconds += time.perf_counter() - t0
        raw = [a.reward for a in batch]
        smoothed = self.smoother(raw)
        self.attempts += batch
        with self.log_path.open("a") as f:
            for a, s in zip(batch, smoothed):
                f.write(json.dumps({"step": step, "task": a.task, "status": a.status, "raw": a.reward, "smoothed": s,
                                    "candidate_id": a.candidate_id}) + "\n")
        log_metric = kw.get("log_metric")
        if log_metric is not None:
            log_metric("cudaopt/raw_reward_mean", sum(raw) / len(raw))
            log_metric("cudaopt/success_rate", sum(a.success for a in batch) / len(batch))
            log_metric("cudaopt/eval_seconds", time.perf_counter() - t0)
        return smoothed

    def _build_ahead(self, completions: list, task_names: list) -> None:
        """The group's new extensions built side by side (sandboxed) before its answers are evaluated one after
        another: session 8's H200 steps spent 63-69 s per new source building, one at a time."""
        if self.reward_fn is not None or self.evaluate_fn is not real_evaluate:
            return  # a custom reward, or evaluations elsewhere (a service, a test's fake): nothing to build here
        from cudaopt.evaluate.prebuild import build_ahead
        from cudaopt.prompts.parser import parse_response

        codes, refs = [], []
        for completion, name in zip(completions, task_names):
            parsed = parse_response(completion_text(completion))
            if parsed.ok:  # the static scan reads each answer's task (its dtype, its sizes)
                codes.append(parsed.code)
                refs.append(self.tasks[name].source)
        try:
            build_ahead(codes, device=self.options.device, reference=refs,
                        timeout_s=getattr(self.options, "compile_timeout_s", 300.0))
        except Exception:  # noqa: BLE001 - only a head start: the evaluator builds (and reports) anyway
            pass

    def state(self) -> dict:
        return {"smoother": self.smoother.state(), "best": self.best}

    def load_state(self, d: dict) -> None:
        self.smoother = RewardSmoother.from_state(d["smoother"])
        self.best.update({k: float(v) for k, v in d.get("best", {}).items()})


class _GenerationClock:
    """Seconds the trainer spends generating completions: wraps its `_generate` (TRL's GRPOTrainer calls it
    once a step, before the rewards), so a step splits into generation, evaluation and the rest (the
    update). `seconds` stays None where the trainer has no such method."""

    def __init__(self) -> None:
        self.seconds: float | None = None

    def attach(self, trainer: Any) -> None:
        inner = getattr(trainer, "_generate", None)
        if not callable(inner):
            return
        self.seconds = 0.0

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                self.seconds += time.perf_counter() - t0

        trainer._generate = timed


def _callbacks(reward: CudaoptReward, steps_log: Path, gen: _GenerationClock | None = None, trl_log: Path | None = None):
    from transformers import TrainerCallback

    trl_log = trl_log or steps_log.with_name("grpo_log.jsonl")

    class StateAndTiming(TrainerCallback):
        """Saves the smoother with each checkpoint; logs step wall time, generation and evaluation time, and
        peak memory."""

        def on_step_begin(self, args, state, control, **kw):
            self.t0, self.eval0, self.build0 = time.perf_counter(), reward.eval_seconds, reward.compile_seconds
            self.gen0 = gen.seconds if gen is not None else None

        def on_step_end(self, args, state, control, **kw):
            import torch

            mem = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
            g = gen.seconds - self.gen0 if gen is not None and gen.seconds is not None and self.gen0 is not None else None
            with steps_log.open("a") as f:
                f.write(json.dumps({"step": state.global_step, "seconds": time.perf_counter() - self.t0,
                                    "generation_seconds": g, "eval_seconds": reward.eval_seconds - self.eval0,
                                    "build_seconds": reward.compile_seconds - self.build0,
                                    "peak_memory_bytes": mem}) + "\n")

        def on_log(self, args, state, control, logs=None, **kw):
            if logs:  # TRL's own numbers per logged step: loss, kl, grad_norm, reward, completion lengths
                with trl_log.open("a") as f:
                    f.write(json.dumps({"step": state.global_step, **logs}) + "\n")

        def on_save(self, args, state, control, **kw):
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                (folder / STATE_FILE).write_text(json.dumps(reward.state()))

    return [StateAndTiming()]


def vllm_overrides(mode: str | None, url: str | None = None) -> dict:
    """GRPOConfig fields for generation by vLLM through TRL: "colocate" (vLLM inside the training processes)
    or "server" (a `trl vllm-serve` server at `url`); {} for transformers' generate (the default)."""
    if mode is None:
        if url:
            raise ValueError("a vLLM server URL needs vllm='server' (--vllm server)")
        return {}
    if mode not in ("colocate", "server"):
        raise ValueError(f"vllm must be 'colocate' or 'server', not {mode!r}")
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise ValueError("vLLM generation needs the vllm package: pip install vllm, or leave --vllm out "
                         "to generate with transformers")
    fields = {"use_vllm": True, "vllm_mode": mode}
    if url:
        if mode != "server":
            raise ValueError("a vLLM server URL is for vllm='server'; colocate runs vLLM in this process")
        fields["vllm_server_base_url"] = url
    return fields


def train_grpo(model: str | Path | Any, tasks: Sequence[Any], out_dir: str | Path, *, db_url: str | Path | None = None,
               steps: int = 100, group_size: int = 8, prompts_per_step: int = 1, tokenizer: Any = None,
               k: float = 1.5, epsilon: float = 0.2, beta: float = 0.001, learning_rate: float = 1e-6,
               loss_type: str = "grpo", max_completion_length: int = 4096, temperature: float = 1.0,
               reward_fn: RewardFn | None = None, evaluate_fn: EvaluateFn | None = None, options: Any = None,
               judge: Any = None, hack_store: str | Path | None = None, jump_ratio: float = 3.0, best_ratio: float = 2.0,
               holdout: HoldoutSpec = None, seed: int = 0, sampler: str = "bucket", n_exemplars: int = 2,
               bucket_width: float = 0.25, tau: float = 1.0, template_dir: str | Path | None = None,
               save_steps: int = 50, final_eval_samples: int = 2, lora: bool = False, bf16: bool | None = None,
               chat: bool | None = None, resume: bool = False, overrides: dict | None = None,
               vllm: str | None = None, vllm_url: str | None = None) -> GRPOResult:
    """Contrastive GRPO on `tasks` (held-out ones excluded). See the module docstring for what each part does.
    `vllm` ("colocate" or "server", with `vllm_url` for the latter) generates through TRL's vLLM path."""
    require_training_stack()
    generation = vllm_overrides(vllm, vllm_url)  # checked before any model or database is touched
    from trl import GRPOConfig, GRPOTrainer

    from cudaopt.db.sampling import make_sampler
    from cudaopt.db.store import ExemplarDB
    from cudaopt.evaluate.result import EvalOptions
    from cudaopt.llm.spec import make_llm
    from cudaopt.prompts.builder import PromptBuilder
    from cudaopt.train.self_train import stage_tasks

    out = Path(out_dir)
    all_tasks, train_tasks, split = stage_tasks(tasks, holdout, seed, out)
    tok = load_tokenizer(model, tokenizer)
    chat = uses_chat(tok, chat)
    builder = PromptBuilder(Path(template_dir) if template_dir else None)
    opts = options or EvalOptions(device=default_device())
    work = out / "checkpoints"
    checkpoint = latest_checkpoint(work) if resume else None
    if not resume:
        for stale in ("grpo_rewards.jsonl", "grpo_steps.jsonl", "grpo_log.jsonl"):
            (out / stale).unlink(missing_ok=True)
    with ExemplarDB(db_url or out / "cudaopt.db") as db:
        run_name = f"train-grpo:{out.resolve()}"
        run = (db.latest_run(run_name, "train") if resume else None) or db.start_run(run_name, {"stage": "grpo"}, "train")
        task_ids = {t.name: db.ensure_task(t) for t in train_tasks}
        stream = PromptStream(train_tasks, db, task_ids, builder,
                              make_sampler(sampler, n=n_exemplars, width=bucket_width, tau=tau, seed=seed), chat,
                              seed + (int(checkpoint.name.split("-")[-1]) if checkpoint else 0))
        reward = CudaoptReward({t.name: t for t in train_tasks}, db, run.id, task_ids, evaluate_fn=evaluate_fn or real_evaluate,
                               options=opts, smoother=RewardSmoother(k=k),
                               checker=RewardChecker(make_llm(judge), HackStore(hack_store or out / "hack_cases.jsonl"),
                                                     jump_ratio, best_ratio),
                               reward_fn=reward_fn, model_name=str(model) if isinstance(model, (str, Path)) else type(model).__name__,
                               log_path=out / "grpo_rewards.jsonl")
        if checkpoint is not None and (checkpoint / STATE_FILE).is_file():
            reward.load_state(json.loads((checkpoint / STATE_FILE).read_text()))
        config = GRPOConfig(
            output_dir=str(work), max_steps=steps, per_device_train_batch_size=prompts_per_step * group_size,
            num_generations=group_size, max_completion_length=max_completion_length, temperature=temperature,
            learning_rate=learning_rate, beta=beta, epsilon=epsilon, loss_type=loss_type, scale_rewards="group",
            shuffle_dataset=False, ignore_data_skip=True, save_steps=save_steps, save_total_limit=2, seed=seed,
            bf16=default_bf16() if bf16 is None else bf16, report_to=[], logging_steps=1,
            # TRL leaves dropout on by default: the policy then samples and scores its completions with dropout
            # while the reference model (eval mode) scores them without, so the KL term compares two different
            # networks and is not 0 even before any update (session 7's H200 run, a 0.1-dropout tiny GPT-2
            # at temperature 0.2, logged kl 3e18-9.5e23). Models with dropout 0 in their config are unaffected.
            **{"use_cpu": default_device() == "cpu", "gradient_checkpointing": False, "disable_tqdm": True,
               "disable_dropout": True, **generation, **(overrides or {})},
        )
        peft_config = None
        if lora:
            from cudaopt.train.modeling import LoraSettings

            peft_config = LoraSettings().peft_config()
        gen = _GenerationClock()
        trainer = GRPOTrainer(model=str(model) if isinstance(model, Path) else model, reward_funcs=[reward], args=config,
                              train_dataset=stream.dataset(), processing_class=tok,
                              callbacks=_callbacks(reward, out / "grpo_steps.jsonl", gen), peft_config=peft_config)
        gen.attach(trainer)
        try:
            trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        finally:
            _STREAMS.pop(id(stream), None)
        final = save_final(trainer.model, tok, out / "final")
        train_summary = summarise(reward.attempts, split.train)
        final_eval = _final_eval(final, tok, all_tasks, split, builder, reward, opts, final_eval_samples, max_completion_length) \
            if final_eval_samples > 0 else {}
        db.finish_run(run.id)
        url = db.url
    result = GRPOResult(out, final, split, steps, train_summary, final_eval, url)
    (out / "report.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return result


def _final_eval(model_dir: Path, tok: Any, tasks: Sequence[Any], split: Split, builder: Any, reward: CudaoptReward,
                options: Any, samples: int, max_new_tokens: int) -> dict:
    """Training and held-out tasks answered the same way (one-shot prompt, nothing stored), reported apart."""
    from cudaopt.llm.transformers_local import TransformersLLM
    from cudaopt.train.modeling import load_model

    llm = TransformersLLM(load_model(model_dir), tok, max_new_tokens=max_new_tokens, device=default_device())
    attempts = []
    for task in tasks:
        prompt = builder.oneshot(task)
        for text in generate_answers(llm, [prompt], samples):
            if reward.reward_fn is not None:
                attempts.append(Attempt(task.name, prompt, text, None, "custom_reward", reward=float(reward.reward_fn(task, text))))
            else:
                a, _ = judge_answer(task, prompt, text, reward.evaluate_fn, options)
                attempts.append(Attempt(**{**a.__dict__, "reward": a.speedup if a.success and a.speedup else 0.0}))
    return {"train": summarise(attempts, split.train), "held_out": summarise(attempts, split.held_out)}
