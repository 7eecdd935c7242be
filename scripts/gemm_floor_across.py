"""The 0.98x floor read across grids: the shapes under it in every grid given, not in one.

One grid's count under 0.98x moves by more than a table change can (session 48: 57 and 72 for two grids of one H100
table in one call), so a shape under in one grid may be that grid's noise. This reads bench-gemm's floor.csv of
several grids (of the same table, or tables that choose alike there) and lists the shapes under the floor in all of
them: by the ratio of medians, paired within rounds, and with the paired ratio's upper 95% bound under too (beyond
the shape's own noise), each with whether only cuBLASLt's TN layout (B pre-transposed) reaches it.

Given the grids' shapes.csv instead, it reads any timed candidate against any baseline the grid paired it with
(--who, --vs): session 51's question, hgemm handed B in both layouts (the seed's protocol) against cuBLASLt
autotuned max, is `--who dispatch_both`. A shape whose choice differs between the grids shows each grid's.

    python scripts/gemm_floor_across.py GRID_A/floor.csv GRID_B/floor.csv [--floor 0.98]
    python scripts/gemm_floor_across.py GRID_A/shapes.csv GRID_B/shapes.csv --who dispatch_both [--vs lt_auto_max]
"""
from __future__ import annotations

import argparse
import csv
import math
import sys

from cudaopt.gemm.grid_choice import mixed_protocols, positive

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


def read_shapes(path: str, who: str = "dispatch", vs: str = "lt_auto_max") -> dict[Shape, dict]:
    """A bench-gemm shapes.csv read as floor rows of `who` against `vs`, every shape where both were timed (ratio:
    t_vs / t_who of the medians; paired_ratio / paired_hi95: the grid's within-round figures, empty where it did not
    pair them; tn_only, for B as given against a "*_max" baseline only: bench-gemm's floor.csv rule, stats'
    dispatch_floor). ValueError naming what is missing."""
    from cudaopt.gemm.stats import NN_READABLE, dispatch_floor

    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        cols = set(reader.fieldnames or [])
        need = [f"{who}_us", f"{vs}_us", f"paired_{who}_vs_{vs}"]
        missing = [c for c in ("m", "n", "k", *need) if c not in cols]
        if missing:
            raise ValueError(f"{path}: this grid did not pair {who} with {vs} (missing columns {', '.join(missing)}; "
                             "a B^T grid pairs dispatch_both with lt_auto_max, cublas_max and torch)")
        rows = {(int(r["m"]), int(r["n"]), int(r["k"])): r for r in reader}
    names = {who, vs, *NN_READABLE, vs[: -len("_max")] + "_tn"}
    times = {c: {s: t for s, r in rows.items() if not math.isnan(t := positive(r, f"{c}_us"))} for c in names}
    timed = times[who].keys() & times[vs].keys()
    tn_only = {}
    if who == "dispatch" and vs.endswith("_max"):  # (every timed shape: a floor of infinity keeps them all)
        tn_only = {f.shape: "1" if f.tn_only else "0" for f in dispatch_floor(times, vs, floor=math.inf)}
    return {s: {"dispatch": rows[s].get(who) or who, "ratio": f"{times[vs][s] / times[who][s]:.4f}",
                "tn_only": tn_only.get(s, ""), "paired_ratio": rows[s].get(f"paired_{who}_vs_{vs}", ""),
                "paired_hi95": rows[s].get(f"paired_hi95_{who}_vs_{vs}", "")} for s in timed}


def is_shapes_csv(path: str) -> bool:
    """A bench-gemm shapes.csv (every shape timed), not a floor.csv (the shapes under the floor), by its header."""
    with open(path, newline="") as f:
        return "dispatch_us" in next(csv.reader(f), [])


def read_any(path: str, who: str = "dispatch", vs: str = "lt_auto_max") -> dict[Shape, dict]:
    """A floor.csv (B as given against cuBLASLt autotuned max only) or a shapes.csv, told apart by their columns."""
    if is_shapes_csv(path):
        return read_shapes(path, who, vs)
    if (who, vs) != ("dispatch", "lt_auto_max"):
        raise ValueError(f"{path}: a floor.csv holds dispatch against lt_auto_max only; give the grid's shapes.csv "
                         f"to read {who} against {vs}")
    return read_floor(path)


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
    ap.add_argument("floors", nargs="+", help="bench-gemm floor.csv or shapes.csv files, one per grid")
    ap.add_argument("--floor", type=float, default=0.98)
    ap.add_argument("--who", default="dispatch", help="the candidate read (shapes.csv): dispatch (B as given), "
                    "dispatch_both (handed both layouts, the seed's protocol), dispatch_bt (the B^T route)")
    ap.add_argument("--vs", default="lt_auto_max", help="the baseline (shapes.csv): lt_auto_max, cublas_max, torch, "
                    "lt_auto_tn (for dispatch_bt), ...")
    args = ap.parse_args(argv)
    if len(args.floors) < 2:
        print("error: give two or more grids' floor.csv (one grid is what this reads past)", file=sys.stderr)
        return 2
    try:
        kinds = [is_shapes_csv(p) for p in args.floors]
        floors = [read_any(p, args.who, args.vs) for p in args.floors]
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if mixed := mixed_protocols(args.floors):
        print(mixed, file=sys.stderr)
    got = across(floors, args.floor)
    last = floors[-1]
    shapes_csv = all(kinds)
    # (a floor.csv lists the shapes under; a shapes.csv every shape timed, so "alone" counts its paired ones under)
    alone = [sum(positive(r, "paired_ratio") < args.floor for r in f.values()) if kind else len(f)
             for f, kind in zip(floors, kinds)]
    vs = "cuBLASLt autotuned max" if args.vs == "lt_auto_max" else args.vs
    who = "" if args.who == "dispatch" else f"{args.who} "
    both = f", {len(set.intersection(*(set(f) for f in floors)))} shapes timed in all" if shapes_csv else ""
    print(f"{who}under {args.floor}x of {vs} in every one of {len(floors)} grids: "
          f"{len(got['ratio'])} by medians, {len(got['paired'])} paired, {len(got['hi95'])} beyond noise "
          f"(grids alone: {', '.join(map(str, alone))}{' paired' if shapes_csv else ''}{both})")
    print(f"| shape | {args.who} (last grid) | paired per grid | TN only | beyond noise in all |")
    print("|---|---|---|---|---|")
    for s in got["paired"]:
        ratios = " / ".join(f"{positive(f[s], 'paired_ratio'):.3f}" for f in floors)
        chosen = list(dict.fromkeys(f[s]["dispatch"] for f in floors))
        choice = chosen[-1] if len(chosen) == 1 else " / ".join(f[s]["dispatch"] for f in floors)
        tn_only = {"1": "True", "0": "False"}.get(last[s]["tn_only"], "-")
        print(f"| {'x'.join(map(str, s))} | {choice} | {ratios} | {tn_only} | {s in got['hi95']} |")
    tn = sum(last[s]["tn_only"] == "1" for s in got["paired"])
    print(f"paired in every grid: {len(got['paired'])}"
          + (f", of them TN-only (in the last grid) {tn}" if any(last[s]["tn_only"] for s in got["paired"]) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
