"""Stream-K twins against their plain kernels on the grid shapes a table runs them on (issue 6, session 47).

The wave probe (gemm_wave_probe.py) measured on an H100 that a partial last wave of tiles costs about a whole wave
(q = 0.88-0.98), and session 47 wrote stream-K twins of the cooperative configs (hgemm_wgmma.cu's sk_item: the last
partial wave's r tiles split along K over the SMs the plain kernel leaves idle, at most --max-splits ways, summed
through a workspace). This asks the question a table would: on each grid shape where the table runs such a config
without split-K and the tile count is not a whole number of waves, is the twin faster? Per shape the plain kernel and
the twin (one variant per split cap) are timed interleaved (bench's CUDA-graph GPU timing, shuffled rounds), with the
within-round ratio's median beside the ratio of medians; each twin's output is checked against the plain kernel's (the
bench's quick bound) first.

    python benchmarks/gemm_streamk_ab.py                       # the shipped table of this GPU, shapes from 1e10 FLOP
    python benchmarks/gemm_streamk_ab.py --min-flop 1e11 --rounds 20 --max-splits 4,8,16 --out sk_ab.jsonl

--shapes FILE (a CSV with m, n, k columns, e.g. a grid's floor.csv) asks the wider question instead: on each of those
shapes, every config with a twin, plain and stream-K, against what hgemm runs there now (the table's choice) and
torch.matmul, all interleaved; the best of ours per shape against the dispatcher, paired. --propose reads such a
run back (no GPU) into a candidate table for scripts/gemm_moves_ab.py to judge.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path


def candidates(table: dict, sms: int, min_flop: float, has_streamk, most: int) -> list[tuple[tuple[int, int, int], object]]:
    """(shape, choice) of every table entry our stream-K twin could change: our kernel without split-K, a config with
    a twin, at least min_flop, more tiles than SMs and a tail the twin would split (sk_tail_splits > 1 at `most`)."""
    from cudaopt.gemm.configs import KERNEL_CONFIGS, sk_tail_splits, wgmma_k_blocks

    out = []
    for (m, n, k), ch in sorted(table.items()):
        if ch.backend != "ours" or ch.splits != 1 or 2 * m * n * k < min_flop or not has_streamk(ch.config):
            continue
        tiles = KERNEL_CONFIGS[ch.config].tiles(m, n)
        if tiles > sms and sk_tail_splits(sms, tiles, wgmma_k_blocks(k), most) > 1:
            out.append(((m, n, k), ch))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", default=None, help="a table .json (default: the shipped table of this GPU)")
    ap.add_argument("--min-flop", type=float, default=1e10)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--max-splits", default="8", help="comma list: the twin timed once per cap on a tail tile's splits")
    ap.add_argument("--budget-s", type=float, default=240.0, help="stop starting shapes after this many seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="one JSON line per shape here")
    ap.add_argument("--shapes", default=None, help="CSV with m,n,k columns: every twin config on these shapes instead")
    ap.add_argument("--propose", default=None, metavar="JSONL",
                    help="no GPU: a --shapes run's --out; with --table and --write, that table with each shape whose "
                         "best of ours read under --under of the dispatcher (paired) moved to it")
    ap.add_argument("--write", default=None, help="--propose's candidate table (judge it: scripts/gemm_moves_ab.py)")
    ap.add_argument("--under", type=float, default=0.98)
    args = ap.parse_args(argv)
    if args.propose:
        return propose_main(args)
    try:
        caps = sorted({int(v) for v in args.max_splits.split(",") if v})
        if not caps or not all(2 <= v <= 64 for v in caps):
            raise ValueError
    except ValueError:
        caps = []
    if args.rounds < 3 or args.budget_s <= 0 or not caps:
        print("gemm_streamk_ab: --rounds at least 3, --budget-s positive, --max-splits a comma list of 2..64; e.g. "
              "--rounds 15 --budget-s 240 --max-splits 4,8", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("gemm_streamk_ab: needs a CUDA GPU", file=sys.stderr)
        return 2
    from cudaopt.gemm import _lib, dispatch
    from cudaopt.gemm.bench import QUICK_REL_ERR, launch_under, make_inputs, ours_launch
    from cudaopt.gemm.configs import KERNEL_CONFIGS, sk_tail_splits, wgmma_k_blocks
    from cudaopt.gemm.correctness import rel_error
    from cudaopt.gemm.timing import time_gpu

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gemm_wave_probe import streamk_launch

    name = torch.cuda.get_device_name()
    if args.table is None:
        dispatch.use_device(name)
    table = dispatch.load_table(args.table)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if args.shapes:
        return shapes_mode(args, table, sms, name)
    shapes = candidates(table, sms, args.min_flop, _lib.has_streamk, max(caps))
    print(f"{name}, {sms} SMs; {len(shapes)} table shapes from {args.min_flop:.0e} FLOP on a config with a stream-K "
          f"twin and a tail it splits; caps {caps}")
    out = open(args.out, "w") if args.out else None
    workspaces: dict[int, object] = {}
    rows, t0 = [], time.monotonic()
    print(f"{'shape':>18} {'config':>30} {'waves':>6} {'plain us':>9} "
          + " ".join(f"{f'sk{c} us':>9} {'paired':>7}" for c in caps))
    for (m, n, k), ch in shapes:
        if time.monotonic() - t0 > args.budget_s:
            print(f"budget spent: {len(shapes) - len(rows)} shapes not timed")
            break
        cfg = KERNEL_CONFIGS[ch.config]
        if ch.config not in workspaces:  # (one a config, made once: every call leaves its counters zero)
            workspaces[ch.config] = _lib.new_streamk_workspace(ch.config)
        ws = workspaces[ch.config]
        x = make_inputs(m, n, k, 2, 0, with_blas=False)
        cands = {"plain": ours_launch(x, m, n, k, ch)}
        for c in caps:  # each cap a launch made under its setting (a CUDA graph keeps what it captured)
            cands[f"sk{c}"] = launch_under(streamk_launch(x, m, n, k, ch.config, ws), _lib.set_streamk_max_splits, c, 8)
        cands["plain"](0)
        ref = x.c[0].float()
        errs = {}
        for c in caps:
            x.c[0].zero_()
            cands[f"sk{c}"](0)
            errs[c] = rel_error(x.c[0], ref)
        per_round: dict[str, list[float]] = {}
        t = time_gpu(cands, 2, rounds=args.rounds, rng=random.Random(args.seed + m + n + k), per_round=per_round)
        tiles = cfg.tiles(m, n)
        row = {"m": m, "n": n, "k": k, "config": ch.config, "label": cfg.label, "tiles": tiles, "waves": tiles / sms,
               "plain_us": t["plain"], "variants": []}
        for c in caps:
            paired = statistics.median(s / p for s, p in zip(per_round[f"sk{c}"], per_round["plain"]))
            row["variants"].append({"max_splits": c, "splits": sk_tail_splits(sms, tiles, wgmma_k_blocks(k), c),
                                    "sk_us": t[f"sk{c}"], "ratio": t[f"sk{c}"] / t["plain"], "paired": paired,
                                    "rel_err_vs_plain": errs[c], "correct": errs[c] <= QUICK_REL_ERR})
        row["correct"] = all(v["correct"] for v in row["variants"])
        rows.append(row)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()
        print(f"{f'{m}x{n}x{k}':>18} {cfg.label:>30} {row['waves']:>6.2f} {row['plain_us']:>9.1f} "
              + " ".join(f"{v['sk_us']:>9.1f} {v['paired']:>7.3f}" for v in row["variants"])
              + ("" if row["correct"] else f"  WRONG (rel err {max(errs.values()):.2e})"))
        del x
    if out:
        out.close()
    ok = [r for r in rows if r["correct"]]
    for i, c in enumerate(caps):
        ps = [r["variants"][i]["paired"] for r in ok if math.isfinite(r["variants"][i]["paired"])]
        if ps:
            geo = math.exp(statistics.fmean(math.log(p) for p in ps))
            print(f"stream-K twin (at most {c} splits) / plain kernel, paired: geomean {geo:.4f} over {len(ps)} "
                  f"shapes; under 0.99 on {sum(p < 0.99 for p in ps)}, over 1.01 on {sum(p > 1.01 for p in ps)}")
    print(f"all correct: {len(ok) == len(rows)}")
    return 0 if len(ok) == len(rows) else 1


def propose(rows: list[dict], data: dict, under: float) -> tuple[list[dict], list[str]]:
    """The table's entries with each shape of a --shapes run whose best of ours read under `under` of the dispatcher
    (paired, correct) moved to that config ("p<id>": plain, "s<id>": its stream-K twin); the B^T route's cuBLASLt
    algorithm, where the entry names one, kept. Returns (the entries, "MxNxK: old -> new (ratio)" per move)."""
    from cudaopt.gemm.dispatch import entry_choice

    best = {(r["m"], r["n"], r["k"]): r for r in rows
            if r.get("best") and r.get("best_vs_dispatch_paired") is not None
            and r["best_vs_dispatch_paired"] < under and r["best"] not in r.get("wrong", [])}
    entries, said = [], []
    for e in data["entries"]:
        r = best.get((int(e["m"]), int(e["n"]), int(e["k"])))
        if r is None:
            entries.append(e)
            continue
        moved = {"m": e["m"], "n": e["n"], "k": e["k"], "backend": "ours", "config": int(r["best"][1:]), "splits": 1,
                 **({"streamk": True} if r["best"][0] == "s" else {}),
                 **({"bt_lt_algo": e["bt_lt_algo"]} if "bt_lt_algo" in e else {}),
                 "streamk_ab": {"from": entry_choice(e).label(), "paired_vs_dispatch": r["best_vs_dispatch_paired"]}}
        new_label = entry_choice(moved).label()  # (ValueError: a config that cannot run there)
        entries.append(moved)
        said.append(f"{e['m']}x{e['n']}x{e['k']}: {moved['streamk_ab']['from']} -> {new_label} "
                    f"({r['best_vs_dispatch_paired']:.3f})")
    return entries, said


def propose_main(args) -> int:
    from cudaopt.gemm.grid_choice import table_data
    from cudaopt.gemm.tune import write_json_atomic

    if not args.table or not args.write:
        print("gemm_streamk_ab: --propose needs --table (the table the run timed against) and --write", file=sys.stderr)
        return 2
    try:
        rows = [json.loads(line) for line in Path(args.propose).read_text().splitlines() if line.strip()]
        data = table_data(args.table)
        entries, said = propose(rows, data, args.under)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"gemm_streamk_ab: --propose: {e}", file=sys.stderr)
        return 2
    write_json_atomic(Path(args.write), {**data, "entries": entries})
    print("\n".join(said + [f"{args.write}: {len(said)} shapes moved (judge it: scripts/gemm_moves_ab.py --old "
                            f"{args.table} --new {args.write} --write KEPT)"]))
    return 0


def _read_shapes(path: str) -> list[tuple[int, int, int]]:
    import csv

    with open(path, newline="") as f:
        return [(int(r["m"]), int(r["n"]), int(r["k"])) for r in csv.DictReader(f)]


def shapes_mode(args, table: dict, sms: int, name: str) -> int:
    """Every twin config, plain and stream-K (at the default cap), on the given shapes, against the dispatcher's
    choice and torch.matmul."""
    from cudaopt.gemm import _lib, hgemm
    from cudaopt.gemm.bench import QUICK_REL_ERR, make_inputs, ours_launch, torch_launch
    from cudaopt.gemm.correctness import rel_error
    from cudaopt.gemm.configs import KERNEL_CONFIGS, sk_tail_splits, wgmma_k_blocks
    from cudaopt.gemm.dispatch import Choice
    from cudaopt.gemm.timing import time_gpu
    from gemm_wave_probe import streamk_launch

    try:
        shapes = _read_shapes(args.shapes)
    except (OSError, KeyError, ValueError) as e:
        print(f"gemm_streamk_ab: --shapes {args.shapes}: {e}; want a CSV with m,n,k columns", file=sys.stderr)
        return 2
    twins = [c for c in KERNEL_CONFIGS if c.kind == "wgmma" and _lib.has_streamk(c.id) and not c.csplit]
    print(f"{name}, {sms} SMs; {len(shapes)} shapes; twins {[c.id for c in twins]} (plain p, stream-K s)")
    out = open(args.out, "w") if args.out else None
    workspaces = {c.id: _lib.new_streamk_workspace(c.id) for c in twins}
    rows, t0, wrong = [], time.monotonic(), 0
    for m, n, k in shapes:
        if time.monotonic() - t0 > args.budget_s:
            print(f"budget spent: {len(shapes) - len(rows)} shapes not timed")
            break
        x = make_inputs(m, n, k, 2, 0, with_blas=False)
        ch = table.get((m, n, k))  # (a split-K choice gets its workspace, as bench-gemm's dispatch column does)
        dws = _lib.new_workspace(m, n, ch.splits) if ch is not None and ch.backend == "ours" and ch.splits > 1 else None
        cands = {"dispatch": lambda i, x=x, w=dws: hgemm(x.a[i], x.b[i], out=x.c[i], workspace=w),
                 "torch": torch_launch(x)}
        splits = {}
        for c in twins:
            cands[f"p{c.id}"] = ours_launch(x, m, n, k, Choice("ours", c.id, 1))
            tiles = c.tiles(m, n)
            splits[c.id] = sk_tail_splits(min(sms, tiles), tiles, wgmma_k_blocks(k))
            if splits[c.id] > 1:
                cands[f"s{c.id}"] = streamk_launch(x, m, n, k, c.id, workspaces[c.id])
        cands["torch"](0)
        ref = x.c[0].float()
        errs = {}
        for key in cands:
            x.c[0].zero_()
            cands[key](0)
            errs[key] = rel_error(x.c[0], ref)
        bad = [key for key, e in errs.items() if not e <= QUICK_REL_ERR]
        wrong += bool(bad)
        per_round: dict[str, list[float]] = {}
        t = time_gpu({key: f for key, f in cands.items() if key not in bad}, 2, rounds=args.rounds,
                     rng=random.Random(args.seed + m + n + k), per_round=per_round)
        ours = [key for key in t if key[0] in "ps" and math.isfinite(t[key])]
        best = min(ours, key=lambda key: t[key]) if ours else None
        paired = (statistics.median(b / d for b, d in zip(per_round[best], per_round["dispatch"])) if best else None)
        row = {"m": m, "n": n, "k": k, "choice": ch.label() if ch is not None else None,
               "us": t, "splits": splits, "best": best, "best_vs_dispatch_paired": paired, "wrong": bad}
        rows.append(row)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()
        best_txt = f"{best} {t[best]:.1f} us, {paired:.3f}x dispatch" if best else "-"
        print(f"{f'{m}x{n}x{k}':>18} dispatch {t['dispatch']:>8.1f} torch {t['torch']:>8.1f}  best ours {best_txt}"
              + "  " + " ".join(f"{key}:{t[key]:.1f}" for key in ours) + (f"  WRONG {bad}" if bad else ""))
        del x
    if out:
        out.close()
    gains = [r["best_vs_dispatch_paired"] for r in rows if r["best_vs_dispatch_paired"]]
    if gains:
        print(f"best of ours (plain or stream-K twin) / dispatch, paired: under 0.98 on {sum(g < 0.98 for g in gains)} "
              f"of {len(gains)} shapes, geomean {math.exp(statistics.fmean(map(math.log, gains))):.4f}; stream-K the "
              f"best on {sum(str(r['best']).startswith('s') for r in rows)}; shapes with a wrong result: {wrong}")
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
