"""wgmma split-K: an in-kernel fixup against the separate reduce kernel, on the shipped table's
split-K shapes (GPU). --mode 1: the ticket fixup (the last split of a tile sums them all); --mode 2:
the spread fixup (every split sums a slice), timed only on one-wave shapes (tiles x splits <= #SMs),
the only ones where it runs; --mode 3: the spread fixup launched without the cooperative attribute
(a measurement of what that attribute costs); --mode 4: cluster split-K (the splits of a tile in one
cluster, summed through distributed shared memory), on the shapes of at most 8 splits.

For each shape whose tuned choice is a wgmma split-K one, the same (config, splits) is captured in
CUDA graphs twice, once per split-K path (the path is a host setting read at launch, so each graph
keeps the one it was captured with), and timed interleaved with the benchmark's GPU timing; every
output of the fixup is checked bitwise against the serial reduce kernel's (both sum in split order; the
timed reduce is the default chunked one, whose chunk sums differ in the last bits above 8 splits). Prints one row per shape and the
median ratio last.

    PYTHONPATH=src python benchmarks/gemm_splitk_fixup.py [--mode 2] [--limit 40] [--rounds 15]
"""

from __future__ import annotations

import argparse
import random
import statistics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=40, help="most shapes (spread over the split-K shapes)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--mode", type=int, choices=(1, 2, 3, 4), default=1,
                    help="1: ticket fixup, 2: spread fixup, 3: spread fixup without the cooperative launch, "
                         "4: cluster split-K")
    args = ap.parse_args()

    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import launch_under, make_inputs, num_sets, ours_launch
    from cudaopt.gemm.configs import KERNEL_CONFIGS
    from cudaopt.gemm.dispatch import load_table
    from cudaopt.gemm.timing import time_gpu

    lib = _lib.wgmma_kernels()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = sorted((s, c) for s, c in load_table().items()
                    if c.splits > 1 and KERNEL_CONFIGS[c.config].kind == "wgmma"
                    and (args.mode == 1 or (args.mode == 4 and c.splits <= 8)
                         or (args.mode in (2, 3) and KERNEL_CONFIGS[c.config].tiles(s[0], s[1]) * c.splits <= sms)))
    if not shapes:
        raise SystemExit(f"the shipped table has no wgmma split-K shape for mode {args.mode}: nothing to compare")
    step = max(1, len(shapes) // args.limit)
    picked = shapes[::step][: args.limit]
    print(f"{len(shapes)} wgmma split-K shapes in the table; timing {len(picked)}")
    print(f"{'shape':>20} {'choice':>36} {'reduce us':>10} {'fixup us':>9} {'reduce/fixup':>12} equal")
    ratios = []
    rng = random.Random(0)
    for (m, n, k), choice in picked:
        sets = num_sets(m, n, k)
        x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, choice.splits), with_blas=False)
        plain = ours_launch(x, m, n, k, choice)

        def with_fixup(on: int):
            return launch_under(plain, lib.cudaopt_wgmma_set_splitk_fixup, args.mode if on else 0, 0)

        _lib.set_reduce_chunked(False)  # the reference sums in split order, as the fixup does
        with_fixup(0)(0)
        torch.cuda.synchronize()
        reduced = x.c[0].clone()
        _lib.set_reduce_chunked(True)  # the timed reduce path is the package default
        with_fixup(1)(0)
        torch.cuda.synchronize()
        equal = torch.equal(reduced, x.c[0])
        t = time_gpu({"reduce": with_fixup(0), "fixup": with_fixup(1)}, sets, rounds=args.rounds, rng=rng)
        ratio = t["reduce"] / t["fixup"]
        ratios.append(ratio)
        print(f"{f'{m}x{n}x{k}':>20} {choice.label():>36} {t['reduce']:10.2f} {t['fixup']:9.2f} {ratio:12.3f} {equal}")
        del x
    print(f"== fixup (mode {args.mode}) vs reduce kernel over {len(ratios)} shapes: median {statistics.median(ratios):.3f}x, "
          f"mean {statistics.mean(ratios):.3f}x, min {min(ratios):.3f}, max {max(ratios):.3f} (>1: fixup faster)")


if __name__ == "__main__":
    main()
