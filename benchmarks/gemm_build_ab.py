"""Builds of our kernel library with compile-time variants, the same kernels, timed against the shipped build (GPU).

A compile-time change to the kernels (a `CUDAOPT_EXPERIMENT_*` define) cannot be read from two grids: a grid's mean
moves by half a point from run to run and the small shapes by up to 12% (docs/gemm.md, session 30). This script
builds the library once more per variant (`--variant`: comma-separated defines; repeat it for more variants), each
into its own folder, side by side, loads every build in one process (ctypes gives each its own symbols), and per
shape launches the table's choice of ours from build A (the package's own) and from each variant on the same
inputs: a variant's output must equal A's bit for bit (the changes are meant to leave the arithmetic alone), then
all are timed interleaved in the same rounds of CUDA graph replays (time_gpu, with PDL, as the grid times ours).
Prints one row a shape and per variant the geomean of A / variant (>1: the variant faster) overall, per work class
and per kernel family (plain, split-K + reduce, in-kernel split-K), and its slowest shapes; --out writes one JSON
line a shape. Last, a verdict per variant under the adoption rule (verdict(); its bars are options).

    PYTHONPATH=src python benchmarks/gemm_build_ab.py --variant CUDAOPT_EXPERIMENT_EARLY_MAP_PREFETCH \
        --variant CUDAOPT_EXPERIMENT_EXIT_AFTER_READ --shapes grid --max-flop 1e9 [--rounds 15] [--out ab.jsonl]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def pick_shapes(spec: str, max_flop: float | None) -> list[tuple[int, int, int]]:
    """The shapes of `spec` (cudaopt.gemm.shapes.parse_shapes) at or under max_flop (2MNK), in their order."""
    from cudaopt.gemm.shapes import flops, parse_shapes

    return [s for s in parse_shapes(spec) if max_flop is None or flops(s) <= max_flop]


def ab_dir(defines: list[str], root: Path) -> Path:
    """Build B's folder: one per set of defines, so a rerun reuses its build."""
    return root / hashlib.sha1(" ".join(sorted(defines)).encode()).hexdigest()[:12]


def kernel_family(label: str) -> str:
    """The kind of kernel a table choice runs, as the PDL roles split them (session 31): a variant that helps the
    plain kernels may cost the split-K ones, whose reduce runs as a second kernel."""
    if "_cs_splitk" in label:
        return "in-kernel split-K"
    return "split-K + reduce" if "splitk" in label else "plain"


def summarise(rows: list[dict], name: str, worst: int = 3) -> list[str]:
    """Geomean of A / variant `name` (paired within rounds) overall, per work class and per kernel family, with its
    wins (ratio > 1) and median (session 43: a class's geomean over ~50 large shapes moved 0.4% on two shapes' power
    events, where its median did not), then the `worst` shapes where the variant is slowest."""
    from cudaopt.gemm.stats import summarize, summarize_by_class

    usable = [r for r in rows if (r.get("a_over") or {}).get(name)]
    ratios = {(r["m"], r["n"], r["k"]): r["a_over"][name] for r in usable}
    summaries = [s for s in summarize_by_class(name, ratios) if s.n]
    families: dict[str, list[float]] = {}
    for r in usable:
        families.setdefault(kernel_family(r.get("choice", "")), []).append(r["a_over"][name])
    summaries += [summarize(name, fam, vals) for fam, vals in sorted(families.items())]
    lines = [f"  {name} {s.group:>17}: A/B geomean {s.geomean_speedup + 1:.4f} over {s.n} shapes, B faster on "
             f"{round(s.win_rate * s.n)}, median {s.median_ratio:.4f}" for s in summaries]
    low = sorted(usable, key=lambda r: r["a_over"][name])[:worst]
    if low:
        lines.append(f"  {name} slowest: " + ", ".join(
            f"{r['m']}x{r['n']}x{r['k']} {r.get('choice', '?')} {r['a_over'][name]:.3f}" for r in low))
    return lines


def verdict(rows: list[dict], name: str, min_all: float, min_class: float) -> str:
    """The adoption rule, written down before the run (session 37): a variant may become the default when its outputs
    equal A's on every shape, no shape failed, its A / variant geomean over all shapes is above min_all and no work
    class's is below min_class (paired noise: a class of ~100 shapes moves by ~0.1-0.2%). One line, with the first
    reason it fails."""
    from cudaopt.gemm.stats import summarize_by_class

    failed = sum("error" in r for r in rows)
    differs = sum(not r["bitwise"].get(name, False) for r in rows if "error" not in r)
    if failed or differs:
        return f"{name} verdict: keep off ({differs} shapes differ from A, {failed} failed)"
    ratios = {(r["m"], r["n"], r["k"]): r["a_over"][name] for r in rows if (r.get("a_over") or {}).get(name)}
    if not ratios:
        return f"{name} verdict: no timed shapes"
    summaries = [s for s in summarize_by_class(name, ratios) if s.n]
    overall = summaries[0].geomean_speedup + 1
    classes = ", ".join(f"{s.group} {s.geomean_speedup + 1:.4f}" for s in summaries[1:])
    if overall <= min_all:
        return f"{name} verdict: keep off (all {overall:.4f} <= {min_all}; {classes})"
    low = [s for s in summaries[1:] if s.geomean_speedup + 1 < min_class]
    if low:
        return (f"{name} verdict: keep off (all {overall:.4f}, but {low[0].group} {low[0].geomean_speedup + 1:.4f} "
                f"< {min_class}; {classes})")
    return f"{name} verdict: adopt (all {overall:.4f} > {min_all}, every class >= {min_class}: {classes})"


def parse_variants(specs: list[str]) -> dict[str, tuple[str, ...]]:
    """--variant values -> name (B1, B2, ...) -> its defines."""
    return {f"B{i + 1}": tuple(d.strip() for d in spec.split(",") if d.strip()) for i, spec in enumerate(specs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", action="append", default=[], required=True,
                    help="one variant build: its preprocessor defines, comma-separated (NAME or NAME=VALUE); "
                         "repeat for more variants")
    ap.add_argument("--shapes", default="grid", help="grid, sample:N, a file of 'M N K' lines or MxNxK,...")
    ap.add_argument("--max-flop", type=float, default=None, help="only the shapes of at most this many FLOP (2MNK)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--seed", type=int, default=0, help="the seed of the replay order, one generator for all shapes")
    ap.add_argument("--build-root", default="/tmp/cudaopt-ab", help="where the variants' builds go (a folder each)")
    ap.add_argument("--out", help="also append one JSON line a shape here")
    ap.add_argument("--adopt-min-all", type=float, default=1.0,
                    help="the verdict's bar: A / variant geomean over all shapes above this")
    ap.add_argument("--adopt-min-class", type=float, default=0.998,
                    help="the verdict's bar: no work class's A / variant geomean below this")
    args = ap.parse_args(argv)

    from cudaopt.gemm import _lib
    from cudaopt.gemm import build as _build

    try:
        shapes = pick_shapes(args.shapes, args.max_flop)
    except ValueError as e:
        print(f"--shapes {args.shapes!r}: {e}", file=sys.stderr)
        return 2
    if not shapes:
        print("no shapes left: loosen --max-flop or give other --shapes", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("gemm_build_ab: no CUDA device here; run it on the GPU machine", file=sys.stderr)
        return 2
    variants = parse_variants(args.variant)
    t0 = time.time()
    try:
        _lib.wgmma_kernels()  # build A (the package's own) first
        with ThreadPoolExecutor(len(variants)) as pool:  # one nvcc each, side by side
            built = dict(zip(variants, pool.map(
                lambda defs: _build.build(out_dir=ab_dir(list(defs), Path(args.build_root)), with_blas=False,
                                          defines=defs), variants.values())))
        libs = {name: _lib.init_wgmma(_lib.load_kernels(b.kernel_lib)) for name, b in built.items()}
    except (_build.BuildError, _lib.GemmError) as e:
        print(f"variant builds: {e}", file=sys.stderr)
        return 1
    print(f"A: {_build.BUILD_DIR / _build.KERNEL_LIB}")
    for name, defs in variants.items():
        print(f"{name}: {built[name].kernel_lib} ({' '.join(defs)})")
    print(f"builds ready in {time.time() - t0:.0f} s")

    from cudaopt.gemm.bench import make_inputs, num_sets, ours_launch
    from cudaopt.gemm.dispatch import choose
    from cudaopt.gemm.stats import paired_ratio
    from cudaopt.gemm.timing import time_gpu

    # One generator across shapes: time_gpu's own default restarts at seed 0 for every call, so each shape got the
    # same sequence of replay orders and a candidate's position bias (first after the round's sync) did not average
    # out over the grid (session 31's first whole-grid A/B read build A 2.3% slower than the 304-shape one before it).
    rng = random.Random(args.seed)
    rows = []
    for m, n, k in shapes:
        choice = choose(m, n, k).as_ours()
        sets = num_sets(m, n, k)
        x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, choice.splits), False)
        cands = {"A": ours_launch(x, m, n, k, choice)}
        cands.update({name: ours_launch(x, m, n, k, choice, lib=lib) for name, lib in libs.items()})
        row = {"m": m, "n": n, "k": k, "choice": choice.label(), "bitwise": {}, "a_over": {}}
        try:
            cands["A"](0)
            ref = x.c[0].clone()
            for name in libs:
                x.c[0].zero_()
                cands[name](0)
                torch.cuda.synchronize()
                row["bitwise"][name] = bool(torch.equal(ref, x.c[0]))
            per_round: dict[str, list[float]] = {}
            t = time_gpu(cands, sets, rounds=args.rounds, rng=rng, per_round=per_round)
            row["us"] = {name: t[name] for name in cands}
            row["a_over"] = {name: paired_ratio(per_round, ("A",), name) for name in libs}
        except Exception as e:  # noqa: BLE001  (a failing shape is a row with its error, the others go on)
            torch.cuda.synchronize()
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        rows.append(row)
        ratios = "  ".join(f"A/{name} {row['a_over'].get(name) or math.nan:6.3f}"
                           f"{'' if row['bitwise'].get(name, True) else ' DIFFERS'}" for name in libs)
        print(f"{m:>6}x{n}x{k:<6} {row['choice']:>36}  A {row.get('us', {}).get('A', math.nan):8.3f} us  {ratios}"
              f"  {row.get('error', '')}", flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    differs = [r for r in rows if not all(r["bitwise"].values())]
    failed = sum("error" in r for r in rows)
    equal = sum("error" not in r and all(r["bitwise"].values()) for r in rows)
    print("build A (shipped) against the variants, paired within rounds:")
    for name, defs in variants.items():
        print(f"{name} = {' '.join(defs)}")
        print("\n".join(summarise(rows, name)))
        print(verdict(rows, name, args.adopt_min_all, args.adopt_min_class))
    print(f"outputs: {equal} shapes bitwise equal in every variant, {len(differs)} differ, {failed} failed")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
