"""What one hgemm call costs on the host, next to torch.matmul's (GPU machine).

Call timing (`bench-gemm --timing call`) reads what a Python caller pays per call; on small shapes that
is host time, not kernel time. Session 18 found hgemm 13 us above torch.matmul's 19 us with a torch
choice, most of it the row-stride checks. This times back-to-back calls of a tiny shape (the GPU
finishes each call long before the host issues the next, so the loop measures the host), per path:
torch.matmul, hgemm with a pre-built choice of each backend, hgemm choosing from the table, and the
pieces of hgemm's own work. Medians of --repeats loops of --calls calls.

Session 50 added the B^T route (b = w.t(), nn.Linear's layout) and hgemm handed both layouts (b_col_major, the
seed's protocol), and --python-only: hgemm's routing alone on CPU tensors (no GPU; the launchers replaced by no-ops),
what a change to the Python path moves, measurable on a machine without a GPU.

    PYTHONPATH=src python benchmarks/gemm_host_cost.py [--size 64] [--calls 5000] [--repeats 5] [--python-only]
"""

from __future__ import annotations

import argparse
import statistics
import time


def per_call_us(fns: dict, calls: int, repeats: int, sync=None) -> dict:
    """Median host us per call of each fn. Interleaved (session 51): each repeat times every fn once, the order
    rotated a step per repeat, so a drift (clocks, the host's boost) spreads over all rows instead of landing on the
    rows timed last; session 51's first GPU run timed them one after the other and read the same Choice 11.5 us
    through the table and 17.1 us handed explicitly."""
    import torch

    sync = sync or torch.cuda.synchronize
    names = list(fns)
    for fn in fns.values():
        for _ in range(200):
            fn()
    runs = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = fns[name]
            sync()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            runs[name].append((time.perf_counter() - t0) / calls * 1e6)
    return {name: statistics.median(v) for name, v in runs.items()}


def python_only(size: int, calls: int, repeats: int) -> None:
    """hgemm's routing on CPU tensors, each launcher a no-op: the Python hgemm adds per call, per path."""
    import dataclasses

    import torch

    import cudaopt.gemm as g
    from cudaopt.gemm import Choice

    class NoLaunch:  # what hgemm asks of _lib on these paths
        has_bt = staticmethod(lambda config, splits=1: True)
        workspace_bytes = staticmethod(lambda m, n, splits: 0)
        launch_ours = launch_ours_bt = staticmethod(lambda *args: None)

    g._hot_modules = (torch, NoLaunch, None)
    g._check_operands = lambda a, b: None  # (its is_cuda test refuses CPU tensors)
    g._raw_stream = lambda index: 0
    s = size
    a, b, c = (torch.zeros(s, s, dtype=torch.float16) for _ in range(3))
    bcm = b.t().contiguous().t()
    nn = Choice("ours", 42, 1)
    both = dataclasses.replace(nn, both_bt=True)
    print(f"hgemm's Python alone (CPU tensors, no-op launchers), {s}x{s}x{s}, median of {repeats} x {calls} calls")
    fns = {"B as given, choice ours": lambda: g.hgemm(a, b, out=c, choice=nn),
           "B^T view (w.t()), choice ours": lambda: g.hgemm(a, bcm, out=c, choice=nn),
           "handed both, choice reads b": lambda: g.hgemm(a, b, out=c, choice=nn, b_col_major=bcm),
           "handed both, choice reads the copy": lambda: g.hgemm(a, b, out=c, choice=both, b_col_major=bcm)}
    for name, us in per_call_us(fns, calls, repeats, sync=lambda: None).items():
        print(f"{name:36s} {us:7.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=64, help="M = N = K of the shape (a multiple of 64)")
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--python-only", action="store_true", help="hgemm's routing alone, on the CPU (no GPU needed)")
    args = ap.parse_args()
    if args.python_only:
        return python_only(args.size, args.calls, args.repeats)
    import dataclasses

    import torch

    if not torch.cuda.is_available():
        raise SystemExit("gemm_host_cost.py needs a CUDA GPU")
    from cudaopt.gemm import Choice, _check_operands, _packed_strides, hgemm, row_stride
    from cudaopt.gemm.dispatch import choose

    s = args.size
    a, b, c = (torch.randn(s, s, device="cuda", dtype=torch.float16) for _ in range(3))
    table = choose(s, s, s)
    ours = table.as_ours()
    bt = b.t().contiguous().t()  # B stored column-major: the B^T route's operand (ours has a twin where has_bt)
    rows = [
        ("torch.matmul(out=)", lambda: torch.matmul(a, b, out=c)),
        ("hgemm, table's choice", lambda: hgemm(a, b, out=c)),
        ("hgemm, choice torch", lambda ch=Choice("torch", ours.config, ours.splits): hgemm(a, b, out=c, choice=ch)),
        ("hgemm, choice ours", lambda: hgemm(a, b, out=c, choice=ours)),
        ("hgemm, choice cuBLASLt algo 0", lambda ch=Choice("cublaslt", ours.config, ours.splits, 0): hgemm(a, b, out=c, choice=ch)),
        # (session 50) the B^T route on b = w.t(), and hgemm handed both layouts, the choice reading b or the copy
        ("hgemm, B^T view, table's choice", lambda: hgemm(a, bt, out=c)),
        ("hgemm, B^T view, choice ours", lambda: hgemm(a, bt, out=c, choice=ours)),
        ("hgemm, handed both, reads b", lambda: hgemm(a, b, out=c, choice=ours, b_col_major=bt)),
        ("hgemm, handed both, reads copy", lambda ch=dataclasses.replace(ours, both_bt=True): hgemm(
            a, b, out=c, choice=ch, b_col_major=bt)),
        ("  _check_operands", lambda: _check_operands(a, b)),
        ("  _packed_strides", lambda: _packed_strides(a, b, c, s, s, s)),
        ("  row_stride x 3", lambda: (row_stride(a), row_stride(b), row_stride(c))),
        ("  choose (memoised)", lambda: choose(s, s, s, strides=(s, s, s))),
    ]
    print(f"host us per call, {s}x{s}x{s} (table: {table.label()}), median of {args.repeats} x {args.calls} calls,"
          " rows interleaved")
    base = None
    for name, us in per_call_us(dict(rows), args.calls, args.repeats).items():
        base = base if base is not None else us
        extra = f"  ({us - base:+.2f} vs torch.matmul)" if name.startswith("hgemm") else ""
        print(f"{name:32s} {us:7.2f}{extra}")


if __name__ == "__main__":
    main()
