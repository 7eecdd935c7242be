"""Which cuBLASLt kernels are fastest where its autotuned best beats its own heuristic (GPU).

On the grid's large shapes of a short K (M x N >= 2^26, K = 256-1024) cuBLASLt's fastest returned
algorithm ran 15-20% faster than its heuristic's first choice and than torch.matmul (session 14's
offline benchmark), and 8-12% faster than ours. Per shape and layout (NN: B as K x N, what torch and
ours read; TN: B stored N x K) this times every algorithm the heuristic returns (up to 32),
interleaved, and prints the fastest few with what they are: tile, stages, cluster shape, CTA
swizzle, split-K and reduction scheme (raw cublasLt enum values, decoded where the value is listed
below), beside the shipped table's choice of ours. cuBLAS is column-major: it computes C^T = B^T A^T,
so its tile's first dimension runs along our N.

    PYTHONPATH=src python benchmarks/gemm_lt_algos.py [--shapes 16384x16384x512,...] [--top 5]
"""

from __future__ import annotations

import argparse
import math
import random

SHAPES = "16384x12288x256,16384x16384x512,8192x8192x512,12288x12288x1024,1024x1024x8192,16384x16384x16384"
# cublasLtMatmulTile_t values 15-25 (NVIDIA's cuBLASLt documentation)
TILES = {15: "64x64", 16: "128x32", 17: "64x128", 18: "128x64", 19: "64x256", 20: "128x128", 21: "256x64",
         22: "64x512", 23: "128x256", 24: "256x128", 25: "512x64"}
# cublasLtClusterShape_t values 0-10
CLUSTERS = {0: "auto", 2: "1x1", 3: "2x1", 4: "4x1", 5: "1x2", 6: "2x2", 7: "4x2", 8: "1x4", 9: "2x4", 10: "4x4"}


def describe(info: dict[str, int]) -> str:
    tile = TILES.get(info["tile"], f"tile#{info['tile']}")
    cluster = CLUSTERS.get(info["cluster"], f"#{info['cluster']}")
    return (f"algo {info['algo_id']:>3} tile {tile:>8} stages#{info['stages']:<3} cluster {cluster:>4} "
            f"swizzle {info['swizzle']} splitk {info['splitk']} red {info['reduction']} custom {info['custom']} "
            f"ws {info['workspace'] >> 10} KiB")


def kernel_names(launches: dict) -> dict[str, str]:
    """The CUDA kernels each launch runs, as the profiler names them (cuBLAS's names spell out the
    tile, cluster, warpgroups and schedule)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    out = {}
    for name, fn in launches.items():
        with profile(activities=[ProfilerActivity.CUDA], acc_events=True) as prof:
            fn(0)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        out[name] = " + ".join(dict.fromkeys(names)) or "?"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES, help="MxNxK comma-separated")
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--per-layout", action="store_true",
                    help="the fastest --top of each layout (NN and TN) rather than of both together: what a TN-only "
                         "shape's best TN kernel is against the best NN one")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()

    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import LT_WORKSPACE, lt_launch, make_inputs, num_sets, ours_launch, torch_launch
    from cudaopt.gemm.dispatch import choose
    from cudaopt.gemm.shapes import parse_shapes
    from cudaopt.gemm.timing import time_gpu

    rng = random.Random(0)
    for m, n, k in parse_shapes(args.shapes):
        table = choose(m, n, k)
        ours = table.as_ours()
        sets = num_sets(m, n, k)
        x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, ours.splits), True)
        cands = {"ours": ours_launch(x, m, n, k, ours),
                 "torch": torch_launch(x)}
        plans, infos = {}, {}
        try:
            for layout, tag in ((0, "NN"), (1, "TN")):
                try:
                    plan = plans[layout] = _lib.LtPlan(m, n, k, layout, LT_WORKSPACE, max_algos=32)
                except _lib.GemmError as e:
                    print(f"{m}x{n}x{k} {tag}: {e}")
                    continue
                for j in range(plan.count):
                    name = f"{tag}{j}"
                    infos[name] = plan.algo_info(j)
                    cands[name] = lt_launch(x, plan, j, layout)
            t = time_gpu(cands, sets, rounds=args.rounds, rng=rng)
            lt = sorted(((us, name) for name, us in t.items() if name in infos and math.isfinite(us)))
            top = ([x for tag in ("TN", "NN") for x in [y for y in lt if y[1].startswith(tag)][: args.top]]
                   if args.per_layout else lt[: args.top])
            shown = [name for _, name in top] + (["NN0"] if "NN0" in infos else [])
            kernels = kernel_names({name: cands[name] for name in shown})  # while the plans are open
        finally:
            for plan in plans.values():
                plan.close()
        heur = t.get("NN0", math.nan)
        print(f"== {m}x{n}x{k}: ours {t['ours']:.1f} us ({ours.label()}), torch {t['torch']:.1f}, "
              f"cuBLASLt heuristic NN0 {heur:.1f}, {len(lt)} algorithms timed")
        for us, name in top:
            print(f"   {name:>5} {us:9.1f} us  x{heur / us:5.3f} of NN0  x{t['ours'] / us:5.3f} of ours  "
                  f"{describe(infos[name])}\n         {kernels.get(name, '?')}")
        print(f"   NN0 (heuristic): {describe(infos['NN0'])}\n         {kernels.get('NN0', '?')}" if "NN0" in infos
              else "   no NN plan", flush=True)
        del x, cands
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
