"""Our kernels on B given transposed (the B^T twins, session 39) against cuBLASLt's TN layout, and against themselves on
B as given (issue 6).

In session 38's grids about 18-26 shapes a run had cuBLASLt's TN layout (B pre-transposed, handed to the baseline
free) more than 2% faster than every option that reads B as given, ours and cuBLASLt's NN included. Whether that
gap is the layout itself (for the tensor cores or the loads) or cuBLAS's kernel choice per layout, the twins can say:
per shape the table's config (or --configs) reading B as given ("ours_nn") and reading B^T ("ours_bt"), with
cuBLASLt autotuned NN and TN, all four interleaved in one GPU timing run (CUDA graphs, shuffled rounds). Also
checks each twin's output bitwise against its kernel on B as given.

    python benchmarks/gemm_bt.py --shapes tn_only --out bt.jsonl
    python benchmarks/gemm_bt.py --shapes 2048x8192x4096,4096x8192x8192 --configs 42,25
"""
from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
from pathlib import Path

# session 38's shapes that only cuBLASLt's TN layout reached in one grid or both (floor.csv, tn_only = 1)
FLOOR_CSVS = ("docs/data/hgemm_session38/grid_default/floor.csv", "docs/data/hgemm_session38/grid_variant/floor.csv")


def tn_only_shapes(root: Path) -> list[tuple[int, int, int]]:
    shapes: set[tuple[int, int, int]] = set()
    for rel in FLOOR_CSVS:
        with open(root / rel, newline="") as f:
            shapes |= {(int(r["m"]), int(r["n"]), int(r["k"])) for r in csv.DictReader(f) if r["tn_only"] == "1"}
    return sorted(shapes, key=lambda s: s[0] * s[1] * s[2])


def parse_shapes(text: str, root: Path) -> list[tuple[int, int, int]]:
    """'tn_only' (above), or anything bench-gemm's --shapes takes ('grid', 'sample:N', a file, 'MxNxK,...')."""
    from cudaopt.gemm.shapes import parse_shapes as gemm_shapes

    return tn_only_shapes(root) if text == "tn_only" else gemm_shapes(text)


def one_shape(shape, configs: list[int] | None, rounds: int, seed: int) -> list[dict]:
    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import make_inputs, num_sets, ours_bt_launch, ours_launch, time_with_lt_auto
    from cudaopt.gemm.dispatch import Choice, choose
    from cudaopt.gemm.stats import paired_ratio
    from cudaopt.gemm.timing import time_gpu

    m, n, k = shape
    # the table's choice of ours (its config and splits), or each given config without split-K
    picks = [Choice("ours", c, 1) for c in configs] if configs else [choose(m, n, k).as_ours()]
    rows = []
    for choice in picks:
        cid, splits = choice.config, choice.splits
        if not _lib.has_bt(cid, splits):
            rows.append({"shape": list(shape), "config": cid, "splits": splits, "skipped": "no B^T twin"})
            continue
        torch.manual_seed(seed)
        sets = num_sets(m, n, k)
        ws_bytes = _lib.workspace_bytes(m, n, splits)
        # x.bt: B^T, N x K contiguous, as the TN baselines read it; x.ws: the split-K workspace, counters zero
        x = make_inputs(m, n, k, sets, ws_bytes, with_blas=True)
        bt_run = ours_bt_launch(x, m, n, k, choice)
        cands = {"ours_nn": ours_launch(x, m, n, k, choice), "ours_bt": bt_run}
        # bitwise: the twin against its kernel on B as given, input set 0
        cands["ours_nn"](0)
        want = x.c[0].clone()
        bt_run(0)
        torch.cuda.synchronize()
        equal = bool(torch.equal(want, x.c[0]))
        rng = random.Random(seed * 1_000_003 + m + n + k)
        t = time_with_lt_auto(cands, x, m, n, k, sets, rounds, rng)
        per_round: dict[str, list[float]] = {}
        time_gpu(cands, sets, rounds=rounds, rng=rng, per_round=per_round)  # the two of ours, paired
        rows.append({"shape": list(shape), "config": cid, "splits": splits, "bitwise_equal": equal, "us": t,
                     "nn_over_bt_paired": paired_ratio(per_round, ("ours_nn",), "ours_bt")})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="tn_only",
                    help="tn_only (session 38's floor.csv), grid, sample:N, a file, or a comma list of MxNxK")
    ap.add_argument("--configs", default="",
                    help="comma list of config ids, run without split-K (default: each shape's table config and splits)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="one JSON line per (shape, config) here")
    args = ap.parse_args(argv)
    root = Path(__file__).resolve().parent.parent
    try:
        shapes = parse_shapes(args.shapes, root)
        configs = [int(c) for c in args.configs.split(",") if c] or None
    except (ValueError, OSError) as e:
        print(f"gemm_bt: bad --shapes/--configs ({e}); e.g. --shapes 2048x8192x4096 --configs 42", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("gemm_bt: needs a CUDA GPU", file=sys.stderr)
        return 2
    out = open(args.out, "w") if args.out else None
    # every column a ratio of times, > 1 where the second named is faster
    print(f"{'shape':>17} {'config':>9} {'bitwise':>7} {'lt_nn/nn':>9} {'lt_tn/bt':>9} {'lt_max/bt':>9} "
          f"{'lt_nn/lt_tn':>11} {'nn/bt (paired)':>14}")
    gains = []
    for shape in shapes:
        for r in one_shape(shape, configs, args.rounds, args.seed):
            if out:
                out.write(json.dumps(r) + "\n")
                out.flush()
            if "skipped" in r:
                print(f"{'x'.join(map(str, shape)):>17} {r['config']:>6}/{r['splits']:<2} {r['skipped']}")
                continue
            t = r["us"]
            lt_max = min(t.get("lt_auto_nn", float("inf")), t.get("lt_auto_tn", float("inf")))
            speed = lambda ref, ours: ref / ours if ours and ref else float("nan")  # noqa: E731  (> 1: ours faster)
            p = r["nn_over_bt_paired"]
            gains.append(p if p else float("nan"))
            print(f"{'x'.join(map(str, shape)):>17} {r['config']:>6}/{r['splits']:<2} {str(r['bitwise_equal']):>7} "
                  f"{speed(t.get('lt_auto_nn'), t['ours_nn']):>9.4f} {speed(t.get('lt_auto_tn'), t['ours_bt']):>9.4f} "
                  f"{speed(lt_max, t['ours_bt']):>9.4f} {speed(t.get('lt_auto_nn'), t.get('lt_auto_tn')):>11.4f} "
                  f"{(p if p else float('nan')):>14.4f}", flush=True)
    if out:
        out.close()
    finite = [g for g in gains if g == g]
    if finite:
        print(f"ours on B^T against ours on B, paired, geomean over {len(finite)}: "
              f"{statistics.geometric_mean(finite):.4f} (> 1: the twin faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
