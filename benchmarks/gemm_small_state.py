"""What a tiny call costs on this card right now, and which card it is (GPU).

Sessions 28-30 saw the grid's shapes under 1e8 FLOP run 10-18% slower for every backend in some grids than in
others (the same table and script; the slowdown largest on ~2 us calls and gone by ~16 us; the large shapes 1-2%
faster), with the SM clock at 1980 MHz in both states (session 30's clocks.csv). This probe runs before a grid
and prints one line that says which state the run is in and on which machine, so the states can be told apart by
measurement instead of by comparing grids afterwards:

- graph replays of N back-to-back launches, microseconds per launch (median of the replays): a near-empty kernel
  (torch.cuda._sleep(0)), a one-element add, and torch.matmul at 64^3 and 256^3 in fp16 (what the grid's smallest
  shapes run);
- with Triton present, one thread's dependent loads through a random cycle in a 1 MiB buffer (L2) and in a 1 GiB
  buffer (HBM), nanoseconds per load: whether memory latency differs between the states;
- our kernel at 64^3 and 256^3 (the shipped table's choice of ours), back to back with programmatic dependent launch
  and without: microseconds per launch each. Session 32's two grids on two cards read PDL's gain below 1e8 FLOP as
  +21.6% and +26.1% with the rest of this probe the same; this says per card what PDL buys before a grid;
- the machine: host name, the GPU's UUID and serial, PCI bus id, driver, persistence mode.

    PYTHONPATH=src python benchmarks/gemm_small_state.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys


def machine() -> dict[str, str]:
    """Which card this is: nvidia-smi's identity fields (empty where it has none)."""
    fields = "uuid,serial,pci.bus_id,driver_version,persistence_mode"
    try:
        line = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20).stdout.splitlines()[0]
        values = [v.strip() for v in line.split(",")]
    except (OSError, IndexError, subprocess.SubprocessError):
        values = []
    out = {"host": socket.gethostname()}
    out.update(zip(fields.split(","), values))
    return out


def per_launch_us(launch, calls: int = 200, replays: int = 25) -> float:
    """Median over `replays` graph replays of `calls` captured launches, in microseconds per launch."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):  # warm: first launches load modules, cuBLAS picks its kernel
            launch()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            launch()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3 / calls)
    return statistics.median(times)


def chase_ns(nbytes: int, steps: int = 4000) -> float | None:
    """Nanoseconds per dependent load of one thread walking a random cycle over `nbytes` (None without Triton)."""
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def _chase(nxt, at, steps):
        i = tl.load(at)
        for _ in range(steps):
            i = tl.load(nxt + i)
        tl.store(at, i)

    n = nbytes // 8
    # One cycle through n // 16 slots 128 bytes apart (a line each), in random order: no two loads share a line
    # and no prefetcher can guess the next.
    slots = torch.randperm(n // 16, device="cuda") * 16
    nxt = torch.zeros(n, dtype=torch.int64, device="cuda")
    nxt[slots] = torch.roll(slots, -1)
    # Where the walk stands: each run goes on from there, over lines no run has touched yet (a repeat of one path
    # hits L2).
    at = torch.zeros(1, dtype=torch.int64, device="cuda")
    _chase[(1,)](nxt, at, 64, num_warps=1)  # compile, and pull the walk's first lines in
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        _chase[(1,)](nxt, at, steps, num_warps=1)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e6 / steps)
    return statistics.median(times)


def ours_pdl_us(size: int) -> tuple[float, float]:
    """Our kernel (the shipped table's choice of ours at size^3), microseconds per launch back to back in a graph:
    (with PDL, without)."""
    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import make_inputs, ours_launch
    from cudaopt.gemm.dispatch import load_table

    choice = load_table()[(size, size, size)].as_ours()
    x = make_inputs(size, size, size, 1, _lib.workspace_bytes(size, size, choice.splits), False)
    with_pdl = ours_launch(x, size, size, size, choice, pdl=True)
    without = ours_launch(x, size, size, size, choice, pdl=False)
    return per_launch_us(lambda: with_pdl(0)), per_launch_us(lambda: without(0))


def probe() -> dict:
    import torch

    dev = torch.device("cuda")
    one = torch.zeros(1, device=dev)
    mats = {s: (torch.randn(s, s, device=dev, dtype=torch.float16), torch.randn(s, s, device=dev, dtype=torch.float16),
                torch.empty(s, s, device=dev, dtype=torch.float16)) for s in (64, 256)}
    res: dict = {"machine": machine()}
    res["empty_us"] = per_launch_us(lambda: torch.cuda._sleep(0))
    res["add1_us"] = per_launch_us(lambda: one.add_(1.0))
    for s, (a, b, c) in mats.items():
        res[f"matmul{s}_us"] = per_launch_us(lambda a=a, b=b, c=c: torch.matmul(a, b, out=c))
    for size in (64, 256):
        try:
            res[f"ours{size}_pdl_us"], res[f"ours{size}_nopdl_us"] = ours_pdl_us(size)
        except Exception as e:  # noqa: BLE001  (no kernel library, no table entry: report why, keep the rest)
            res[f"ours{size}_pdl_us"] = res[f"ours{size}_nopdl_us"] = None
            res.setdefault("errors", []).append(f"ours {size}^3: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    for name, nbytes in (("l2_chase_ns", 1 << 20), ("hbm_chase_ns", 1 << 30)):
        try:
            res[name] = chase_ns(nbytes)
        except Exception as e:  # noqa: BLE001  (the latency walk is optional: report why, keep the rest)
            res[name] = None
            res.setdefault("errors", []).append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    return res


def summary(res: dict) -> str:
    m = res["machine"]
    fmt = lambda v, unit: "n/a" if v is None else f"{v:.2f} {unit}"  # noqa: E731
    return (f"small-call probe: empty {fmt(res['empty_us'], 'us')}, add {fmt(res['add1_us'], 'us')}, "
            f"matmul 64^3 {fmt(res['matmul64_us'], 'us')}, 256^3 {fmt(res['matmul256_us'], 'us')} a launch in a graph; "
            f"ours 64^3 {fmt(res.get('ours64_pdl_us'), 'us')} with PDL, {fmt(res.get('ours64_nopdl_us'), 'us')} without; "
            f"256^3 {fmt(res.get('ours256_pdl_us'), 'us')} / {fmt(res.get('ours256_nopdl_us'), 'us')}; "
            f"L2 load {fmt(res.get('l2_chase_ns'), 'ns')}, HBM load {fmt(res.get('hbm_chase_ns'), 'ns')}; "
            f"machine {m.get('host')} {m.get('uuid', '?')} serial {m.get('serial', '?')} bus {m.get('pci.bus_id', '?')} "
            f"driver {m.get('driver_version', '?')} persistence {m.get('persistence_mode', '?')}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="also write the figures here as JSON")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("gemm_small_state: no CUDA device here; run it on the GPU machine", file=sys.stderr)
        return 2
    res = probe()
    print(summary(res))
    for err in res.get("errors", []):
        print("  " + err)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
