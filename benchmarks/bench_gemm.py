"""Thin wrapper: python benchmarks/bench_gemm.py [SHAPES] [MODE] [TIMING] [OUT_DIR]
[--table T] [--budget-s S] [--no-resume] [--shard i/n]  (see cudaopt.gemm.cli).

Resumes by default: shapes already in OUT_DIR/shapes.jsonl are skipped, so rerunning the same
command after a kill or a spent budget continues the benchmark."""

import argparse
import sys

from cudaopt.gemm.cli import bench_gemm, check_args


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("shapes", nargs="?", default="sample:40")
    p.add_argument("mode", nargs="?", default="offline")
    p.add_argument("timing", nargs="?", default="gpu")
    p.add_argument("out_dir", nargs="?", default="runs/gemm")
    p.add_argument("--table", default=None)
    p.add_argument("--budget-s", type=float, default=None)
    p.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--shard", default=None, help="i/n: only the shapes whose index %% n == i")
    a = p.parse_args(argv)
    try:
        check_args(a.shapes, a.mode, a.timing, a.shard, a.budget_s)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = bench_gemm(shapes=a.shapes, mode=a.mode, timing=a.timing, out_dir=a.out_dir, table=a.table,
                     budget_s=a.budget_s, resume=a.resume, shard=a.shard)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
