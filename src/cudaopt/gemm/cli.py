"""Entry points for the `cudaopt bench-gemm` and `cudaopt tune-gemm` commands (wired by the CLI).

Plain functions with keyword arguments; each returns what it wrote. Shapes are given as a spec
string: 'grid' (the 1,000 shapes), 'sample:N[:seed]', a file of 'M N K' lines, or 'MxNxK,...'.
"""

from __future__ import annotations

from pathlib import Path

from cudaopt.gemm.shapes import parse_shapes


def bench_gemm(shapes: str = "grid", mode: str = "offline", timing: str = "gpu", out_dir: str | Path = "runs/gemm",
               table: str | None = None, baselines: bool = True, check: bool = True, rounds: int = 15,
               seed: int = 0, budget_s: float | None = None) -> Path:
    """Benchmark ours vs torch.matmul / cuBLAS / cuBLASLt; writes shapes.csv, summary.csv/.md,
    speedup.png and checks.json under out_dir and returns out_dir."""
    from cudaopt.gemm.bench import run_bench, write_outputs

    res = run_bench(parse_shapes(shapes), mode=mode, timing=timing, table_path=table, with_blas=baselines,
                    check=check, rounds=rounds, seed=seed, budget_s=budget_s)
    out = Path(out_dir)
    write_outputs(res, out, f"HGEMM {mode} / {timing} timing")
    return out


def tune_gemm(shapes: str = "grid", out: str | Path = "runs/gemm/tuned.json", rounds: int = 5,
              budget_s: float | None = None, merge: bool = True, seed: int = 0) -> Path:
    """Tune our kernel configs per shape on the GPU and write (or merge into) the JSON table at out."""
    from cudaopt.gemm.tune import run_tune

    run_tune(parse_shapes(shapes), Path(out), rounds=rounds, budget_s=budget_s, merge=merge, seed=seed)
    return Path(out)
