"""Evaluate the whole seed corpus (GPU candidates on the GPU, CPU candidates on the CPU).

    python scripts/eval_corpus.py --device cuda --out runs/corpus.json [--budget-s 3] [--only TASK ...]

Prints one row per candidate (status, expected, speedup and interval, findings) and a summary last.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from cudaopt.evaluate import EvalOptions, evaluate
from cudaopt.evaluate.prebuild import prebuild
from cudaopt.tasks.seed_corpus import corpus_entries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default="runs/corpus.json")
    ap.add_argument("--budget-s", type=float, default=3.0)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--size", default="full")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--jobs", type=int, default=None, help="parallel compiles before evaluating")
    ap.add_argument("--resume", action="store_true", help="keep the rows already in --out and evaluate only the rest")
    ap.add_argument("--kernel-check-helper", action=argparse.BooleanOptionalAction, default=None,
                    help="the kernel check's profiler starts in a helper process (default: the evaluator's)")
    args = ap.parse_args()
    want = "cuda" if args.device.startswith("cuda") else "cpu"
    entries = [e for e in corpus_entries() if e.device == want and (not args.only or e.task in args.only)]
    rows = json.loads(Path(args.out).read_text()) if args.resume and Path(args.out).exists() else []
    done = {(r["task"], r["candidate"]) for r in rows}
    entries = [e for e in entries if (e.task, e.name) not in done]
    console = Console()
    t0 = time.time()
    built = prebuild([e.source for e in entries], jobs=args.jobs)
    console.print(f"prebuilt {sum(b.ok for b in built)}/{len(built)} extensions in {time.time() - t0:.0f} s")
    for e in track(entries, description="evaluating corpus", console=console):
        r = evaluate(e.reference(), e.path, EvalOptions(device=args.device, trials=args.trials, budget_s=args.budget_s, size=args.size,
                                                                   kernel_check_helper=args.kernel_check_helper))
        rows.append({"task": e.task, "candidate": e.name, "kind": e.kind, "expected_correct": e.expected_correct, **r.to_dict()})
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(rows, indent=1))  # written after each: nothing lost on a crash
    table = Table(title=f"seed corpus on {args.device} ({rows[0]['device_name'] if rows else ''})")
    for col in ("task", "candidate", "kind", "status", "speedup", "95% CI", "ref us", "cand us", "findings"):
        table.add_column(col, overflow="fold")
    for r in rows:
        t = r["timing"] or {}
        table.add_row(r["task"], r["candidate"], r["kind"], r["status"],
                      f"{r['speedup']:.2f}" if r["speedup"] is not None else "-",
                      f"[{t['ci_low']:.3f}, {t['ci_high']:.3f}]" if t else "-",
                      f"{t['ref_time_us']:.1f}" if t else "-", f"{t['cand_time_us']:.1f}" if t else "-",
                      ",".join(sorted({f['category'] for f in r["findings"]})) or "-")
    console.print(table)
    honest = [r for r in rows if r["expected_correct"]]
    wrong = [r for r in rows if not r["expected_correct"]]
    as_expected = sum(r["status"] == "ok" for r in honest) + sum(r["status"] != "ok" for r in wrong)
    faster = {r["task"] for r in rows if r["status"] == "ok" and r["speedup"] and r["timing"]["ci_low"] > 1.0}
    clean = sum(r["status"] == "ok" and not r["findings"] for r in honest)
    console.print(f"candidates {len(rows)}; as expected {as_expected}/{len(rows)}; honest ok {sum(r['status'] == 'ok' for r in honest)}/{len(honest)} "
                  f"(clean of findings {clean}); wrong caught {sum(r['status'] != 'ok' for r in wrong)}/{len(wrong)}; "
                  f"tasks with a candidate faster than eager (CI above 1): {len(faster)}; wall {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
