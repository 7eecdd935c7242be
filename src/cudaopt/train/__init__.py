"""`cudaopt train`: CUDA-L1's three training stages on a real model, each usable alone and resumable.

    export_sft(db_url, out_jsonl, *, holdout=None, tasks=None, seed=0, template_dir=None) -> Path
    train_sft(model, data_or_db, out_dir, *, lora=False, epochs=1.0, resume=False, holdout=None, ...) -> SFTResult
    train_self(model, tasks, out_dir, *, iterations=3, samples_per_task=8, evaluate_fn=None, options=None,
               resume=False, holdout=None, ...) -> SelfResult
    train_grpo(model, tasks, out_dir, *, db_url=None, steps=100, group_size=8, k=1.5, epsilon=0.2, beta=0.001,
               reward_fn=None, judge=None, holdout=None, resume=False, ...) -> GRPOResult

Each stage writes <out_dir>/report.json (training and held-out tasks reported apart) and, for the next
stage, the model with its tokenizer (<out_dir>/final, or the last iteration's folder for `self`).
Importing this package is cheap; torch, transformers and TRL load when a stage runs.
"""

from cudaopt.train.data import export_sft  # noqa: F401
from cudaopt.train.hacks import HackCase, HackStore, RewardChecker, Verdict  # noqa: F401
from cudaopt.train.holdout import Split, parse_holdout, split_tasks  # noqa: F401
from cudaopt.train.smoothing import RewardSmoother, group_advantages  # noqa: F401


def train_sft(*args, **kwargs):
    from cudaopt.train.sft import train_sft as run

    return run(*args, **kwargs)


def train_self(*args, **kwargs):
    from cudaopt.train.self_train import train_self as run

    return run(*args, **kwargs)


def train_grpo(*args, **kwargs):
    from cudaopt.train.grpo import train_grpo as run

    return run(*args, **kwargs)


train_sft.__doc__ = "Stage 1 (see cudaopt.train.sft.train_sft)."
train_self.__doc__ = "Stage 2 (see cudaopt.train.self_train.train_self)."
train_grpo.__doc__ = "Stage 3 (see cudaopt.train.grpo.train_grpo)."
