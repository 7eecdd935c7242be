"""Shape lists for a config screen and its second screen (issue 6; gpu_check.sh gemm_screen_adopt).

    python scripts/gemm_screen_shapes.py grid --min-m 2048 --min-n 2048        # grid shapes, comma-separated
    python scripts/gemm_screen_shapes.py grid --max-mn 1048576 --min-k 1024    # the small long-K shapes (282)
    python scripts/gemm_screen_shapes.py grid --max-mn 4194304 --max-k 256     # the small short-K shapes (198)
    python scripts/gemm_screen_shapes.py candidates SCREEN.jsonl --margin 1.03  # shapes a screen read above the table

`grid`: the 1,000-shape grid filtered by the smallest M and N, the largest M x N, the smallest and largest K (and --exclude FILE: shapes to leave out, in the
comma-separated form this prints). `candidates`: the shapes of a `benchmarks/gemm_configs.py --out` screen where
some correct config (relative error below 1e-2) ran at least `margin` times faster than the table's choice: the
shapes a second screen re-times before `scripts/gemm_adopt.py --confirm` adopts any.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def grid(min_m: int, min_n: int, exclude: set[str], max_mn: int = 0, min_k: int = 0, max_k: int = 0) -> list[str]:
    """Grid shapes with M >= min_m, N >= min_n, min_k <= K (<= max_k if > 0) and (max_mn > 0) M x N <= max_mn,
    less `exclude`."""
    from cudaopt.gemm.shapes import grid_shapes

    return [s for m, n, k in grid_shapes() if m >= min_m and n >= min_n and k >= min_k and (max_k <= 0 or k <= max_k)
            and (max_mn <= 0 or m * n <= max_mn) and (s := f"{m}x{n}x{k}") not in exclude]


def candidates(rows: list[dict], margin: float) -> list[str]:
    from gemm_adopt import _ok  # adoption's own test of a screened config (this script's directory is on sys.path)

    out = []
    for r in rows:
        gains = [r["table_us"] / c["us"] for c in r["configs"].values() if _ok(c)]
        if gains and max(gains) >= margin:
            out.append(f"{r['m']}x{r['n']}x{r['k']}")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("grid", help="grid shapes with M >= --min-m, N >= --min-n, M x N <= --max-mn, K >= --min-k")
    g.add_argument("--min-m", type=int, default=0)
    g.add_argument("--min-n", type=int, default=0)
    g.add_argument("--max-mn", type=int, default=0, help="largest M x N (0: no bound)")
    g.add_argument("--min-k", type=int, default=0)
    g.add_argument("--max-k", type=int, default=0, help="largest K (0: no bound)")
    g.add_argument("--exclude", action="append", default=[], help="a file of comma-separated shapes to leave out")
    c = sub.add_parser("candidates", help="shapes a screen read at least --margin above the table")
    c.add_argument("screen", help="benchmarks/gemm_configs.py --out JSON lines")
    c.add_argument("--margin", type=float, default=1.03)
    args = ap.parse_args(argv)
    if args.cmd == "grid":
        exclude: set[str] = set()
        for f in args.exclude:
            try:
                exclude |= {s.strip() for s in Path(f).read_text().split(",") if s.strip()}
            except OSError as e:
                raise SystemExit(f"--exclude {f}: {e.strerror}; give a file of comma-separated MxNxK shapes") from None
        print(",".join(grid(args.min_m, args.min_n, exclude, args.max_mn, args.min_k, args.max_k)))
        return
    try:
        rows = [json.loads(line) for line in Path(args.screen).read_text().splitlines() if line.strip()]
    except OSError as e:
        raise SystemExit(f"{args.screen}: {e.strerror}; give the JSON lines of gemm_configs.py --out") from None
    except json.JSONDecodeError as e:
        raise SystemExit(f"{args.screen}: not JSON lines ({e.msg}, line {e.lineno})") from None
    print(",".join(candidates(rows, args.margin)))


if __name__ == "__main__":
    sys.exit(main())
