"""How our wgmma kernels fare on shapes off the 64-multiple grid (GPU), and whether padded row strides
recover it.

Session 14's off-grid benchmark (200 shapes, every dimension a multiple of 8) read ours at 0.83x torch
(median) where the grid reads 1.06x, down to 0.44x on compute-bound shapes. This takes aligned base
shapes and moves one dimension at a time, to say which operand's alignment (or which tile tail) costs:

    m-8   a ragged M tail only (no row stride changes)
    k-8   A's row stride K*2 bytes is no longer a multiple of 128 (and a ragged K tail)
    k-64  a K tail of one missing k-block, strides aligned
    n-8   B's and C's row stride N*2 bytes is no longer a multiple of 128 (and a ragged N tail)
    n-64  an N tail, strides aligned
    all-8 every dimension minus 8

Per shape it times torch.matmul, ours with packed operands (lda = K, ldb = ldc = N, what `hgemm`
passes) loaded by TMA, the same with the cp.async producer (CUDAOPT_GEMM_CPASYNC=2: 16-byte copies
instead of TMA boxes, on aligned rows too), and ours (TMA) with the same logical operands held in
storage whose rows are padded to 64 elements (lda = ceil64(K), ldb = ldc = ceil64(N): TMA then reads
and the epilogue writes 128-byte-aligned rows), and with A and B padded but C packed (what C's row
alignment costs the epilogue). The config is the shipped table's choice for the shape (its neighbour's off the grid; a torch
fallback's recorded config). All of ours are checked against torch.matmul. Prints one row per shape
and, per variant, the geomean of torch / ours over the bases.

    PYTHONPATH=src python benchmarks/gemm_alignment.py [--bases 4096x4096x4096,...] [--rounds 15]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
from statistics import geometric_mean

BASES = "512x4096x512,2048x2048x2048,4096x4096x4096,8192x8192x8192,16384x4096x1024,1024x8192x8192"
VARIANTS = {"base": (0, 0, 0), "m-8": (8, 0, 0), "k-8": (0, 0, 8), "k-64": (0, 0, 64), "n-8": (0, 8, 0),
            "n-64": (0, 64, 0), "all-8": (8, 8, 8)}


def ceil64(x: int) -> int:
    return (x + 63) // 64 * 64


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bases", default=BASES, help="aligned base shapes, MxNxK comma-separated")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()

    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import _stream, num_sets
    from cudaopt.gemm.dispatch import choose
    from cudaopt.gemm.shapes import parse_shapes
    from cudaopt.gemm.timing import time_gpu

    lib = _lib.wgmma_kernels()
    rng = random.Random(0)
    ratios: dict[str, list[tuple[float, ...]]] = {v: [] for v in VARIANTS}
    print(f"{'shape':>20} {'variant':>6} {'config':>38} {'torch us':>9} {'ours us':>9} {'padded us':>9} "
          f"{'cp us':>9} {'t/ours':>7} {'t/padded':>8} {'t/cp':>8} {'t/padAB':>8} {'rel err':>8} cp==ours")
    for bm, bn, bk in parse_shapes(args.bases):
        for variant, (dm, dn, dk) in VARIANTS.items():
            m, n, k = bm - dm, bn - dn, bk - dk
            choice = dataclasses.replace(choose(m, n, k), backend="ours")
            sets = num_sets(m, n, k)
            lk, ln = ceil64(k), ceil64(n)
            # padded storage: the logical operand is the leading [:rows, :cols] block of each buffer
            a_st = [torch.randn(m, lk, device="cuda", dtype=torch.float16) for _ in range(sets)]
            b_st = [torch.randn(k, ln, device="cuda", dtype=torch.float16) for _ in range(sets)]
            a = [x[:, :k].contiguous() for x in a_st]
            b = [x[:, :n].contiguous() for x in b_st]
            c = [torch.empty(m, n, device="cuda", dtype=torch.float16) for _ in range(sets)]
            c_st = [torch.empty(m, ln, device="cuda", dtype=torch.float16) for _ in range(sets)]
            ws_bytes = _lib.workspace_bytes(m, n, choice.splits)
            ws = _lib.new_workspace(m, n, choice.splits)
            ws_ptr = ws.data_ptr() if ws is not None else 0

            def run(ptrs, lda, ldb, ldc, producer=0):
                def go(i: int) -> None:
                    _lib.set_cpasync(producer, lib)  # read by the launch (a graph keeps what it captured)
                    ap_, bp_, cp_ = (p[i] for p in ptrs)
                    # _stream(): the capture's stream when a CUDA graph records this call
                    _lib.launch_ours(ap_, bp_, cp_, m, n, k, choice.config, choice.splits, ws_ptr, ws_bytes,
                                     _stream(), lda, ldb, ldc)
                return go

            packed = run([[x.data_ptr() for x in a], [x.data_ptr() for x in b], [x.data_ptr() for x in c]], k, n, n)
            padded = run([[x.data_ptr() for x in a_st], [x.data_ptr() for x in b_st], [x.data_ptr() for x in c_st]],
                         lk, ln, ln)
            cpasync = run([[x.data_ptr() for x in a], [x.data_ptr() for x in b], [x.data_ptr() for x in c]], k, n, n, 2)
            pad_ab = run([[x.data_ptr() for x in a_st], [x.data_ptr() for x in b_st], [x.data_ptr() for x in c]],
                         lk, ln, n)  # A and B padded, C packed: what C's row alignment costs

            def torch_mm(i: int) -> None:
                torch.matmul(a[i], b[i], out=c[i])

            torch_mm(0)
            ref = c[0].float().clone()
            cpasync(0)
            got_cp = c[0].float().clone()
            packed(0)
            got_packed = c[0].float().clone()
            padded(0)
            torch.cuda.synchronize()
            got_padded = c_st[0][:, :n].float()
            scale = ref.abs().max().item() + 1e-6
            err = max((g - ref).abs().max().item() for g in (got_packed, got_padded, got_cp)) / scale
            same = torch.equal(got_cp, got_packed)  # the producers fill identical slots: bitwise equal
            try:
                t = time_gpu({"torch": torch_mm, "ours": packed, "padded": padded, "cpasync": cpasync,
                              "pad_ab": pad_ab}, sets, rounds=args.rounds, rng=rng)
            finally:
                _lib.set_cpasync(_lib.cpasync_mode(), lib)
            r = (t["torch"] / t["ours"], t["torch"] / t["padded"], t["torch"] / t["cpasync"], t["torch"] / t["pad_ab"])
            ratios[variant].append(r)
            print(f"{f'{m}x{n}x{k}':>20} {variant:>6} {choice.label():>38} {t['torch']:9.2f} {t['ours']:9.2f} "
                  f"{t['padded']:9.2f} {t['cpasync']:9.2f} {r[0]:7.3f} {r[1]:8.3f} {r[2]:8.3f} {r[3]:8.3f} {err:8.1e} {same}",
                  flush=True)
            a_st = b_st = a = b = c = c_st = ws = None  # free this shape's buffers before the next
            torch.cuda.empty_cache()
    print("== geomean torch/ours over the bases (>1: ours faster): variant, packed (TMA), padded rows (TMA), "
          "packed (cp.async), A and B padded with C packed")
    for variant, rs in ratios.items():
        if rs:
            g = [geometric_mean(r[j] for r in rs) for j in range(4)]
            print(f"{variant:>6}  packed {g[0]:.3f}  padded {g[1]:.3f}  cp.async {g[2]:.3f}  A,B padded {g[3]:.3f}  "
                  f"({len(rs)} shapes)")


if __name__ == "__main__":
    main()
