"""Thin wrapper: python benchmarks/bench_gemm.py [SHAPES] [MODE] [TIMING] [OUT_DIR] (see cudaopt.gemm.cli)."""

import sys

from cudaopt.gemm.cli import bench_gemm

if __name__ == "__main__":
    args = sys.argv[1:] + [None] * 4
    out = bench_gemm(shapes=args[0] or "sample:40", mode=args[1] or "offline", timing=args[2] or "gpu",
                     out_dir=args[3] or "runs/gemm")
    print(f"wrote {out}")
