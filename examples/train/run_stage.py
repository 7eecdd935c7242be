"""Run one training stage under `accelerate launch` (the CLI does the same in one process).

    accelerate launch --config_file examples/train/accelerate_ddp.yaml examples/train/run_stage.py \
        grpo --model out/self/iter-3/model --tasks level1 --out out/grpo --steps 200 --group-size 8 --holdout 0.2
"""

import argparse

from cudaopt.tasks.loader import builtin_tasks
from cudaopt.train import export_sft, train_grpo, train_self, train_sft


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=["export", "sft", "self", "grpo"])
    ap.add_argument("--model")
    ap.add_argument("--db", default="cudaopt.db")
    ap.add_argument("--data", help="SFT: an exported JSONL (default: the database)")
    ap.add_argument("--tasks", default="all", help="'all', 'level1'..'level3', or comma-separated built-in names")
    ap.add_argument("--out", required=True)
    ap.add_argument("--holdout", default=None)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--vllm", choices=["colocate", "server"], default=None, help="grpo: generate with vLLM through TRL")
    ap.add_argument("--vllm-url", default=None, help="grpo: the vLLM server's base URL (with --vllm server)")
    a = ap.parse_args()
    tasks = builtin_tasks()
    if a.tasks.startswith("level"):
        tasks = [t for t in tasks if t.level == int(a.tasks[5:])]
    elif a.tasks != "all":
        names = set(a.tasks.split(","))
        tasks = [t for t in tasks if t.name in names]
    if a.stage == "export":
        print(export_sft(a.db, a.out, holdout=a.holdout))
    elif a.stage == "sft":
        print(train_sft(a.model, a.data or a.db, a.out, lora=a.lora, resume=a.resume, holdout=a.holdout).to_dict())
    elif a.stage == "self":
        print(train_self(a.model, tasks, a.out, iterations=a.iterations, db_url=a.db, lora=a.lora, resume=a.resume,
                         holdout=a.holdout).to_dict())
    else:
        print(train_grpo(a.model, tasks, a.out, db_url=a.db, steps=a.steps, group_size=a.group_size, lora=a.lora,
                         resume=a.resume, holdout=a.holdout, vllm=a.vllm, vllm_url=a.vllm_url).to_dict())


if __name__ == "__main__":
    main()
