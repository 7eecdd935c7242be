"""The dispatcher's cuBLASLt fallback: one tuned cuBLASLt algorithm per shape, where it beats ours.

torch.matmul, the first fallback, runs cuBLAS's heuristic choice, which on the H200 was up to 15% slower
than the fastest algorithm cuBLASLt's own heuristic list holds (session 18's grid: 114 of the shapes
handed to torch ran below 0.98x of cuBLASLt autotuned). The fallback tuner (`tune.run_lt_fallbacks`) times
that list per shape and records the fastest algorithm's index in the table (backend "cublaslt"); hgemm
runs it here, in the NN layout: hgemm receives B as K x N row-major, and a transposed copy for TN would cost
more than the layout gains. A caller that already holds B transposed (b = w.t(), nn.Linear's weight) may get a
TN algorithm (the table's bt_lt_algo, session 42): the same plans in the TN layout, handed w as it is.

A plan (descriptors plus the heuristic's list) is made once per (device, M, N, K) and kept for the
process, as cuBLAS keeps its own per-handle state; the list is the same in every process for one cuBLAS
version, GPU and workspace limit. Under another cuBLAS version an index may name another algorithm,
which still computes the same product; an index beyond the list sends the call to torch.matmul.
"""

from __future__ import annotations

import threading

# The workspace limit the plans are made with, the benchmark's (bench.LT_WORKSPACE): the heuristic's
# list depends on it, so the tuner and hgemm must use the same value.
LT_FALLBACK_WORKSPACE = 64 << 20

_plans: dict[tuple[int, int, int, int, int], object] = {}
_lock = threading.Lock()


_NO_PLAN = object()  # this shape has no plan in this process (no cuBLASLt library, or no algorithm)


def plan_for(device_index: int, m: int, n: int, k: int, layout: int = 0):
    """The process's plan for (m, n, k) on a device in `layout` (0: NN, 1: TN), made on first use; None where none
    can be made (the cuBLAS baseline library is not built here, or cuBLASLt has no algorithm for the shape), which is
    remembered and said once in a warning: hgemm then calls torch.matmul for the shape."""
    key = (device_index, m, n, k, layout)
    plan = _plans.get(key)
    if plan is None:
        import torch

        from cudaopt.gemm import _lib

        with _lock:
            plan = _plans.get(key)
            if plan is None:
                try:
                    with torch.cuda.device(device_index):
                        plan = _lib.LtPlan(m, n, k, layout, LT_FALLBACK_WORKSPACE)
                    plan.workspace = [plan.algo_info(j)["workspace"] for j in range(plan.count)]
                except _lib.GemmError as e:
                    import warnings

                    warnings.warn(f"hgemm: no cuBLASLt {('NN', 'TN')[layout]} fallback for {m}x{n}x{k} ({e}); "
                                  "using torch.matmul there",
                                  RuntimeWarning, stacklevel=3)
                    plan = _NO_PLAN
                _plans[key] = plan
    return None if plan is _NO_PLAN else plan


def lt_matmul(a, b, out, algo: int, stream: int, workspace=None, layout: int = 0) -> bool:
    """out = a @ b with algorithm `algo` of the shape's plan in `layout`, on `stream`. a, out contiguous fp16; b
    contiguous (layout 0) or, for layout 1 (TN), the transposed view of a contiguous N x K matrix, whose storage
    the plan reads as it is. workspace: an optional CUDA buffer (any dtype) used when it is large enough; else the
    stream's cached workspace (`_stream_workspace`). Returns False (nothing launched) where there is no plan or it
    has no algorithm `algo`: the caller calls torch.matmul."""

    m, k = a.shape
    n = b.shape[1]
    plan = plan_for(a.device.index, m, n, k, layout)
    if plan is None or not 0 <= algo < plan.count:
        return False
    need = max(int(plan.workspace[algo]), 0)
    ws_ptr, ws_bytes = 0, 0
    if need:
        if workspace is None or workspace.numel() * workspace.element_size() < need:
            workspace = _stream_workspace(a.device, stream, need)
        ws_ptr, ws_bytes = workspace.data_ptr(), workspace.numel() * workspace.element_size()
    plan.run(algo, a.data_ptr(), b.data_ptr(), out.data_ptr(), ws_ptr, ws_bytes, stream)
    return True


# One workspace per (device, stream), grown to the largest an algorithm asked for (at most 8 MiB over the
# H200 table), as torch keeps one cuBLAS workspace per handle and stream: calls on one stream are ordered,
# so they may share it, and a host allocation per call (~2 us) would be paid by the small shapes.
_workspaces: dict[tuple[int, int], object] = {}


def _stream_workspace(device, stream: int, need: int):
    import torch

    if torch.cuda.is_current_stream_capturing():  # a graph's allocations belong to its pool: not kept
        return torch.empty(need, dtype=torch.uint8, device=device)
    key = (device.index, stream)
    ws = _workspaces.get(key)
    if ws is None or ws.numel() < need:
        # the smaller one is released stream-ordered: only later work on this stream can reuse its memory
        ws = _workspaces[key] = torch.empty(max(need, 1 << 20), dtype=torch.uint8, device=device)
    return ws


def clear_plans() -> None:
    """Destroy every cached plan and drop the cached workspaces (tests; a process done with GEMM)."""
    with _lock:
        for plan in _plans.values():
            if plan is not _NO_PLAN:
                plan.close()
        _plans.clear()
        _workspaces.clear()


# cublasLt.h's enums (cuBLAS 12-13), for reading the algo_info a fallback entry records. A tile id is cuBLAS's
# column-major M_lt x N_lt; cuBLAS computes our row-major C as its C^T, so M_lt runs along our N and N_lt along
# our M. A cluster shape X x Y x 1 likewise: X CTAs along our N, Y along our M.
_LT_TILES = {12: (32, 64), 13: (64, 32), 14: (32, 128), 15: (64, 64), 16: (128, 32), 17: (64, 128), 18: (128, 64),
             19: (64, 256), 20: (128, 128), 21: (256, 64), 22: (64, 512), 23: (128, 256), 24: (256, 128),
             25: (512, 64), 26: (64, 96), 27: (96, 64), 28: (96, 128), 29: (128, 160), 30: (160, 128),
             31: (192, 128), 32: (128, 192), 33: (128, 96), 34: (32, 256), 35: (256, 32)}
_LT_CLUSTERS = {2: (1, 1), 3: (2, 1), 4: (4, 1), 5: (1, 2), 6: (2, 2), 7: (4, 2), 8: (1, 4), 9: (2, 4), 10: (4, 4),
                11: (8, 1), 12: (1, 8)}


def describe_lt_algo(info: dict) -> dict:
    """An algo_info record (the table's `lt_fallback.algo_info`) in our row-major frame: the CTA tile as
    (rows, cols) of C, the cluster as (CTAs along M, along N), and the split-K count; None where the enum
    value is not one this module knows (0: chosen automatically)."""
    tile = _LT_TILES.get(info.get("tile", 0))
    cluster = _LT_CLUSTERS.get(info.get("cluster", 0))
    return {"tile": (tile[1], tile[0]) if tile else None, "cluster": (cluster[1], cluster[0]) if cluster else None,
            "splitk": info.get("splitk"), "waves": info.get("waves_x1000", 0) / 1000}
