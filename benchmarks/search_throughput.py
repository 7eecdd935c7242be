"""Candidates evaluated per GPU-minute by `optimize --suite` (built-in proposers, optionally a replay file).

    python benchmarks/search_throughput.py --device cuda --budget 4 [--llm replay:answers.jsonl] [--levels 1]

Prints one JSON line: tasks, candidates, evaluated, wall seconds, GPU-seconds, and the two rates
(evaluated per wall minute, per GPU-minute), plus the suite summary.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=None, help="task folder (default: the built-in suite)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--llm", default=None, help="replay:FILE.jsonl, http://HOST/v1, ... (default: proposers only)")
    ap.add_argument("--budget", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--levels", type=int, nargs="*", default=None)
    ap.add_argument("--filter", default=None, help="only tasks whose name contains this")
    ap.add_argument("--timing-budget", type=float, default=2.0, help="EvalOptions.budget_s per candidate")
    ap.add_argument("--out", default="cudaopt-runs/throughput")
    ap.add_argument("--json", default=None, help="also write the result here")
    a = ap.parse_args()

    from cudaopt.evaluate.result import EvalOptions
    from cudaopt.search import optimize_suite

    t0 = time.time()
    res = optimize_suite(a.tasks, llm=a.llm, budget=a.budget, rounds=a.rounds, device=a.device, out_dir=a.out,
                         options=EvalOptions(device=a.device, budget_s=a.timing_budget), levels=tuple(a.levels) if a.levels else None,
                         name_filter=a.filter, quiet=True)
    wall = time.time() - t0
    evaluated = sum(t.evaluated for t in res.tasks)
    gpu_s = sum(t.gpu_seconds for t in res.tasks)
    out = {
        "tasks": len(res.tasks), "candidates": sum(t.candidates for t in res.tasks), "evaluated": evaluated,
        "wall_s": round(wall, 1), "gpu_s": round(gpu_s, 1),
        "evaluated_per_wall_min": round(60 * evaluated / wall, 2) if wall else None,
        "evaluated_per_gpu_min": round(60 * evaluated / gpu_s, 2) if gpu_s else None,
        "summary": {k: v for k, v in asdict(res.summary).items()}, "report": str(res.report_path),
        "per_task": [{"task": t.task, "level": t.level, "best": t.best_speedup, "failures": t.failures} for t in res.tasks],
    }
    print(json.dumps(out, default=str))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
