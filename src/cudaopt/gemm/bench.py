"""The HGEMM benchmark: our kernels against torch.matmul, cuBLAS and cuBLASLt, per shape.

For each shape: allocate several input sets (rotated, so L2 does not keep them), build one launch
per candidate, time them interleaved in random order (`timing`), run the correctness checks on
ours, and finally summarise ours (and the dispatcher) against every baseline, per work class.

Candidates (all fp16 in/out):
  ours                  our mma.sync kernel with the tuned (or heuristic) config; no cuBLAS inside
  dispatch              cudaopt.gemm.hgemm: ours, or torch.matmul where the table says ours lose
  torch                 torch.matmul(a, b, out=c)
  cublas_nn, cublas_tn  cublasGemmEx, CUBLAS_COMPUTE_32F; TN reads a pre-transposed B (N x K)
  lt_heur_{nn,tn}       cuBLASLt, heuristic top-1, fp32 compute and scale, 64 MiB workspace
  lt_auto_{nn,tn}       cuBLASLt, fastest of up to 16 heuristic algorithms timed on this shape
  cublas_nn_fp16compute cublasGemmEx with CUBLAS_COMPUTE_16F: fp16 accumulate, labelled, not a peer
"*_max" baselines are the faster of NN and TN per shape, as in the CUDA-L2 seed.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from cudaopt.gemm import _lib
from cudaopt.gemm.configs import Choice
from cudaopt.gemm.dispatch import choose, load_table
from cudaopt.gemm.shapes import Shape
from cudaopt.gemm.stats import SpeedupSummary, max_of, ratios, summarize_by_class
from cudaopt.gemm.timing import time_call, time_gpu

LT_WORKSPACE = 64 << 20
ROTATE_BYTES = 256 << 20  # input bytes per shape across rotated sets: several times the 60 MB L2
BASELINES = ("torch", "cublas_nn", "cublas_tn", "cublas_max", "lt_heur_nn", "lt_heur_tn", "lt_heur_max",
             "lt_auto_nn", "lt_auto_tn", "lt_auto_max", "cublas_nn_fp16compute")


@dataclass
class ShapeInputs:
    a: list
    b: list
    bt: list
    c: list
    ws: object  # fp32 split-K workspace (or None)
    lt_ws: object


def num_sets(m: int, n: int, k: int) -> int:
    per_set = 2 * (m * k + 2 * k * n + m * n)
    return max(2, min(8, math.ceil(ROTATE_BYTES / per_set)))


def make_inputs(m: int, n: int, k: int, sets: int, ws_bytes: int, with_blas: bool) -> ShapeInputs:
    import torch

    a = [torch.randn((m, k), device="cuda", dtype=torch.float16) for _ in range(sets)]
    b = [torch.randn((k, n), device="cuda", dtype=torch.float16) for _ in range(sets)]
    bt = [x.t().contiguous() for x in b] if with_blas else []
    c = [torch.empty((m, n), device="cuda", dtype=torch.float16) for _ in range(sets)]
    ws = torch.empty(max(ws_bytes, 4) // 4, device="cuda", dtype=torch.float32)
    lt_ws = torch.empty(LT_WORKSPACE, device="cuda", dtype=torch.uint8) if with_blas else None
    return ShapeInputs(a, b, bt, c, ws, lt_ws)


def _stream() -> int:
    import torch

    return torch.cuda.current_stream().cuda_stream


def ours_launch(x: ShapeInputs, m: int, n: int, k: int, choice: Choice):
    ws_bytes = _lib.workspace_bytes(m, n, choice.splits)

    def run(i: int) -> None:
        _lib.launch_ours(x.a[i].data_ptr(), x.b[i].data_ptr(), x.c[i].data_ptr(), m, n, k, choice.config,
                         choice.splits, x.ws.data_ptr(), ws_bytes, _stream())
    return run


def blas_launches(x: ShapeInputs, m: int, n: int, k: int, plans: dict) -> dict:
    lib = _lib.blas()

    def gemm_ex(layout: int, compute: int):
        bs = x.b if layout == 0 else x.bt

        def run(i: int) -> None:
            st = lib.cudaopt_cublas_gemm(x.a[i].data_ptr(), bs[i].data_ptr(), x.c[i].data_ptr(), m, n, k,
                                         layout, compute, _stream())
            if st:
                raise _lib.GemmError(f"cublasGemmEx status {st}")
        return run

    def lt(layout: int, algo: int):
        plan, bs = plans[layout], (x.b if layout == 0 else x.bt)

        def run(i: int) -> None:
            plan.run(algo, x.a[i].data_ptr(), bs[i].data_ptr(), x.c[i].data_ptr(), x.lt_ws.data_ptr(),
                     LT_WORKSPACE, _stream())
        return run

    out = {"cublas_nn": gemm_ex(0, 0), "cublas_tn": gemm_ex(1, 0), "cublas_nn_fp16compute": gemm_ex(0, 1)}
    for layout, tag in ((0, "nn"), (1, "tn")):
        if layout in plans:
            out[f"lt_heur_{tag}"] = lt(layout, 0)
            out[f"lt_auto_{tag}"] = lt(layout, plans[f"best{layout}"])
    return out


def lt_plans(x: ShapeInputs, m: int, n: int, k: int, sets: int, rng: random.Random) -> dict:
    """cuBLASLt plans for NN and TN, each with its fastest returned algorithm found by timing."""
    plans: dict = {}
    for layout in (0, 1):
        try:
            plan = _lib.LtPlan(m, n, k, layout, LT_WORKSPACE)
        except _lib.GemmError:
            continue
        plans[layout] = plan
        bs = x.b if layout == 0 else x.bt

        def algo_run(j: int, bs=bs, plan=plan):
            return lambda i: plan.run(j, x.a[i].data_ptr(), bs[i].data_ptr(), x.c[i].data_ptr(),
                                      x.lt_ws.data_ptr(), LT_WORKSPACE, _stream())
        times = time_gpu({str(j): algo_run(j) for j in range(plan.count)}, sets, rounds=3, rng=rng)
        finite = {int(j): t for j, t in times.items() if math.isfinite(t)}
        plans[f"best{layout}"] = min(finite, key=finite.get) if finite else 0
    return plans


@dataclass
class BenchResult:
    times: dict[str, dict[Shape, float]] = field(default_factory=dict)  # candidate -> shape -> us
    checks: dict[Shape, dict] = field(default_factory=dict)
    summaries: list[SpeedupSummary] = field(default_factory=list)
    skipped: list[Shape] = field(default_factory=list)
    seconds: float = 0.0


def run_bench(shapes: list[Shape], mode: str = "offline", timing: str = "gpu", table_path: str | None = None,
              with_blas: bool = True, check: bool = True, rounds: int = 15, seed: int = 0,
              budget_s: float | None = None, log=print) -> BenchResult:
    import torch

    from cudaopt.gemm import hgemm
    from cudaopt.gemm.correctness import check_gemm

    if mode not in ("offline", "server") or timing not in ("gpu", "call"):
        raise ValueError("mode is 'offline' or 'server'; timing is 'gpu' or 'call'")
    table = load_table(table_path)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    res = BenchResult()
    t_start = time.perf_counter()
    if with_blas:
        try:
            _lib.blas()
        except _lib.GemmError as err:
            log(f"cuBLAS baselines unavailable, torch.matmul only: {err}")
            with_blas = False
    for idx, (m, n, k) in enumerate(shapes):
        if budget_s is not None and time.perf_counter() - t_start > budget_s:
            res.skipped.extend(shapes[idx:])
            log(f"time budget reached: {len(shapes) - idx} shapes not run")
            break
        choice = choose(m, n, k, table)
        ours_choice = choice if choice.backend == "ours" else Choice("ours", choice.config, choice.splits)
        sets = num_sets(m, n, k)
        x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, max(ours_choice.splits, choice.splits)), with_blas)
        cands = {"ours": ours_launch(x, m, n, k, ours_choice),
                 "dispatch": lambda i, x=x, c=choice: hgemm(x.a[i], x.b[i], out=x.c[i], workspace=x.ws, choice=c),
                 "torch": lambda i, x=x: torch.matmul(x.a[i], x.b[i], out=x.c[i])}
        plans = {}
        if with_blas:
            plans = lt_plans(x, m, n, k, sets, rng)
            cands.update(blas_launches(x, m, n, k, plans))
        if timing == "gpu":
            t = time_gpu(cands, sets, rounds=rounds, server=(mode == "server"), rng=rng)
        else:
            t = time_call(cands, sets, rng=rng)
        for name, us in t.items():
            res.times.setdefault(name, {})[(m, n, k)] = us
        for layout in (0, 1):
            if layout in plans:
                plans[layout].close()
        if check:
            r = check_gemm(lambda a, b, out, c=ours_choice: hgemm(a, b, out=out, choice=c), m, n, k, seed=seed + idx)
            res.checks[(m, n, k)] = {"correct": r.ok, "exact01": r.exact_ok, "normal": r.normal_ok, "nan": r.nan_ok,
                                     "guard": r.guard_ok, "rel_err": f"{r.rel_err:.3e}",
                                     "torch_rel_err": f"{r.ref_rel_err:.3e}", "choice": ours_choice.label(),
                                     "dispatch": choice.label()}
        del x
        log(f"[{idx + 1}/{len(shapes)}] {m}x{n}x{k} ours {t['ours']:.2f}us torch {t['torch']:.2f}us "
            + (f"lt_auto_max {min(t.get('lt_auto_nn', math.inf), t.get('lt_auto_tn', math.inf)):.2f}us " if with_blas else "")
            + (f"ok={res.checks[(m, n, k)]['correct']}" if check else ""))
    torch.cuda.empty_cache()
    times = res.times
    if "cublas_nn" in times:
        times["cublas_max"] = max_of(times["cublas_nn"], times["cublas_tn"])
    if "lt_heur_nn" in times:
        times["lt_heur_max"] = max_of(times["lt_heur_nn"], times.get("lt_heur_tn", {}))
    if "lt_auto_nn" in times:
        times["lt_auto_max"] = max_of(times["lt_auto_nn"], times.get("lt_auto_tn", {}))
    for who in ("ours", "dispatch"):
        for base in BASELINES:
            if base in times and who in times:
                res.summaries += summarize_by_class(f"{who} vs {base}", ratios(times[base], times[who]))
    res.seconds = time.perf_counter() - t_start
    return res


def write_outputs(res: BenchResult, out_dir: Path, title: str) -> None:
    from cudaopt.gemm.report import plot_speedups, summary_markdown, write_shape_csv, write_summary_csv

    out_dir.mkdir(parents=True, exist_ok=True)
    write_shape_csv(out_dir / "shapes.csv", res.times, res.checks)
    write_summary_csv(out_dir / "summary.csv", res.summaries)
    n_ok = sum(1 for c in res.checks.values() if c["correct"])
    md = [f"## {title}", "", f"shapes timed: {len(res.times.get('ours', {}))}; correct (all checks): "
          f"{n_ok}/{len(res.checks)}; skipped for time: {len(res.skipped)}; wall {res.seconds:.0f} s", ""]
    md.append(summary_markdown(res.summaries, "t_ref / t_ours per baseline (ours, then dispatch)"))
    (out_dir / "summary.md").write_text("\n".join(md))
    plot = {b: ratios(res.times[b], res.times["ours"]) for b in ("torch", "cublas_max", "lt_auto_max")
            if b in res.times and "ours" in res.times}
    plot_speedups(out_dir / "speedup.png", plot, title)
    (out_dir / "checks.json").write_text(json.dumps({f"{m}x{n}x{k}": c for (m, n, k), c in res.checks.items()}, indent=1))
