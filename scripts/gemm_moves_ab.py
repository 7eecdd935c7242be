"""A candidate table's moves judged cheaply: only the shapes whose entry it changes, old and new table alternately.

`cudaopt gemm-table-from-grids` proposes a table from grids it then reads optimistically; a whole fresh grid is the
judgement of record (~190 s on an H100). The shapes it did not move time as before, so their reading is the last
grid's: this script times the moved ones only, with bench-gemm's offline GPU timing (every baseline, both checks),
the old table then the new one, `--repeats` times, and prints per shape the dispatcher's time under each table
(median over repeats), their ratio and the new choice against cuBLASLt autotuned (NN alone and max).

    python scripts/gemm_moves_ab.py --old src/cudaopt/gemm/tuned_h100.json --new cand.json --out /tmp/moves
    python scripts/gemm_moves_ab.py --old A --new B --out DIR --report-only   # the table again from DIR (no GPU)
    python scripts/gemm_moves_ab.py --bt ...  # also hgemm's B^T route (CUDAOPT_GEMM_BENCH_BT=1), against cuBLASLt TN

With --bt a second table reads the B^T route (bench-gemm's dispatch_bt) against cuBLASLt autotuned TN and torch.matmul
on the same B^T: a move of bt_lt_algo changes only that route.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

from cudaopt.gemm.grid_choice import GridError, load_grid, table_data

Shape = tuple[int, int, int]


def moved_shapes(old: dict, new: dict) -> list[Shape]:
    """Shapes whose entry differs between two tables (present in both), in the old table's order."""
    key = lambda e: (int(e["m"]), int(e["n"]), int(e["k"]))  # noqa: E731
    new_by = {key(e): e for e in new.get("entries", [])}
    return [key(e) for e in old.get("entries", []) if key(e) in new_by and new_by[key(e)] != e]


def _us(r: dict, col: str) -> float:
    try:
        return float(r[col])
    except (KeyError, TypeError, ValueError):
        return math.nan


# What each report reads: the route's label column and time, and two baselines (name, time column).
ROUTES = {"nn": ("dispatch", "dispatch_us", (("lt_nn", "lt_auto_nn_us"), ("lt_max", "lt_auto_max_us"))),
          "bt": ("dispatch_bt", "dispatch_bt_us", (("lt_tn", "lt_auto_tn_us"), ("torch_bt", "torch_bt_us")))}
REF_NAMES = {"lt_nn": "cuBLASLt autotuned NN", "lt_max": "cuBLASLt autotuned max", "lt_tn": "cuBLASLt autotuned TN",
             "torch_bt": "torch.matmul on B^T"}


def summarize(out: Path, repeats: int, route: str = "nn") -> tuple[list[dict], dict]:
    """Per moved shape: each table's dispatch label and median dispatch time over the repeats, old / new, and the
    new dispatch against cuBLASLt autotuned NN and max (route "bt": hgemm's B^T route against cuBLASLt autotuned TN
    and torch.matmul on B^T); then the geomean and the counts under 0.98x."""
    label_col, us_col, refs = ROUTES[route]
    runs = {side: [load_grid(out / f"{side}_{i}" / "shapes.csv") for i in range(repeats)
                   if (out / f"{side}_{i}" / "shapes.csv").is_file()] for side in ("old", "new")}
    if not runs["old"] or not runs["new"]:
        raise FileNotFoundError(f"{out}: no old_*/shapes.csv or new_*/shapes.csv (run without --report-only first)")
    per: list[dict] = []
    for shape in runs["new"][0]:
        olds = [g[shape] for g in runs["old"] if shape in g]
        news = [g[shape] for g in runs["new"] if shape in g]
        if not olds or not news:
            continue
        med = lambda rs, col: statistics.median(_us(r, col) for r in rs)  # noqa: E731
        old_us, new_us = med(olds, us_col), med(news, us_col)
        if route == "bt" and not (old_us > 0 and new_us > 0):
            continue  # (a run without the B^T columns)
        p = {"shape": "x".join(map(str, shape)), "old": olds[0].get(label_col, ""), "new": news[0].get(label_col, ""),
             "old_us": old_us, "new_us": new_us, "old_over_new": old_us / new_us,
             "correct": all(r.get("correct") == "True" for r in olds + news)}
        for name, col in refs:
            p[f"old_vs_{name}"], p[f"new_vs_{name}"] = med(olds, col) / old_us, med(news, col) / new_us
        per.append(p)
    ok = [p["old_over_new"] for p in per if p["old_over_new"] > 0 and not math.isnan(p["old_over_new"])]
    agg = {"shapes": len(per), "geomean_old_over_new": math.exp(sum(map(math.log, ok)) / len(ok)) if ok else math.nan,
           "new_faster": sum(x > 1 for x in ok), "all_correct": all(p["correct"] for p in per), "route": route}
    for side in ("old", "new"):
        for name, _ in refs:
            agg[f"{side}_under_098_{name}"] = sum(p[f"{side}_vs_{name}"] < 0.98 for p in per)
    return per, agg


def print_report(per: list[dict], agg: dict) -> None:
    (a, _), (b, _) = ROUTES[agg.get("route", "nn")][2]
    what = "hgemm's B^T route" if agg.get("route") == "bt" else "hgemm"
    print(f"{what}:")
    print(f"| shape | old | new | old us | new us | old/new | new vs {a} | new vs {b} | correct |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in per:
        print(f"| {p['shape']} | {p['old']} | {p['new']} | {p['old_us']:.2f} | {p['new_us']:.2f} | "
              f"{p['old_over_new']:.3f} | {p[f'new_vs_{a}']:.3f} | {p[f'new_vs_{b}']:.3f} | {p['correct']} |")
    print(f"moved shapes {agg['shapes']} ({what}): old/new geomean {agg['geomean_old_over_new']:.4f} (new faster on "
          f"{agg['new_faster']}); under 0.98x of {REF_NAMES[a]} {agg[f'old_under_098_{a}']} -> "
          f"{agg[f'new_under_098_{a}']}, of {REF_NAMES[b]} {agg[f'old_under_098_{b}']} -> {agg[f'new_under_098_{b}']}; "
          f"all correct: {agg['all_correct']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="the table in use (.json or .json.gz)")
    ap.add_argument("--new", type=Path, required=True, help="the candidate (.json or .json.gz)")
    ap.add_argument("--out", type=Path, required=True, help="folder for each run's bench-gemm output")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2, help="old then new, this many times")
    ap.add_argument("--report-only", action="store_true", help="the table from --out's runs, no GPU")
    ap.add_argument("--bt", action="store_true",
                    help="also time and report hgemm's B^T route (bench-gemm with CUDAOPT_GEMM_BENCH_BT=1)")
    args = ap.parse_args(argv)
    try:
        old, new = table_data(args.old), table_data(args.new)
    except (OSError, ValueError) as e:
        print(f"error: cannot read a table: {e}", file=sys.stderr)
        return 2
    shapes = moved_shapes(old, new)
    if not shapes:
        print("error: the tables choose alike on every shape they share: nothing to time", file=sys.stderr)
        return 2
    if args.repeats < 1 or args.rounds < 1:
        print("error: --repeats and --rounds take at least 1", file=sys.stderr)
        return 2
    if not args.report_only:
        from cudaopt.gemm.bench import BT_BENCH_ENV
        from cudaopt.gemm.cli import bench_gemm

        if args.bt:
            os.environ[BT_BENCH_ENV] = "1"

        spec = ",".join("x".join(map(str, s)) for s in shapes)
        plain = {}
        args.out.mkdir(parents=True, exist_ok=True)
        for side, data in (("old", old), ("new", new)):  # bench-gemm reads a plain .json
            plain[side] = args.out / f"{side}_table.json"
            plain[side].write_text(json.dumps(data))
        for i in range(args.repeats):
            for side in ("old", "new"):
                print(f"== {side} table, repeat {i + 1} of {args.repeats}: {len(shapes)} moved shapes", flush=True)
                bench_gemm(shapes=spec, out_dir=args.out / f"{side}_{i}", table=str(plain[side]), rounds=args.rounds,
                           resume=False)
    for route in ("nn", "bt") if args.bt else ("nn",):
        try:
            per, agg = summarize(args.out, args.repeats, route)
        except (FileNotFoundError, GridError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if route == "bt" and not per:
            print("error: --bt: the runs have no B^T columns (time them with --bt)", file=sys.stderr)
            return 2
        print_report(per, agg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
