"""2x1 cluster configs (B multicast along M) against their one-CTA twins, on large shapes (GPU).

The grid's large shapes (>= 1e10 FLOP) read ours about 2% behind cuBLASLt autotuned, and those of a
short K (256-2048) on large M x N up to 12% behind. The card is power-capped there, and B multicast
moves a quarter to a third fewer operand bytes from L2 per k-block: the lever cuBLAS is suspected of
using. Sessions 7-10 measured the first cluster configs (23, 24: 3 and 5 ring slots) 6-9% behind
their twins, their warps waiting on the pair at every slot; session 15 added twins of the chunked-
epilogue configs with one slot more (39-41). Per shape this times, interleaved in one run: each
cluster config offered there and its twin, the shipped table's choice, torch.matmul and cuBLASLt
(the fastest of its returned algorithms, NN and TN), checks each cluster config bitwise against its
twin and the twin against torch, and prints one row per pair and a geomean of twin / cluster.

    PYTHONPATH=src python benchmarks/gemm_cluster_twins.py [--shapes 16384x12288x256,...] [--rounds 15]
"""

from __future__ import annotations

import argparse
import random
from statistics import geometric_mean

SHAPES = ("16384x12288x256,16384x16384x512,12288x12288x1024,16384x4096x2048,8192x8192x4096,"
          "12288x16384x4096,16384x8192x16384,4096x16384x512")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES, help="MxNxK comma-separated")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--configs", default="", help="cluster config ids (default: every cluster config)")
    args = ap.parse_args()

    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import lt_auto_best, make_inputs, num_sets, ours_launch, time_with_lt_auto, torch_launch
    from cudaopt.gemm.configs import WGMMA_CONFIGS, Choice, cluster_offered, plain_twin
    from cudaopt.gemm.dispatch import choose
    from cudaopt.gemm.shapes import parse_shapes

    want = {int(x) for x in args.configs.split(",") if x.strip()}
    clusters = [c for c in WGMMA_CONFIGS if c.cluster_m > 1 and (not want or c.id in want)]
    rng = random.Random(0)
    gains: dict[str, list[float]] = {c.label: [] for c in clusters}
    print(f"{'shape':>18} {'cluster config':>34} {'cl us':>8} {'twin us':>8} {'twin/cl':>7} {'table us':>8} "
          f"{'lt us':>8} {'torch us':>8} {'lt/cl':>6} {'lt/tbl':>6} same  table choice")
    for m, n, k in parse_shapes(args.shapes):
        offered = [c for c in clusters if cluster_offered(c, m, n)]
        if not offered:
            print(f"{f'{m}x{n}x{k}':>18} no cluster config offered (tiles < 2 x SMs)")
            continue
        table = choose(m, n, k)
        table_ours = table.as_ours()
        sets = num_sets(m, n, k)
        x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, table_ours.splits), True)
        cands = {"table": ours_launch(x, m, n, k, table_ours),
                 "torch": torch_launch(x)}
        for c in offered:
            cands[c.label] = ours_launch(x, m, n, k, Choice("ours", c.id, 1))
            tw = plain_twin(c)
            cands[tw.label] = ours_launch(x, m, n, k, Choice("ours", tw.id, 1))
        # correctness: twin against torch (relative Frobenius error), cluster bitwise against its twin
        cands["torch"](0)
        ref = x.c[0].float()
        outs = {}
        for name in cands:
            if name not in ("table", "torch"):
                cands[name](0)
                outs[name] = x.c[0].clone()
        torch.cuda.synchronize()
        t = time_with_lt_auto(cands, x, m, n, k, sets, args.rounds, rng)
        lt = lt_auto_best(t)
        for c in offered:
            tw = plain_twin(c)
            err = ((outs[tw.label].float() - ref).norm() / ref.norm()).item()
            same = torch.equal(outs[c.label], outs[tw.label]) and err < 1e-2
            g = t[tw.label] / t[c.label]
            gains[c.label].append(g)
            print(f"{f'{m}x{n}x{k}':>18} {c.label:>34} {t[c.label]:8.1f} {t[tw.label]:8.1f} {g:7.3f} "
                  f"{t['table']:8.1f} {lt:8.1f} {t['torch']:8.1f} {lt / t[c.label]:6.3f} {lt / t['table']:6.3f} "
                  f"{'yes' if same else 'NO'}   {table.label()}", flush=True)
        del x, cands, outs
        torch.cuda.empty_cache()
    print("== geomean twin / cluster (>1: the cluster config is faster)")
    for label, gs in gains.items():
        if gs:
            print(f"{label:>34} {geometric_mean(gs):.3f} over {len(gs)} shapes "
                  f"(min {min(gs):.3f}, max {max(gs):.3f})")


if __name__ == "__main__":
    main()
