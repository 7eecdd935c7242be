"""One kernel timed in two slots of a bench-gemm grid: an A/A, read by how the shape's rotated inputs sit in L2.

A grid times several candidates per shape, interleaved in shuffled round orders seeded per shape. Where a table runs
one kernel under two names (dispatch and dispatch_both on an entry that reads B as given; dispatch_bt and
dispatch_both on one that reads the copy; ours and dispatch on an entry of ours), the two times should agree within
the grid's noise. Session 52 found a few H100 shapes 8-10% apart in every grid, all of the class where one B layout's
rotated input sets fit in L2 and both layouts' do not: a replay that follows a reader of the same buffers starts warm.

    python scripts/gemm_aa_slots.py shapes GRID_CLASS [GRID_CLASS ...]   # the grid's shapes of those classes, 'M N K'
    python scripts/gemm_aa_slots.py read A/shapes.csv [B/shapes.csv ...] [--l2-mb 50]

`read` prints, per grid and L2 class, the A/A pairs' mean and largest |offset| and how many exceed 4%; given two or
more grids, the correlation of each pair's signed offsets between grids (near 0: noise; near 1: the same slot lucky
in every grid, a bias no number of such grids averages out).
"""
from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys

from cudaopt.gemm.bench import num_sets
from cudaopt.gemm.grid_choice import positive
from cudaopt.gemm.shapes import grid_shapes

Shape = tuple[int, int, int]
CLASSES = ("all fit", "one layout fits", "neither fits")


def l2_class(shape: Shape, l2_bytes: float = 50e6) -> str:
    """How a shape's rotated input sets (bench.num_sets of them; fp16 A, B, C, and B's transposed copy) sit in L2:
    "all fit" (both B layouts with A and C, within 80% of it), "one layout fits" (one B layout with A and C does, both
    do not), "neither fits"."""
    m, n, k = shape
    sets = num_sets(m, n, k)
    one = sets * 2 * (m * k + k * n + m * n)
    both = sets * 2 * (m * k + 2 * k * n + m * n)
    if both < 0.8 * l2_bytes:
        return "all fit"
    return "one layout fits" if one < l2_bytes else "neither fits"


def aa_pairs(row: dict) -> dict[str, float]:
    """The A/A pairs a grid row holds: name -> log(t_first / t_second) for two slots that ran one kernel."""
    def us(name: str) -> float:
        return positive(row, f"{name}_us")

    out = {}
    both = row.get("dispatch_both") or ""
    if both.startswith("nn:"):
        out["dispatch/dispatch_both"] = math.log(us("dispatch") / us("dispatch_both"))
    elif both.startswith("bt:"):
        out["dispatch_bt/dispatch_both"] = math.log(us("dispatch_bt") / us("dispatch_both"))
    if row.get("dispatch") and row.get("dispatch") == row.get("choice"):
        out["ours/dispatch"] = math.log(us("ours") / us("dispatch"))
    return {k: v for k, v in out.items() if math.isfinite(v)}


def read_grid(path: str) -> dict[Shape, dict[str, float]]:
    """A bench-gemm shapes.csv: shape -> its A/A pairs; ValueError where the file is not one."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if not {"m", "n", "k", "dispatch_us"} <= set(reader.fieldnames or []):
            raise ValueError(f"{path}: not a bench-gemm shapes.csv (no m, n, k, dispatch_us columns)")
        return {(int(r["m"]), int(r["n"]), int(r["k"])): aa_pairs(r) for r in reader}


def summarize(grid: dict[Shape, dict[str, float]], l2_bytes: float) -> dict[str, tuple[int, float, float, int]]:
    """Per L2 class: (pairs, mean |offset| %, largest |offset| %, pairs beyond 4%)."""
    by: dict[str, list[float]] = {c: [] for c in CLASSES}
    for shape, pairs in grid.items():
        by[l2_class(shape, l2_bytes)].extend(abs(v) for v in pairs.values())
    return {c: (len(v), 100 * statistics.fmean(v), 100 * max(v), sum(x > math.log(1.04) for x in v))
            for c, v in by.items() if v}


def correlation(a: dict[Shape, dict[str, float]], b: dict[Shape, dict[str, float]], l2_bytes: float
                ) -> dict[str, tuple[int, float]]:
    """Per L2 class: (pairs in both grids, Pearson correlation of their signed offsets); NaN with fewer than 3."""
    xs: dict[str, tuple[list[float], list[float]]] = {c: ([], []) for c in CLASSES}
    for shape in a.keys() & b.keys():
        for name in a[shape].keys() & b[shape].keys():
            x, y = xs[l2_class(shape, l2_bytes)]
            x.append(a[shape][name])
            y.append(b[shape][name])
    out = {}
    for c, (x, y) in xs.items():
        try:
            out[c] = (len(x), statistics.correlation(x, y) if len(x) >= 3 else math.nan)
        except statistics.StatisticsError:  # (a constant series)
            out[c] = (len(x), math.nan)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sh = sub.add_parser("shapes", help="the grid's shapes of the given L2 classes, one 'M N K' line each")
    sh.add_argument("classes", nargs="+", choices=CLASSES)
    sh.add_argument("--l2-mb", type=float, default=50.0)
    rd = sub.add_parser("read", help="the A/A pairs of one or more grids' shapes.csv, by L2 class")
    rd.add_argument("grids", nargs="+")
    rd.add_argument("--l2-mb", type=float, default=50.0, help="the card's L2 (H100 and H200: 50 MB)")
    args = ap.parse_args(argv)
    l2 = args.l2_mb * 1e6
    if args.cmd == "shapes":
        for s in grid_shapes():
            if l2_class(s, l2) in args.classes:
                print(*s)
        return 0
    try:
        grids = [read_grid(p) for p in args.grids]
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("| grid | L2 class | A/A pairs | mean abs offset | largest | beyond 4% |")
    print("|---|---|---|---|---|---|")
    for path, g in zip(args.grids, grids):
        for c, (n, mean, big, over) in summarize(g, l2).items():
            print(f"| {path} | {c} | {n} | {mean:.2f}% | {big:.1f}% | {over} |")
    for i in range(1, len(grids)):
        for c, (n, r) in correlation(grids[0], grids[i], l2).items():
            print(f"offsets of grid 1 and grid {i + 1}, {c}: {n} pairs in both, correlation {r:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
