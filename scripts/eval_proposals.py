"""Evaluate the built-in proposers' candidates (torch.compile, CUDA graph, ...) on a few tasks, without a
database: one line each with status, speedup, message and findings. Used by gpu_check.sh's settings_check
(Inductor and Triton run inside the worker, so a check of the worker's state must pass what they do)."""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from cudaopt.evaluate import EvalOptions, evaluate
from cudaopt.search.proposers import PROPOSERS, propose
from cudaopt.tasks.loader import resolve_task


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="+", help="built-in task names or task files")
    ap.add_argument("--proposers", nargs="+", default=["compile"], choices=sorted(PROPOSERS))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget-s", type=float, default=1.0)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--size", default="full", choices=["full", "small"])
    args = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for spec in args.tasks:
            task = resolve_task(spec)
            for name in args.proposers:
                path = Path(d) / f"{task.name}_{name}.py"
                path.write_text(propose(task, name).source)
                r = evaluate(task, path, EvalOptions(device=args.device, budget_s=args.budget_s, trials=args.trials, size=args.size))
                found = [(f.category, f.message[:80], f.evidence[:120]) for f in r.findings]
                print(f"{task.name} {name}: {r.status} {r.speedup} {(r.message or '')[:160]!r} {found}", flush=True)
                bad += r.status != "ok" or bool(r.findings)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
