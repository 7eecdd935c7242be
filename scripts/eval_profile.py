"""Where one evaluation's time goes: the parent, the judge and the worker, each under cProfile.

    python scripts/eval_profile.py softmax_rows [CANDIDATE] --device cuda [--trials 100] [--top 25]

Without CANDIDATE the reference is evaluated against itself (an A/A). Prints the evaluation's phase
seconds, then for each process the functions with the most cumulative time. The profiles stay in --dir
(`python -m pstats FILE` reads them further).
"""

from __future__ import annotations

import argparse
import glob
import io
import os
import pstats
import tempfile

from cudaopt.evaluate.profiling import ENV
from cudaopt.evaluate.result import EvalOptions
from cudaopt.tasks.loader import identity_candidate, resolve_task


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task")
    ap.add_argument("candidate", nargs="?", default=None)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--size", default="full")
    ap.add_argument("--budget-s", type=float, default=1.0)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--dir", default=None, help="where the profiles go (default: a new temporary folder)")
    args = ap.parse_args()
    folder = args.dir or tempfile.mkdtemp(prefix="cudaopt-profile-")
    os.makedirs(folder, exist_ok=True)
    os.environ[ENV] = folder  # read by the parent here and inherited by the judge and the worker
    from cudaopt.evaluate.runner import evaluate

    task = resolve_task(args.task)
    cand = args.candidate or identity_candidate(task)
    r = evaluate(task, cand, EvalOptions(device=args.device, trials=args.trials, size=args.size, budget_s=args.budget_s))
    print(f"{task.name}: {r.status} speedup {r.speedup} in {r.seconds:.2f} s; phases "
          + ", ".join(f"{k} {v:.2f}" for k, v in r.phase_seconds.items()))
    print("guard parts: " + ", ".join(f"{k} {v:.3f}" for k, v in (r.guard_parts or {}).items()))
    for role in ("parent", "judge", "worker"):
        files = sorted(glob.glob(os.path.join(folder, f"{role}-*.prof")), key=os.path.getmtime)
        if not files:
            print(f"\n== {role}: no profile written")
            continue
        buf = io.StringIO()
        st = pstats.Stats(files[-1], stream=buf)
        st.sort_stats("cumulative").print_stats(args.top)
        lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
        print(f"\n== {role} ({files[-1]})")
        print("\n".join(lines[:args.top + 8]))


if __name__ == "__main__":
    main()
