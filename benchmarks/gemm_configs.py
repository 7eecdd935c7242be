"""Chosen wgmma configs against the shipped table, torch.matmul and cuBLASLt on chosen shapes (GPU).

The quick measurement of a new config before a retune: per shape, each config given (its plain
kernel, one split) beside the table's choice, torch.matmul and cuBLASLt (the fastest of its
returned algorithms, NN and TN), timed interleaved in CUDA graphs (cudaopt.gemm.timing.time_gpu),
each config's output checked against torch's (relative Frobenius error). Prints one row per shape and
the geomean of table / config and cuBLASLt / config per config (>1: the config is faster).

    PYTHONPATH=src python benchmarks/gemm_configs.py --configs 27,42,22:2 [--shapes 16384x12288x256,...]
"""

from __future__ import annotations

import argparse
import json
import math
import random
from statistics import geometric_mean

SHAPES = ("16384x12288x256,16384x16384x512,8192x8192x512,12288x12288x1024,4096x16384x512,16384x4096x1024,"
          "8192x8192x256,12288x16384x2048,8192x8192x4096,16384x16384x16384")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", required=True, help="config ids (or ID:SPLITS), comma-separated")
    ap.add_argument("--shapes", default=SHAPES, help="MxNxK comma-separated")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", default=None, help="also append one JSON line a shape here (scripts/gemm_adopt.py reads it)")
    args = ap.parse_args()

    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import lt_auto_best, make_inputs, num_sets, ours_launch, time_with_lt_auto, torch_launch
    from cudaopt.gemm.configs import KERNEL_CONFIGS, Choice
    from cudaopt.gemm.dispatch import choose
    from cudaopt.gemm.shapes import parse_shapes

    try:  # "ID" or "ID:SPLITS"
        picks = [Choice("ours", int(x.partition(":")[0]), int(x.partition(":")[2] or 1))
                 for x in args.configs.split(",") if x.strip()]
        for p in picks:
            if p.splits < 1 or p.splits > KERNEL_CONFIGS[p.config].max_splits:
                raise ValueError
    except (ValueError, IndexError):
        raise SystemExit(f"--configs {args.configs!r}: give config ids 0..{len(KERNEL_CONFIGS) - 1} (or ID:SPLITS "
                         "within the config's split limit), comma-separated") from None
    configs = {p.label(): p for p in picks}  # label -> Choice
    rng = random.Random(0)
    vs_table: dict[str, list[float]] = {label: [] for label in configs}
    vs_lt: dict[str, list[float]] = {label: [] for label in configs}
    print(f"{'shape':>18} {'table us':>8} {'lt us':>8} {'torch us':>8}  " +
          "  ".join(f"{label:>28} us (err)" for label in configs) + "  table choice")
    for m, n, k in parse_shapes(args.shapes):
        table = choose(m, n, k)
        table_ours = table.as_ours()
        sets = num_sets(m, n, k)
        ws = max(_lib.workspace_bytes(m, n, c.splits) for c in [table_ours, *configs.values()])
        x = make_inputs(m, n, k, sets, ws, True)
        cands = {"table": ours_launch(x, m, n, k, table_ours), "torch": torch_launch(x)}
        for label, c in configs.items():
            cands[label] = ours_launch(x, m, n, k, c)
        cands["torch"](0)
        ref = x.c[0].float()
        errs = {}
        for label in configs:
            cands[label](0)
            torch.cuda.synchronize()
            errs[label] = ((x.c[0].float() - ref).norm() / ref.norm()).item()
        t = time_with_lt_auto(cands, x, m, n, k, sets, args.rounds, rng)
        lt = lt_auto_best(t)
        cells = []
        for label in configs:
            us = t[label]
            cells.append(f"{us:31.1f} ({errs[label]:.0e})")
            if math.isfinite(us) and errs[label] < 1e-2:
                vs_table[label].append(t["table"] / us)
                vs_lt[label].append(lt / us)
        print(f"{f'{m}x{n}x{k}':>18} {t['table']:8.1f} {lt:8.1f} {t['torch']:8.1f}  " + "  ".join(cells) +
              f"  {table.label()}", flush=True)
        if args.out:
            row = {"m": m, "n": n, "k": k, "table": table.label(), "table_us": t["table"], "lt_us": lt,
                   "torch_us": t["torch"], "configs": {label: {"config": c.config, "splits": c.splits,
                                                              "us": t[label], "err": errs[label]}
                                                      for label, c in configs.items()}}
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
        del x, cands
        torch.cuda.empty_cache()
    print("== geomean per config over the shapes where it ran correctly (>1: the config is faster)")
    for label in configs:
        a, b = vs_table[label], vs_lt[label]
        if a:
            g = (geometric_mean(a), geometric_mean(b))
            print(f"{label:>34}  table/config {g[0]:.3f}  cuBLASLt/config {g[1]:.3f}  over {len(a)} shapes")


if __name__ == "__main__":
    main()
