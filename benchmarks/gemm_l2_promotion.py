"""The table's kernel under each L2 promotion of its tensor maps, side by side (GPU; session 23).

Our maps have asked for 256-byte L2 promotion since session 6, never measured against the others. The skinny
shapes stream one operand from DRAM (ours 3.0-3.9 TB/s where cuBLASLt reaches 3.3-4.2) and the large ones are
bound by L2 and power: per shape, the shipped table's kernel with its maps encoded at 256 B (the default), none,
64 B and 128 B, timed interleaved in CUDA graphs (each graph keeps the maps it was captured with) beside
cuBLASLt autotuned; every output checked against torch.matmul's. Prints a row a shape, the geomean of
default / setting per setting (>1: the setting is faster), and with --out one JSON line a shape.

    PYTHONPATH=src python benchmarks/gemm_l2_promotion.py [--shapes 12288x128x8192,...] [--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import math
import random
from statistics import geometric_mean

SHAPES = ("12288x128x8192,128x12288x8192,64x12288x8192,12288x64x8192,64x4096x8192,4096x64x8192,16384x128x4096,"
          "128x16384x4096,8192x8192x4096,16384x16384x4096,12288x12288x1024,16384x4096x1024,4096x4096x16384,"
          "2048x2048x8192")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES, help="MxNxK comma-separated")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--settings", default="256B,none,64B,128B", help="promotions to time, comma-separated (256B first)")
    ap.add_argument("--no-lt", action="store_true", help="leave cuBLASLt out (a quicker, wider screen)")
    ap.add_argument("--shuffle", action="store_true", help="time the shapes in a random order (a screen cut short "
                    "by a time limit then still spans every size)")
    ap.add_argument("--out", default=None, help="also append one JSON line a shape here")
    args = ap.parse_args()

    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import (launch_under, lt_auto_best, make_inputs, num_sets, ours_launch,
                                     time_with_lt_auto)
    from cudaopt.gemm.dispatch import choose
    from cudaopt.gemm.shapes import parse_shapes
    from cudaopt.gemm.timing import time_gpu

    shapes = parse_shapes(args.shapes)
    rng = random.Random(0)
    if args.shuffle:
        random.Random(1).shuffle(shapes)
    names = [v.strip() for v in args.settings.split(",") if v.strip()]
    if not names or names[0] != "256B" or not set(names) <= set(_lib.L2_PROMOTIONS):
        raise SystemExit(f"--settings {args.settings!r}: name 256B first, then any of {', '.join(_lib.L2_PROMOTIONS)}")
    settings = {f"L2 {name}": _lib.L2_PROMOTIONS[name] for name in names}
    lib = _lib.wgmma_kernels()
    default = "L2 256B"
    ratios: dict[str, list[float]] = {s: [] for s in settings}

    restore = _lib.L2_PROMOTIONS[_lib.l2_promotion_name()]  # the process's setting ($CUDAOPT_GEMM_L2_PROMOTION)

    def set_promotion(mode: int) -> None:
        _lib.set_l2_promotion(mode, lib)

    print(f"{'shape':>18} {'lt us':>8} " + " ".join(f"{s:>10}" for s in settings) + "  kernel")
    for m, n, k in shapes:
        choice = choose(m, n, k).as_ours()
        sets = num_sets(m, n, k)
        x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, choice.splits), True)
        cands = {s: launch_under(ours_launch(x, m, n, k, choice), set_promotion, mode, restore)
                 for s, mode in settings.items()}
        torch.matmul(x.a[0], x.b[0], out=x.c[0])
        ref = x.c[0].float()
        bad = []
        for s, run in cands.items():
            run(0)
            torch.cuda.synchronize()
            if not ((x.c[0].float() - ref).norm() / ref.norm()).item() < 1e-2:
                bad.append(s)
        t = (time_gpu(cands, sets, rounds=args.rounds, rng=rng) if args.no_lt
             else time_with_lt_auto(cands, x, m, n, k, sets, args.rounds, rng))
        lt_us = math.nan if args.no_lt else lt_auto_best(t)
        for s in settings:
            if s not in bad and math.isfinite(t[s]) and math.isfinite(t[default]):
                ratios[s].append(t[default] / t[s])
        print(f"{f'{m}x{n}x{k}':>18} {lt_us:8.1f} " + " ".join(f"{t[s]:10.2f}" for s in settings)
              + f"  {choice.label()}" + (f"  WRONG: {bad}" if bad else ""), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps({"m": m, "n": n, "k": k, "kernel": choice.label(),
                                    "lt_us": None if math.isnan(lt_us) else lt_us,
                                    "us": {s: t[s] for s in settings}, "wrong": bad}) + "\n")
        del x, cands
        torch.cuda.empty_cache()
    print("== geomean of default / setting (>1: the setting is faster than 256 B)")
    for s, r in ratios.items():
        if r:
            print(f"{s:>10}  {geometric_mean(r):.4f}  over {len(r)} shapes (min {min(r):.3f}, max {max(r):.3f})")


if __name__ == "__main__":
    main()
