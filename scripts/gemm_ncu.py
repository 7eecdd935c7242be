"""Nsight Compute, side by side: our HGEMM configs on one shape (issue 6: why the 2x1 cluster configs run
1.7-2.6x slower than their non-cluster twins; why a 128 x 256 split-K item runs below tensor-core rate).

    python scripts/gemm_ncu.py --shape 16384x12288x1024 [--configs 18 23 21 24] [--top 8]
    python scripts/gemm_ncu.py --shape 1024x1024x8192 --configs 22 25:4 21:2 torch

A config is an id, or id:splits for split-K (the call's reduce kernel is profiled and printed too), or
`torch`: torch.matmul's cuBLAS kernel (nvjet / cutlass / gemm by name), the yardstick beside ours, or `lt:ALGO`:
algorithm ALGO of cuBLASLt's NN heuristic list for the shape (the index the fallback pass records as
`lt_fallback.best_algo`: cuBLASLt autotuned, which torch.matmul's heuristic kernel is not; session 25).
`--clock-control none` profiles at the clocks the card runs (Nsight locks them to base by default), and
`--calls N` profiles the last of N back-to-back calls.
For each, `ncu` profiles the last of three calls of a child of this script (our kernels only, by name)
with the SpeedOfLight, Occupancy, LaunchStats, WarpStateStats, ComputeWorkloadAnalysis and
MemoryWorkloadAnalysis sections, and the table prints duration, SM / memory / L2 / DRAM throughput, the
tensor pipe's busiest utilisation, the L2 hit rate, occupancy and the largest stall reasons (warps
stalled per issued instruction). A metric this ncu does not report prints empty.
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "ComputeWorkloadAnalysis",
            "MemoryWorkloadAnalysis")
SHOWN = {  # raw metric -> column
    "gpu__time_duration.sum": "time us",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SM %",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "mem %",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": "L2 %",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM %",
    "lts__t_sector_hit_rate.pct": "L2 hit %",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy %",
    "launch__grid_size": "grid",
    "launch__cluster_dim_x": "cluster",
    "smsp__average_warp_latency_per_inst_issued.ratio": "cycles/issue",
    "dram__bytes_read.sum": "DRAM read B",
    "lts__t_bytes.sum": "L2 B",
    "sm__cycles_elapsed.avg.per_second": "SM Hz",
    "lts__t_sectors_op_read.sum": "L2 read sectors",
    "lts__t_sectors_op_write.sum": "L2 write sectors",
    "lts__t_sectors_srcunit_tex_op_read.sum": "L2 read sectors from SMs",
}
# Collected beside the sections (which do not all carry them), printed in base units (bytes, Hz).
EXTRA_METRICS = ("dram__bytes_read.sum,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second,"
                 # L2 sectors (32 B) by operation (session 20: where cuBLAS's kernel saves a third of our L2 bytes)
                 "lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum")
STALL = ("smsp__average_warps_issue_stalled_", "_per_issue_active.ratio")
# The tensor pipe's utilisation: the metric's name differs between ncu versions and pipe families
# (hmma, gmma, ...), so the busiest column of this form is shown.
TENSOR = ("sm__pipe_tensor", "pct_of_peak_sustained_active")
PCT_ELAPSED = ".pct_of_peak_sustained_elapsed"  # --breakdown: every unit's throughput as a percent of its peak
# Our GEMM and split-K reduce kernels by function name (not torch's fills or copies).
OUR_KERNELS = "regex:(hgemm_|splitk_reduce)"  # unanchored: the kernels sit in an anonymous namespace
TORCH_KERNELS = "regex:(nvjet|gemm|cutlass|sm90_xmma)"  # cuBLAS's GEMM kernel under torch.matmul
CALLS = 3  # calls of the child; the last one is profiled


TORCH, LT = -1, -2  # parse_config's config for torch.matmul and for a cuBLASLt algorithm (its index in `splits`)


def parse_config(text: str) -> tuple[int, int]:
    """"ID" or "ID:SPLITS" -> (config id, splits); "torch" -> (TORCH, 1); "lt:ALGO" -> (LT, ALGO)."""
    if text == "torch":
        return TORCH, 1
    if text.startswith("lt:"):
        try:
            algo = int(text[3:])
        except ValueError:
            raise SystemExit(f"--configs wants lt:ALGO with an algorithm index, got {text!r}") from None
        if algo < 0:
            raise SystemExit(f"--configs {text!r}: the algorithm index must be at least 0")
        return LT, algo
    cfg, _, splits = text.partition(":")
    try:
        out = int(cfg), int(splits or 1)
    except ValueError:
        raise SystemExit(f"--configs wants ID or ID:SPLITS, got {text!r}") from None
    if out[1] < 1:
        raise SystemExit(f"--configs {text!r}: splits must be at least 1")
    return out


def child(shape: tuple[int, int, int], config: int, splits: int, launches: int) -> None:
    import torch

    from cudaopt.gemm import _lib

    m, n, k = shape
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    if config == LT:  # algorithm `splits` of cuBLASLt's NN list, with the benchmark's workspace
        from cudaopt.gemm.bench import LT_WORKSPACE

        plan = _lib.LtPlan(m, n, k, 0, LT_WORKSPACE)
        if splits >= plan.count:
            raise SystemExit(f"lt:{splits}: cuBLASLt lists {plan.count} algorithms for {m}x{n}x{k} (0..{plan.count - 1})")
        ws = torch.empty(LT_WORKSPACE, device="cuda", dtype=torch.uint8)
        stream = torch.cuda.current_stream().cuda_stream
        for _ in range(launches):
            plan.run(splits, a.data_ptr(), b.data_ptr(), c.data_ptr(), ws.data_ptr(), LT_WORKSPACE, stream)
        torch.cuda.synchronize()
        plan.close()
        return
    if config < 0:  # torch.matmul
        for _ in range(launches):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        return
    ws = _lib.new_workspace(m, n, splits)
    ws_ptr, ws_bytes = (ws.data_ptr(), ws.numel() * ws.element_size()) if ws is not None else (0, 0)
    stream = torch.cuda.current_stream().cuda_stream
    for _ in range(launches):
        _lib.launch_ours(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, config, splits, ws_ptr, ws_bytes, stream)
    torch.cuda.synchronize()


def known_metrics(ncu: str, wanted: list[str]) -> list[str]:
    """The names of `wanted` whose base name (before the rollup suffix) `ncu --query-metrics` lists: an
    unknown name would make ncu refuse the whole profile."""
    if not wanted:
        return []
    listed = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
    bases = {ln.split()[0] for ln in listed.splitlines() if ln.strip()}
    known = [m for m in wanted if m.split(".")[0] in bases]
    for m in wanted:
        if m not in known:
            print(f"(metric {m} not listed by this ncu: left out)")
    return known


def rows_of(csv_text: str) -> list[dict]:
    """The kernel rows of `ncu --csv --page raw` (a header, a units row, then a row per profiled launch)."""
    lines = [ln for ln in csv_text.splitlines() if ln.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    return [r for r in rows if (r.get("ID") or "").strip().isdigit()]


def matching(row: dict, form: tuple[str, str]) -> list[tuple[float, str]]:
    """(value, the name between prefix and suffix) of every readable column named prefix...suffix."""
    prefix, suffix = form
    out = []
    for key, value in row.items():
        if key and key.startswith(prefix) and key.endswith(suffix):
            try:
                out.append((float(value.replace(",", "")), key[len(prefix):len(key) - len(suffix)]))
            except ValueError:
                continue
    return out


def summary(row: dict, top: int) -> dict:
    out = {col: row.get(metric, "") for metric, col in SHOWN.items()}
    tensor = matching(row, TENSOR)
    out["tensor %"] = f"{max(tensor)[0]:.1f}" if tensor else ""
    try:
        out["time us"] = f"{float(out['time us'].replace(',', '')) / 1e3:.1f}"
    except ValueError:
        pass
    stalls = matching(row, STALL)
    out["stalls"] = ", ".join(f"{name} {v:.2f}" for v, name in sorted(stalls, reverse=True)[:top])
    return out


def busiest(row: dict, n: int) -> str:
    """--breakdown: the n largest percent-of-peak (elapsed) columns of a kernel row, largest first."""
    return ", ".join(f"{name} {v:.1f}" for v, name in sorted(matching(row, ("", PCT_ELAPSED)), reverse=True)[:n])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="16384x12288x1024")
    ap.add_argument("--configs", nargs="+", default=["18", "23", "21", "24"],
                    help="ID or ID:SPLITS (KernelConfig.id, the table's 'config'; not a wgmma config's index), "
                         "lt:ALGO, or torch")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--metrics", default="",
                    help="extra raw metrics (comma-separated, e.g. lts__t_sectors_srcunit_tex_op_read.sum), printed "
                         "in base units on a third line; names this ncu does not list are dropped, with a note")
    ap.add_argument("--clock-control", choices=("base", "none"), default="base",
                    help="ncu's clock control: base (locked, ncu's default) or none (the card's own clocks)")
    ap.add_argument("--calls", type=int, default=CALLS, help="back-to-back calls in the child; the last is profiled")
    ap.add_argument("--breakdown", type=int, default=0, metavar="N",
                    help="also print the N busiest units: the largest raw *.pct_of_peak_sustained_elapsed columns "
                         "(the SpeedOfLight section's throughput breakdowns)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)  # "id" or "id:splits"
    args = ap.parse_args()
    if args.calls < 1:
        sys.exit("--calls wants at least 1")
    shape = tuple(int(x) for x in args.shape.lower().split("x"))
    if len(shape) != 3:
        sys.exit(f"--shape wants MxNxK, got {args.shape!r}")
    if args.child is not None:
        child(shape, *parse_config(args.child), args.calls)
        return
    from cudaopt.gemm import build
    from cudaopt.gemm.configs import KERNEL_CONFIGS

    picks = [parse_config(text) for text in args.configs]  # bad input stops here, before the build
    build.build(with_blas=any(c == LT for c, _ in picks))  # here, not in the child under ncu
    extra = known_metrics(args.ncu, [m.strip() for m in args.metrics.split(",") if m.strip()])
    for text, (config, splits) in zip(args.configs, picks):
        # split-K: the GEMM kernel, then the reduce kernel; cluster split-K sums in the cluster, one kernel
        per_call = 2 if config >= 0 and splits > 1 and not KERNEL_CONFIGS[config].csplit else 1
        names = OUR_KERNELS if config >= 0 else TORCH_KERNELS
        cmd = [args.ncu, "--clock-control", args.clock_control, "--kernel-name", names,
               "--launch-skip", str(per_call * (args.calls - 1)),
               "--launch-count", str(per_call), "--csv", "--page", "raw", "--print-units", "base",
               "--metrics", ",".join([EXTRA_METRICS, *extra]),
               *[x for s in SECTIONS for x in ("--section", s)],
               sys.executable, __file__, "--shape", args.shape, "--calls", str(args.calls), "--child", text]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        rows = rows_of(r.stdout)
        label = ("torch" if config == TORCH else f"cuBLASLt algo {splits}" if config == LT
                 else f"{KERNEL_CONFIGS[config].label}{f'_splitk{splits}' if splits > 1 else ''} [id {config}]")
        if r.returncode != 0 or not rows:
            tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
            print(f"{label}: ncu exit {r.returncode}, {len(rows)} kernel rows: {' | '.join(tail)}")
            continue
        for i, row in enumerate(rows[-per_call:]):
            s = summary(row, args.top)
            what = label if i == 0 else f"{label} (reduce)"
            if config < 0:
                what += f" [{(row.get('Kernel Name') or '?')[:60]}]"
            print(f"{what} @ {args.shape}: " + ", ".join(f"{k} {v}" for k, v in s.items() if k != "stalls"))
            print(f"   stalls (warps per issue): {s['stalls']}")
            if extra:
                print("   " + ", ".join(f"{m} {row.get(m, '')}" for m in extra))
            if args.breakdown:
                print("   busiest: " + busiest(row, args.breakdown))


if __name__ == "__main__":
    main()
