"""A candidate table's moves judged cheaply: only the shapes whose entry it changes, old and new table alternately.

Whole grids choose moves (gemm-table-from-grids, gemm-table-for-gpu) but cannot judge them: between two grids of one
table the count under 0.98x moved by 15 on an H100 (session 48), more than a 21-shape change can show. Timing the
moved shapes alone, the old table then the new one, repeatedly, in one process, reads each move against its own
baseline at a few seconds' cost. `scripts/gemm_moves_ab.py` is the command; `gemm-table-for-gpu` keeps only the
moves this reads as not slower (`verify_moves`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
from collections.abc import Callable
from pathlib import Path

from cudaopt.gemm.grid_choice import load_grid, positive

Shape = tuple[int, int, int]

# What each report reads: the route's label column and time, and two baselines (name, time column).
ROUTES = {"nn": ("dispatch", "dispatch_us", (("lt_nn", "lt_auto_nn_us"), ("lt_max", "lt_auto_max_us"))),
          "bt": ("dispatch_bt", "dispatch_bt_us", (("lt_tn", "lt_auto_tn_us"), ("torch_bt", "torch_bt_us"))),
          # (session 49) hgemm handed B in both layouts, against the baselines that may read either
          "both": ("dispatch_both", "dispatch_both_us", (("lt_max", "lt_auto_max_us"), ("torch", "torch_us")))}
REF_NAMES = {"lt_nn": "cuBLASLt autotuned NN", "lt_max": "cuBLASLt autotuned max", "lt_tn": "cuBLASLt autotuned TN",
             "torch_bt": "torch.matmul on B^T", "torch": "torch.matmul"}
BT_KEYS = ("bt_lt_algo",)  # the entry fields only the B^T route reads
BOTH_KEYS = ("both_layouts",)  # (session 49) the field only a caller handing both layouts reads
RECORD_KEYS = ("grid_choice", "bt_grid_choice", "both_grid_choice")  # what the grids read: no route reads them


def _key(e: dict) -> Shape:
    return int(e["m"]), int(e["n"]), int(e["k"])


def moved_shapes(old: dict, new: dict) -> list[Shape]:
    """Shapes whose entry differs between two tables (present in both), in the old table's order."""
    new_by = {_key(e): e for e in new.get("entries", [])}
    return [_key(e) for e in old.get("entries", []) if _key(e) in new_by and new_by[_key(e)] != e]


def moved_routes(old_entry: dict, new_entry: dict) -> set[str]:
    """Which routes a move changes: "bt" where a B^T-only field differs, "both" where the layout read when handed both
    does, "nn" where any other does."""
    fields = (set(old_entry) | set(new_entry)) - set(RECORD_KEYS)
    differ = {f for f in fields if old_entry.get(f) != new_entry.get(f)}
    return (({"bt"} if differ & set(BT_KEYS) else set()) | ({"both"} if differ & set(BOTH_KEYS) else set())
            | ({"nn"} if differ - set(BT_KEYS) - set(BOTH_KEYS) else set()))


def summarize(out: Path, repeats: int, route: str = "nn") -> tuple[list[dict], dict]:
    """Per moved shape: each table's dispatch label and median dispatch time over the repeats, old / new, and the
    new dispatch against cuBLASLt autotuned NN and max (route "bt": hgemm's B^T route against cuBLASLt autotuned TN
    and torch.matmul on B^T); then the geomean and the counts under 0.98x."""
    label_col, us_col, refs = ROUTES[route]
    out = Path(out)
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
        med = lambda rs, col: statistics.median(positive(r, col) for r in rs)  # noqa: E731
        old_us, new_us = med(olds, us_col), med(news, us_col)
        if route != "nn" and not (old_us > 0 and new_us > 0):
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


def report_lines(per: list[dict], agg: dict) -> list[str]:
    """The A/B as a markdown table and one closing line."""
    (a, _), (b, _) = ROUTES[agg.get("route", "nn")][2]
    what = {"bt": "hgemm's B^T route", "both": "hgemm handed both layouts"}.get(agg.get("route"), "hgemm")
    lines = [f"{what}:", f"| shape | old | new | old us | new us | old/new | new vs {a} | new vs {b} | correct |",
             "|---|---|---|---|---|---|---|---|---|"]
    for p in per:
        lines.append(f"| {p['shape']} | {p['old']} | {p['new']} | {p['old_us']:.2f} | {p['new_us']:.2f} | "
                     f"{p['old_over_new']:.3f} | {p[f'new_vs_{a}']:.3f} | {p[f'new_vs_{b}']:.3f} | {p['correct']} |")
    lines.append(f"moved shapes {agg['shapes']} ({what}): old/new geomean {agg['geomean_old_over_new']:.4f} (new faster "
                 f"on {agg['new_faster']}); under 0.98x of {REF_NAMES[a]} {agg[f'old_under_098_{a}']} -> "
                 f"{agg[f'new_under_098_{a}']}, of {REF_NAMES[b]} {agg[f'old_under_098_{b}']} -> "
                 f"{agg[f'new_under_098_{b}']}; all correct: {agg['all_correct']}")
    return lines


def run_ab(out: Path, old: dict, new: dict, shapes: list[Shape], repeats: int, rounds: int, bt: bool,
           bench: Callable, log: Callable[[str], None] = print, resume: bool = False) -> None:
    """bench-gemm (offline, GPU timing, every check) on `shapes` under the old table then the new one, `repeats`
    times, into out/old_<i> and out/new_<i>; with `bt` the B^T route is timed too (CUDAOPT_GEMM_BENCH_BT=1, restored
    after). bench: bench_gemm or a stand-in."""
    from cudaopt.gemm.bench import BT_BENCH_ENV

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plain = {}
    for side, data in (("old", old), ("new", new)):  # bench-gemm reads a plain .json
        plain[side] = out / f"{side}_table.json"
        plain[side].write_text(json.dumps(data))
    spec = ",".join("x".join(map(str, s)) for s in shapes)
    was = os.environ.get(BT_BENCH_ENV)
    try:
        if bt:
            os.environ[BT_BENCH_ENV] = "1"
        for i in range(repeats):
            for side in ("old", "new"):
                log(f"== {side} table, repeat {i + 1} of {repeats}: {len(shapes)} moved shapes")
                bench(shapes=spec, out_dir=out / f"{side}_{i}", table=str(plain[side]), rounds=rounds, resume=resume)
    finally:
        if was is None:
            os.environ.pop(BT_BENCH_ENV, None)
        else:
            os.environ[BT_BENCH_ENV] = was


def verify_moves(out: Path, base: dict, proposed: dict, repeats: int, rounds: int, bt: bool, bench: Callable,
                 log: Callable[[str], None] = print) -> tuple[list[dict], list[Shape]]:
    """The proposed table's moves timed against the base's (run_ab, into out/<hash of the proposal>/: a rerun of the
    same proposal continues it), then keep_not_slower. Returns (the entries, the shapes sent back)."""
    shapes = moved_shapes(base, proposed)
    if not shapes:
        return list(proposed["entries"]), []
    log(f"== the {len(shapes)} moved shapes, base table then proposal, {repeats} time{'s' if repeats > 1 else ''}")
    tag = hashlib.sha256(json.dumps(proposed, sort_keys=True).encode()).hexdigest()[:12]
    ab = Path(out) / tag
    run_ab(ab, base, proposed, shapes, repeats, rounds, bt, bench, log, resume=True)
    return keep_not_slower(ab, base, proposed, repeats, bt, log)


def keep_not_slower(ab: Path, base: dict, proposed: dict, repeats: int, bt: bool,
                    log: Callable[[str], None] = print) -> tuple[list[dict], list[Shape]]:
    """The proposal's entries with each move kept only where the A/B in `ab` (run_ab's folders) reads every route
    the move changes not slower (median over the repeats) with every check passed; the others go back to the base
    entry. Returns (the entries, the shapes sent back)."""
    shapes = set(moved_shapes(base, proposed))
    read: dict[str, dict[str, dict]] = {}
    for route in ("nn", "bt", "both") if bt else ("nn",):
        per, agg = summarize(ab, repeats, route)
        read[route] = {p["shape"]: p for p in per}
        if per:
            for line in report_lines(per, agg):
                log(line)
    base_by = {_key(e): e for e in base["entries"]}
    entries, back = [], []
    for e in proposed["entries"]:
        k = _key(e)
        if k in shapes:
            name = "x".join(map(str, k))
            routes = moved_routes(base_by[k], e) & set(read)
            ps = [read[r].get(name) for r in routes]
            if not routes or any(p is None or not p["correct"] or not p["old_over_new"] >= 1.0 for p in ps):
                entries.append(base_by[k])
                back.append(k)
                continue
        entries.append(e)
    return entries, back
