"""What one hgemm call costs on the host, next to torch.matmul's (GPU machine).

Call timing (`bench-gemm --timing call`) reads what a Python caller pays per call; on small shapes that
is host time, not kernel time. Session 18 found hgemm 13 us above torch.matmul's 19 us with a torch
choice, most of it the row-stride checks. This times back-to-back calls of a tiny shape (the GPU
finishes each call long before the host issues the next, so the loop measures the host), per path:
torch.matmul, hgemm with a pre-built choice of each backend, hgemm choosing from the table, and the
pieces of hgemm's own work. Medians of --repeats loops of --calls calls.

    PYTHONPATH=src python benchmarks/gemm_host_cost.py [--size 64] [--calls 5000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time


def per_call_us(fn, calls: int, repeats: int) -> float:
    import torch

    for _ in range(200):
        fn()
    runs = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=64, help="M = N = K of the shape (a multiple of 64)")
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("gemm_host_cost.py needs a CUDA GPU")
    from cudaopt.gemm import Choice, _check_operands, _packed_strides, hgemm, row_stride
    from cudaopt.gemm.dispatch import choose

    s = args.size
    a, b, c = (torch.randn(s, s, device="cuda", dtype=torch.float16) for _ in range(3))
    table = choose(s, s, s)
    ours = table.as_ours()
    rows = [
        ("torch.matmul(out=)", lambda: torch.matmul(a, b, out=c)),
        ("hgemm, table's choice", lambda: hgemm(a, b, out=c)),
        ("hgemm, choice torch", lambda ch=Choice("torch", ours.config, ours.splits): hgemm(a, b, out=c, choice=ch)),
        ("hgemm, choice ours", lambda: hgemm(a, b, out=c, choice=ours)),
        ("hgemm, choice cuBLASLt algo 0", lambda ch=Choice("cublaslt", ours.config, ours.splits, 0): hgemm(a, b, out=c, choice=ch)),
        ("  _check_operands", lambda: _check_operands(a, b)),
        ("  _packed_strides", lambda: _packed_strides(a, b, c, s, s, s)),
        ("  row_stride x 3", lambda: (row_stride(a), row_stride(b), row_stride(c))),
        ("  choose (memoised)", lambda: choose(s, s, s, strides=(s, s, s))),
    ]
    print(f"host us per call, {s}x{s}x{s} (table: {table.label()}), median of {args.repeats} x {args.calls} calls")
    base = None
    for name, fn in rows:
        us = per_call_us(fn, args.calls, args.repeats)
        base = base if base is not None else us
        extra = f"  ({us - base:+.2f} vs torch.matmul)" if name.startswith("hgemm") else ""
        print(f"{name:32s} {us:7.2f}{extra}")


if __name__ == "__main__":
    main()
