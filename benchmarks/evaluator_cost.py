"""How much GPU time the evaluator needs until a speedup's 95% interval is within +-1%.

    python benchmarks/evaluator_cost.py --device cuda [--tasks a b c ...] [--out runs/cost.json]

For each task, two candidates are timed: the A/A candidate (identical to the reference) and the
fastest seed-corpus candidate where there is one. Reported per evaluation: timing seconds until the
adaptive stop (target +-1%, budget 10 s), rounds, the interval reached, the whole evaluation's wall and
GPU-held seconds (process start, compile from cache, 100 correctness trials, timing, checks), and the
share of the evaluation spent in the dynamic guard checks (issue 3 asks for under 10%).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cudaopt.evaluate import EvalOptions, evaluate
from cudaopt.tasks.loader import find_builtin, identity_candidate
from cudaopt.tasks.seed_corpus import corpus_entries

DEFAULT_TASKS = ["softmax_rows", "layernorm_gelu", "rmsnorm_explicit", "conv2d_3x3", "matmul_square",
                 "scale_bias_gelu_clamp", "transformer_encoder_block"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tasks", nargs="*", default=DEFAULT_TASKS)
    ap.add_argument("--budget-s", type=float, default=10.0)
    ap.add_argument("--target", type=float, default=0.01)
    ap.add_argument("--out", default="runs/evaluator_cost.json")
    ap.add_argument("--size", default="full")
    ap.add_argument("--head-start-us", type=float, default=0.0,
                    help="experimental: a spin kernel this long before each timed call (device time only in the window)")
    args = ap.parse_args()
    console = Console()
    fast = {e.task: e for e in corpus_entries() if e.kind == "fast" and e.device == ("cuda" if args.device.startswith("cuda") else "cpu")}
    rows = []
    for name in args.tasks:
        try:
            task = find_builtin(name)
        except Exception as e:  # noqa: BLE001
            console.print(f"[yellow]skip {name}: {e}")
            continue
        cands = [("A/A", identity_candidate(task))]
        if name in fast:
            cands.append((fast[name].name, fast[name].path))
        for label, cand in cands:
            opts = EvalOptions(device=args.device, budget_s=args.budget_s, target_rel_ci=args.target, size=args.size,
                               head_start_us=args.head_start_us)
            r = evaluate(task, cand, opts)
            t = r.timing
            rows.append({"task": name, "candidate": label, "status": r.status, "speedup": r.speedup,
                         "raw": t.speedup_raw if t else None, "rel_ci": t.rel_ci if t else None,
                         "timing_s": t.seconds if t else None, "rounds": t.rounds if t else None,
                         "ref_us": t.ref_time_us if t else None, "wall_s": r.seconds, "gpu_s": r.gpu_seconds,
                         "guard_s": r.guard_seconds, "guard_parts": r.guard_parts, "phase_s": r.phase_seconds,
                         # the seven bucket means (time order) and the window: a run that does not converge
                         # shows here whether the ratio drifts or scatters
                         "bucket_means": list(t.bucket_means) if t else None, "window": t.window if t else None,
                         "cand_us": t.cand_time_us if t else None})
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(rows, indent=1))
    table = Table(title=f"evaluator cost to a +-{args.target:.0%} interval (budget {args.budget_s:g} s)")
    for col in ("task", "candidate", "status", "speedup", "+-CI", "ref us", "rounds", "timing s", "eval wall s", "GPU-held s", "guards %"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["task"], r["candidate"], r["status"], f"{r['speedup']:.2f}" if r["speedup"] else "-",
                      f"{100 * r['rel_ci']:.2f}%" if r["rel_ci"] is not None else "-", f"{r['ref_us']:.0f}" if r["ref_us"] else "-",
                      str(r["rounds"] or "-"), f"{r['timing_s']:.2f}" if r["timing_s"] else "-", f"{r['wall_s']:.1f}", f"{r['gpu_s']:.1f}",
                      f"{100 * r['guard_s'] / r['wall_s']:.1f}" if r["wall_s"] else "-")
    console.print(table)
    for r in rows:  # where each evaluation's time went, and which checks cost what
        console.print(f"{r['task']}/{r['candidate']}: phases " + " ".join(f"{k}={v:.2f}" for k, v in r["phase_s"].items())
                      + " | guards " + " ".join(f"{k}={v:.2f}" for k, v in r["guard_parts"].items()))


if __name__ == "__main__":
    main()
