"""The 0.98x floor read across grids: the shapes under it in every grid given, not in one.

One grid's count under 0.98x moves by more than a table change can (session 48: 57 and 72 for two grids of one H100
table in one call), so a shape under in one grid may be that grid's noise. This reads bench-gemm's floor.csv of
several grids (of the same table, or tables that choose alike there) and lists the shapes under the floor in all of
them: by the ratio of medians, paired within rounds, and with the paired ratio's upper 95% bound under too (beyond
the shape's own noise), each with whether only cuBLASLt's TN layout (B pre-transposed) reaches it.

    python scripts/gemm_floor_across.py GRID_A/floor.csv GRID_B/floor.csv [--floor 0.98]
"""
from __future__ import annotations

import argparse
import csv
import sys

from cudaopt.gemm.grid_choice import positive

Shape = tuple[int, int, int]
NEEDED = ("m", "n", "k", "dispatch", "ratio", "tn_only", "paired_ratio", "paired_hi95")


def read_floor(path: str) -> dict[Shape, dict]:
    """A floor.csv: shape -> its row; ValueError naming what is missing."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: not a bench-gemm floor.csv (missing columns {', '.join(missing)})")
        return {(int(r["m"]), int(r["n"]), int(r["k"])): r for r in reader}


def across(floors: list[dict[Shape, dict]], floor: float = 0.98) -> dict[str, list[Shape]]:
    """The shapes under `floor` in every grid: "ratio" (medians), "paired" (within rounds), "hi95" (the paired
    ratio's upper bound under too); a shape missing from a grid's floor.csv was not under there."""
    out = {}
    for name, key in (("ratio", "ratio"), ("paired", "paired_ratio"), ("hi95", "paired_hi95")):
        sets = [{s for s, r in f.items() if positive(r, key) < floor} for f in floors]
        out[name] = sorted(set.intersection(*sets)) if sets else []
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("floors", nargs="+", help="bench-gemm floor.csv files, one per grid")
    ap.add_argument("--floor", type=float, default=0.98)
    args = ap.parse_args(argv)
    if len(args.floors) < 2:
        print("error: give two or more grids' floor.csv (one grid is what this reads past)", file=sys.stderr)
        return 2
    try:
        floors = [read_floor(p) for p in args.floors]
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    got = across(floors, args.floor)
    last = floors[-1]
    print(f"under {args.floor}x of cuBLASLt autotuned max in every one of {len(floors)} grids: "
          f"{len(got['ratio'])} by medians, {len(got['paired'])} paired, {len(got['hi95'])} beyond noise "
          f"(grids alone: {', '.join(str(len(f)) for f in floors)})")
    print("| shape | dispatch (last grid) | paired per grid | TN only | beyond noise in all |")
    print("|---|---|---|---|---|")
    for s in got["paired"]:
        ratios = " / ".join(f"{positive(f[s], 'paired_ratio'):.3f}" for f in floors)
        print(f"| {'x'.join(map(str, s))} | {last[s]['dispatch']} | {ratios} | {last[s]['tn_only'] == '1'} | "
              f"{s in got['hi95']} |")
    tn = sum(last[s]["tn_only"] == "1" for s in got["paired"])
    print(f"paired in every grid: {len(got['paired'])}, of them TN-only (in the last grid) {tn}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
