"""Why one torch.matmul reads slower as "dispatch" than as "torch" (issue 6, sessions 37-38: 12288x256x8192 and
16384x256x8192 ran 4-7% slower through hgemm's torch fallback than as the torch baseline, in both grids, though
both make the same call into the same output buffers).

Per shape, the same GPU timing as the grid (`time_gpu`: CUDA graphs, shuffled rounds) of three candidates: hgemm
handed Choice("torch") ("dispatch"), torch.matmul ("torch") and torch.matmul again ("torch_twin", an A/A pair), in
two capture orders (the grid captures "dispatch" before "torch"). If the candidate captured first is the slow one
in both orders, the gap is the capture, not the call. Then torch.profiler over one replay of each graph: the
kernels each graph holds and their mean durations (a different cuBLAS kernel or workspace would show here).

    python benchmarks/gemm_torch_twins.py --shapes 16384x256x8192,12288x256x8192 --out twins.json
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys


def _shape(text: str) -> tuple[int, int, int]:
    m, n, k = (int(v) for v in text.lower().split("x"))
    return m, n, k


def profile_graph(graph) -> list[dict]:
    """Kernels of one replay of a captured graph: name, count, mean microseconds."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        graph.replay()
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        dev_us = getattr(ev, "device_time_total", None)
        if dev_us is None:
            dev_us = getattr(ev, "cuda_time_total", 0.0)
        if dev_us and ev.count:
            rows.append({"kernel": ev.key[:120], "count": ev.count, "mean_us": dev_us / ev.count})
    return sorted(rows, key=lambda r: -r["mean_us"] * r["count"])


def one_shape(shape: tuple[int, int, int], order: list[str], rounds: int, seed: int) -> dict:
    import torch

    from cudaopt.gemm import _lib, hgemm
    from cudaopt.gemm.bench import make_inputs, num_sets, torch_launch
    from cudaopt.gemm.dispatch import Choice
    from cudaopt.gemm.timing import capture, estimate_us, graph_calls, time_gpu

    m, n, k = shape
    torch.manual_seed(seed)
    sets = num_sets(m, n, k)
    x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, 1), with_blas=True)
    choice = Choice("torch")
    launches = {"dispatch": lambda i: hgemm(x.a[i], x.b[i], out=x.c[i], workspace=x.ws, choice=choice),
                "torch": torch_launch(x), "torch_twin": torch_launch(x)}
    cands = {name: launches[name] for name in order}
    per_round: dict[str, list[float]] = {}
    med = time_gpu(cands, sets, rounds=rounds, rng=random.Random(seed), per_round=per_round)
    paired = {}
    for name in order:
        if name != "torch" and per_round.get(name) and per_round.get("torch"):
            paired[name] = statistics.median(t / b for t, b in zip(per_round[name], per_round["torch"]))
    calls = graph_calls(min(estimate_us(fn, sets) for fn in cands.values()))
    kernels = {name: profile_graph(capture(fn, calls, sets)) for name, fn in cands.items()}
    return {"shape": list(shape), "order": order, "median_us": med, "paired_vs_torch": paired,
            "calls_per_graph": calls, "kernels": kernels}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="16384x256x8192,12288x256x8192,8192x512x12288")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write every result as JSON here")
    args = ap.parse_args(argv)
    try:
        shapes = [_shape(s) for s in args.shapes.split(",") if s]
    except ValueError:
        print(f"--shapes: {args.shapes!r} is not a comma list of MxNxK; e.g. 16384x256x8192", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("gemm_torch_twins: needs a CUDA GPU", file=sys.stderr)
        return 2
    results = []
    orders = (["dispatch", "torch", "torch_twin"], ["torch", "torch_twin", "dispatch"])
    print(f"{'shape':>16} {'captured first':>15} {'dispatch/torch':>15} {'twin/torch':>11}  kernels (dispatch | torch)")
    for shape in shapes:
        for order in orders:
            r = one_shape(shape, list(order), args.rounds, args.seed)
            results.append(r)
            ks = {name: ",".join(f"{row['kernel'][:40]}:{row['mean_us']:.1f}" for row in r["kernels"][name][:2])
                  for name in ("dispatch", "torch")}
            p = r["paired_vs_torch"]
            print(f"{'x'.join(map(str, shape)):>16} {order[0]:>15} {p.get('dispatch', float('nan')):>15.4f} "
                  f"{p.get('torch_twin', float('nan')):>11.4f}  {ks['dispatch']} | {ks['torch']}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
