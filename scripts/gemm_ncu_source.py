"""Nsight Compute's per-instruction stall samples for one HGEMM config (or torch's cuBLAS kernel) on one
shape: where in the SASS the warps wait, and on what (issue 6, session 16: why the 2x1 cluster kernels
lose 12 points of tensor-pipe time to their twins).

    python scripts/gemm_ncu_source.py --shape 2048x1024x8192 --configs 40 27 torch [--save DIR] [--top 12]
    python scripts/gemm_ncu_source.py --csv-in docs/data/hgemm_session16/ncu_source/src_40.csv.gz

Each config runs as gemm_ncu.py's child (three calls, the last profiled) under `ncu --section
SourceCounters --page source --csv --print-source sass`; the table lists the SASS lines with the most
stall samples, their share of all samples, and their two largest stall reasons. Warps that only wait for
the kernel's end (an idle ping-pong consumer at the final cluster barrier, a producer's sleep) collect
samples too: read the lines, not only the totals.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse_source_csv(text: str) -> tuple[str, list[str], list[list[str]]]:
    """(kernel name, header, SASS rows) of `ncu --page source --csv` output (lines not starting with a
    quote, ==PROF== and the like, are skipped; the first quoted row names the kernel)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if len(lines) < 2:
        raise ValueError("no source table in the ncu output (was --page source --csv given?)")
    first = next(csv.reader([lines[0]]))
    kernel = first[1] if len(first) > 1 else ""
    rows = list(csv.reader(io.StringIO("\n".join(lines[1:]))))
    return kernel, rows[0], rows[1:]


def top_stalls(header: list[str], rows: list[list[str]], top: int) -> tuple[float, list[tuple[float, str, str]]]:
    """(total samples, [(share %, SASS text, two largest stall reasons)] for the `top` lines with most samples)."""
    i_all = header.index("Warp Stall Sampling (All Samples)")
    i_src = header.index("Source")
    stall_cols = [i for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]

    def num(v: str) -> float:
        try:
            return float(v.replace(",", ""))
        except ValueError:
            return 0.0

    total = sum(num(r[i_all]) for r in rows)
    out = []
    for r in sorted(rows, key=lambda r: -num(r[i_all]))[:top]:
        reasons = sorted(((num(r[i]), header[i][len("stall_"):]) for i in stall_cols), reverse=True)[:2]
        out.append((100 * num(r[i_all]) / total if total else 0.0, r[i_src].strip(),
                    ", ".join(f"{name} {v:.0f}" for v, name in reasons if v > 0)))
    return total, out


def report(text: str, label: str, top: int) -> None:
    kernel, header, rows = parse_source_csv(text)
    total, lines = top_stalls(header, rows, top)
    print(f"== {label}: {kernel[:90]} ({len(rows)} SASS lines, {total:.0f} samples)")
    for share, sass, reasons in lines:
        print(f"{share:5.1f}%  {sass[:72]:72s} {reasons}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="2048x1024x8192")
    ap.add_argument("--configs", nargs="+", default=["40", "27", "torch"], help="ID, ID:SPLITS or torch")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--save", default=None, help="also write each config's raw CSV (gzip) here")
    ap.add_argument("--csv-in", default=None, help="report on a saved CSV (.csv or .csv.gz) instead of profiling")
    ap.add_argument("--ncu", default="ncu")
    args = ap.parse_args()
    if args.csv_in:
        path = Path(args.csv_in)
        if not path.is_file():
            sys.exit(f"--csv-in {path}: no such file")
        text = gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()
        report(text, path.name, args.top)
        return
    from gemm_ncu import TORCH_KERNELS  # (this script's directory is on sys.path when it runs)

    for cfg in args.configs:
        # our GEMM kernel only (a split-K call's reduce kernel is not named hgemm_), or cuBLAS's
        names = TORCH_KERNELS if cfg == "torch" else "regex:hgemm_"
        cmd = [args.ncu, "--kernel-name", names, "--launch-skip", "2", "--launch-count", "1",
               "--section", "SourceCounters", "--page", "source", "--csv", "--print-source", "sass",
               sys.executable, str(HERE / "gemm_ncu.py"), "--shape", args.shape, "--child", cfg]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            with gzip.open(Path(args.save) / f"src_{cfg.replace(':', '_')}.csv.gz", "wt") as f:
                f.write(r.stdout)
        try:
            report(r.stdout, f"{cfg} @ {args.shape}", args.top)
        except ValueError as e:
            tail = (r.stderr or r.stdout).strip().splitlines()[-2:]
            print(f"{cfg}: ncu exit {r.returncode}: {e} | {' | '.join(tail)}")


if __name__ == "__main__":
    main()
