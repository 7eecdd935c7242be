"""A candidate table's moves judged cheaply: only the shapes whose entry it changes, old and new table alternately.

`cudaopt gemm-table-from-grids` proposes a table from grids it then reads optimistically; a whole fresh grid is the
judgement of record (~190 s on an H100). The shapes it did not move time as before, so their reading is the last
grid's: this script times the moved ones only, with bench-gemm's offline GPU timing (every baseline, both checks),
the old table then the new one, `--repeats` times, and prints per shape the dispatcher's time under each table
(median over repeats), their ratio and the new choice against cuBLASLt autotuned (NN alone and max).

    python scripts/gemm_moves_ab.py --old src/cudaopt/gemm/tuned_h100.json --new cand.json --out /tmp/moves
    python scripts/gemm_moves_ab.py --old A --new B --out DIR --report-only   # the table again from DIR (no GPU)
    python scripts/gemm_moves_ab.py --bt ...  # also hgemm's B^T route (CUDAOPT_GEMM_BENCH_BT=1), against cuBLASLt TN
    python scripts/gemm_moves_ab.py ... --write kept.json  # --new less the moves read slower here

With --bt a second table reads the B^T route (bench-gemm's dispatch_bt) against cuBLASLt autotuned TN and torch.matmul
on the same B^T: a move of bt_lt_algo changes only that route.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cudaopt.gemm.grid_choice import GridError, table_data
from cudaopt.gemm.moves import keep_not_slower, moved_shapes, report_lines, run_ab, summarize
from cudaopt.gemm.tune import write_json_atomic

__all__ = ["main", "moved_shapes", "summarize"]


def print_report(per: list[dict], agg: dict) -> None:
    print("\n".join(report_lines(per, agg)))


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
    ap.add_argument("--write", type=Path, default=None,
                    help="write --new with every move read slower here sent back to --old's entry (the rule "
                         "gemm-table-for-gpu --verify applies)")
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
        from cudaopt.gemm.cli import bench_gemm

        run_ab(args.out, old, new, shapes, args.repeats, args.rounds, args.bt, bench_gemm,
               log=lambda s: print(s, flush=True))
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
    if args.write:
        entries, back = keep_not_slower(args.out, old, new, args.repeats, args.bt, log=lambda s: None)
        write_json_atomic(args.write, {**new, "entries": entries})
        print(f"{args.write}: {len(shapes) - len(back)} of {len(shapes)} moves kept (sent back: "
              f"{', '.join('x'.join(map(str, s)) for s in back) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
