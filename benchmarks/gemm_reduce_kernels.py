"""wgmma split-K reduce kernels side by side (GPU): the chunked reduce (the package default) against the
fixed-split reduce with 1, 2 or 4 lanes a thread (CUDAOPT_GEMM_REDUCE_FIXED), end to end (split-K
GEMM kernel + reduce), on shapes where split-K at 2..8 splits is a contender.

The shapes come from a tuner screening log (`--screening`, the grid call's tuned.screening.jsonl): per
shape, its fastest screened wgmma split-K candidate of 2..8 splits (cluster split-K twins aside, they
have no reduce kernel), kept where that candidate was within `--within` of the shape's fastest screened
candidate (ours or torch). Without a log: the shipped table's wgmma choices of 2..8 splits.

Each variant is captured in its own CUDA graph (the reduce switch is a host setting read at launch, so
each graph keeps the kernel it was captured with) and timed interleaved with the benchmark's GPU timing;
every variant's output is compared bitwise with the chunked reduce's. Prints one row per shape, then per
variant the median and geomean of chunked / variant (>1: the variant is faster), and how many shapes'
split-K candidate would then beat the screened best (what a retune could gain).

    PYTHONPATH=src python benchmarks/gemm_reduce_kernels.py --screening tuned.screening.jsonl [--limit 40]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from pathlib import Path

LANES = (1, 2, 4)


def split_shapes(screening: Path | None, within: float) -> list[tuple[tuple[int, int, int], str, float]]:
    """(shape, split-K label, the shape's best screened us / that label's screened us) per usable shape."""
    from cudaopt.gemm.configs import KERNEL_CONFIGS
    from cudaopt.gemm.dispatch import load_table

    by_label = {c.label: c for c in KERNEL_CONFIGS}
    out = []
    if screening is None:
        for s, c in sorted(load_table().items()):
            if c.backend == "ours" and 2 <= c.splits <= 8 and KERNEL_CONFIGS[c.config].kind == "wgmma" \
                    and not KERNEL_CONFIGS[c.config].csplit:
                out.append((s, c.label(), 1.0))
        return out
    for line in screening.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        times = {k: v for k, v in rec["screen_us"].items() if isinstance(v, (int, float)) and v > 0}
        best_split = None
        for label, us in times.items():
            base, _, splits = label.rpartition("_splitk")
            cfg = by_label.get(base)
            if cfg is None or cfg.kind != "wgmma" or cfg.csplit or not splits.isdigit() or not 2 <= int(splits) <= 8:
                continue
            if best_split is None or us < times[best_split]:
                best_split = label
        if best_split is None:
            continue
        rel = min(times.values()) / times[best_split]
        if rel >= 1 - within:
            out.append(((rec["m"], rec["n"], rec["k"]), best_split, rel))
    return sorted(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--screening", type=Path, default=None, help="tuner screening log (jsonl)")
    ap.add_argument("--within", type=float, default=0.15, help="keep shapes whose split-K candidate was "
                    "within this fraction of the screened best")
    ap.add_argument("--limit", type=int, default=40, help="most shapes (spread over the usable ones)")
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args()
    if args.screening is not None and not args.screening.is_file():
        raise SystemExit(f"--screening {args.screening}: no such file (the grid call's tuned.screening.jsonl)")

    import torch

    from cudaopt.gemm import Choice, _lib
    from cudaopt.gemm.bench import launch_under, make_inputs, num_sets, ours_launch
    from cudaopt.gemm.configs import KERNEL_CONFIGS
    from cudaopt.gemm.timing import time_gpu

    lib = _lib.wgmma_kernels()
    usable = split_shapes(args.screening, args.within)
    if not usable:
        raise SystemExit("no shape has a wgmma split-K candidate of 2..8 splits to time")
    step = max(1, len(usable) // args.limit)
    picked = usable[::step][: args.limit]
    print(f"{len(usable)} shapes with a split-K contender; timing {len(picked)}")
    print(f"{'shape':>20} {'choice':>34} {'chunked us':>10} " + " ".join(f"{'lanes' + str(u):>8}" for u in LANES)
          + "  equal  screened best/split")
    by_label = {c.label: c for c in KERNEL_CONFIGS}
    ratios: dict[int, list[float]] = {u: [] for u in LANES}
    flips = {u: 0 for u in LANES}
    rng = random.Random(0)
    default_lanes = _lib.reduce_fixed_lanes()
    for (m, n, k), label, rel in picked:
        base, _, splits = label.rpartition("_splitk")
        choice = Choice("ours", by_label[base].id, int(splits))
        sets = num_sets(m, n, k)
        x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, choice.splits), with_blas=False)
        plain = ours_launch(x, m, n, k, choice)

        def with_lanes(lanes: int):
            return launch_under(plain, lambda v: _lib.set_reduce_fixed(v, lib), lanes, default_lanes)

        outs = {}
        for lanes in (0, *LANES):
            with_lanes(lanes)(0)
            torch.cuda.synchronize()
            outs[lanes] = x.c[0].clone()
        equal = all(torch.equal(outs[0], outs[u]) for u in LANES)
        t = time_gpu({str(u): with_lanes(u) for u in (0, *LANES)}, sets, rounds=args.rounds, rng=rng)
        row = []
        for u in LANES:
            r = t["0"] / t[str(u)]
            ratios[u].append(r)
            flips[u] += rel * r > 1.0  # the split-K candidate, this much faster, beats the screened best
            row.append(f"{r:8.3f}")
        print(f"{f'{m}x{n}x{k}':>20} {label:>34} {t['0']:10.2f} " + " ".join(row) + f"  {str(equal):>5}  {rel:.3f}")
        del x
    for u in LANES:
        rs = ratios[u]
        print(f"== lanes {u} vs chunked over {len(rs)} shapes: median {statistics.median(rs):.3f}x, geomean "
              f"{math.exp(statistics.mean(math.log(r) for r in rs)):.3f}x, min {min(rs):.3f}, max {max(rs):.3f} "
              f"(>1: fixed faster); split-K would beat the screened best on {flips[u]} of them")


if __name__ == "__main__":
    main()
