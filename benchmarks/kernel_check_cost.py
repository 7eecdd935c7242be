"""What the profiler's kernel check costs an evaluation, in the worker (as before) and in a helper process.

    python benchmarks/kernel_check_cost.py [--pairs gelu_tanh_explicit/fast_fused_float4 ...] [--repeat 2]

Issue 3 asks for dynamic checks under 10% of a candidate's evaluation. The check (torch.profiler with CUDA
activities, run for speedups above 3x) pays Kineto's one-time start-up, 3.5 s on the H200, inside the
evaluation (session 6: 4.2 s of 11.5 s for gelu fast). `EvalOptions.kernel_check_helper` pays it in a
helper process beside the correctness trials instead. Each corpus candidate is evaluated with
kernel_check="always" in three modes, in rotating order: `worker` (in-process, as before), `helper`
(the helper, ended if not warm when timing begins) and `helper_wait` (timing waits up to --wait-s for it).
Prints, per evaluation: seconds, the check's seconds on the critical path, its share, and whether the
helper was used. Needs a CUDA GPU (exits 2 without one). Measures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

MODES = {
    "worker": dict(kernel_check_helper=False),
    "helper": dict(kernel_check_helper=True),
    "helper_wait": dict(kernel_check_helper=True),
}
DEFAULT_PAIRS = ["gelu_tanh_explicit/fast_fused_float4", "gelu_tanh_explicit/honest_one_thread_per_element",
                 "hardswish_explicit/fast_fused_float4", "mse_loss/fast_fused_rows"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", nargs="*", default=DEFAULT_PAIRS, help="task/candidate names from the seed corpus")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--wait-s", type=float, default=5.0)
    ap.add_argument("--budget-s", type=float, default=1.5)
    ap.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("kernel_check_cost: needs a CUDA GPU (the check profiles device activity); none here", file=sys.stderr)
        sys.exit(2)
    from cudaopt.evaluate import EvalOptions, evaluate
    from cudaopt.evaluate.prebuild import prebuild
    from cudaopt.tasks.seed_corpus import corpus_entries

    entries = {f"{e.task}/{e.name}": e for e in corpus_entries() if e.device == "cuda"}
    missing = [p for p in args.pairs if p not in entries]
    if missing:
        print(f"kernel_check_cost: not in the seed corpus: {', '.join(missing)}", file=sys.stderr)
        sys.exit(2)
    prebuild([entries[p].source for p in args.pairs])
    rows = []
    names = list(MODES)
    for rep in range(args.repeat):
        for k, pair in enumerate(args.pairs):
            e = entries[pair]
            for mode in names[(k + rep) % 3:] + names[:(k + rep) % 3]:  # rotate which mode goes first
                kw = dict(MODES[mode], kernel_check_helper_wait_s=args.wait_s if mode == "helper_wait" else 0.0)
                t0 = time.perf_counter()
                r = evaluate(e.reference(), e.path, EvalOptions(device="cuda", budget_s=args.budget_s, kernel_check="always", **kw))
                wall = time.perf_counter() - t0
                check = r.guard_parts.get("kernel_check_profiler", 0.0)
                used = any(n.startswith("kernel check helper: profiler started") for n in r.notes)
                late = any("not warm" in n for n in r.notes)
                row = dict(pair=pair, mode=mode, status=r.status, speedup=r.speedup, seconds=round(wall, 2),
                           check_s=round(check, 3), check_share=round(check / wall, 3) if wall else None,
                           guard_share=round(r.guard_seconds / wall, 3) if wall else None, helper_used=used and not late,
                           kernels=list(r.kernels)[:4], findings=sorted({f.category for f in r.findings}))
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(f"\n{'pair':52} {'mode':12} {'eval s':>7} {'check s':>8} {'check %':>8} {'guards %':>9} helper")
    for r in rows:
        print(f"{r['pair']:52} {r['mode']:12} {r['seconds']:7.2f} {r['check_s']:8.3f} {100 * (r['check_share'] or 0):7.1f}% "
              f"{100 * (r['guard_share'] or 0):8.1f}% {'used' if r['helper_used'] else '-'}")
    for mode in names:
        shares = [r["guard_share"] for r in rows if r["mode"] == mode and r["guard_share"] is not None]
        if shares:
            print(f"{mode:12} median dynamic-guard share {100 * statistics.median(shares):.1f}% over {len(shares)} evaluations")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
