"""Two builds of our kernel library, the same kernels, timed against each other in one process (GPU).

A compile-time change to the kernels (a `CUDAOPT_EXPERIMENT_*` define) cannot be read from two grids: a grid's mean
moves by half a point from run to run and the small shapes by up to 12% (docs/gemm.md, session 30). This script
builds the library a second time with the defines given (into its own folder), loads both builds side by side
(ctypes gives each its own symbols), and per shape launches the table's choice of ours from build A (the package's
own) and from build B on the same inputs: B's output must equal A's bit for bit (a change meant to leave the
arithmetic alone), then both are timed interleaved in the same rounds of CUDA graph replays (time_gpu, with PDL, as
the grid times ours). Prints one row a shape and the geomean of A / B (>1: B faster) overall and per work class;
--out writes one JSON line a shape.

    PYTHONPATH=src python benchmarks/gemm_build_ab.py --define CUDAOPT_EXPERIMENT_EARLY_MAP_PREFETCH \\
        --shapes grid --max-flop 1e9 [--rounds 15] [--out ab.jsonl]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path


def pick_shapes(spec: str, max_flop: float | None) -> list[tuple[int, int, int]]:
    """The shapes of `spec` (cudaopt.gemm.shapes.parse_shapes) at or under max_flop (2MNK), in their order."""
    from cudaopt.gemm.shapes import flops, parse_shapes

    return [s for s in parse_shapes(spec) if max_flop is None or flops(s) <= max_flop]


def ab_dir(defines: list[str], root: Path) -> Path:
    """Build B's folder: one per set of defines, so a rerun reuses its build."""
    return root / hashlib.sha1(" ".join(sorted(defines)).encode()).hexdigest()[:12]


def summarise(rows: list[dict]) -> list[str]:
    """Geomean of A / B (paired within rounds) overall and per work class, with B's wins (ratio > 1)."""
    from cudaopt.gemm.shapes import work_class

    groups: dict[str, list[float]] = {"all": []}
    for r in rows:
        if r.get("a_over_b"):
            groups["all"].append(r["a_over_b"])
            groups.setdefault(work_class((r["m"], r["n"], r["k"])), []).append(r["a_over_b"])
    out = []
    for name, v in groups.items():
        if v:
            gm = math.exp(sum(map(math.log, v)) / len(v))
            out.append(f"  {name:>10}: A/B geomean {gm:.4f} over {len(v)} shapes, B faster on {sum(x > 1 for x in v)}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--define", action="append", default=[], required=True,
                    help="a preprocessor define of build B (NAME or NAME=VALUE); repeat for more")
    ap.add_argument("--shapes", default="grid", help="grid, sample:N, a file of 'M N K' lines or MxNxK,...")
    ap.add_argument("--max-flop", type=float, default=None, help="only the shapes of at most this many FLOP (2MNK)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--build-root", default="/tmp/cudaopt-ab", help="where build B goes (a folder per define set)")
    ap.add_argument("--out", help="also append one JSON line a shape here")
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
    try:
        t0 = time.time()
        lib_a = _lib.wgmma_kernels()
        built = _build.build(out_dir=ab_dir(args.define, Path(args.build_root)), with_blas=False,
                             defines=tuple(args.define))
        lib_b = _lib.init_wgmma(_lib.load_kernels(built.kernel_lib))
    except (_build.BuildError, _lib.GemmError) as e:
        print(f"build B ({' '.join(args.define)}): {e}", file=sys.stderr)
        return 1
    print(f"A: {_build.BUILD_DIR / _build.KERNEL_LIB}\nB: {built.kernel_lib} ({' '.join(args.define)}), "
          f"ready in {time.time() - t0:.0f} s")

    from cudaopt.gemm.bench import _stream, make_inputs, num_sets
    from cudaopt.gemm.dispatch import choose
    from cudaopt.gemm.stats import paired_ratio
    from cudaopt.gemm.timing import time_gpu

    rows = []
    for m, n, k in shapes:
        choice = choose(m, n, k).as_ours()
        ws_bytes = _lib.workspace_bytes(m, n, choice.splits)
        sets = num_sets(m, n, k)
        x = make_inputs(m, n, k, sets, ws_bytes, False)

        def launch(lib, i, out=None):
            _lib.launch_ours(x.a[i].data_ptr(), x.b[i].data_ptr(), (out if out is not None else x.c[i]).data_ptr(),
                             m, n, k, choice.config, choice.splits, x.ws.data_ptr(), ws_bytes, _stream(), lib=lib)

        row = {"m": m, "n": n, "k": k, "choice": choice.label()}
        try:
            ca, cb = torch.empty_like(x.c[0]), torch.empty_like(x.c[0])
            launch(lib_a, 0, ca)
            launch(lib_b, 0, cb)
            torch.cuda.synchronize()
            row["bitwise"] = bool(torch.equal(ca, cb))
            per_round: dict[str, list[float]] = {}
            t = time_gpu({"A": lambda i: launch(lib_a, i), "B": lambda i: launch(lib_b, i)}, sets, rounds=args.rounds,
                         per_round=per_round)
            row.update(a_us=t["A"], b_us=t["B"], a_over_b=paired_ratio(per_round, ("A",), "B"))
        except Exception as e:  # noqa: BLE001  (a failing shape is a row with its error, the others go on)
            torch.cuda.synchronize()
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        rows.append(row)
        ratio = row.get("a_over_b")
        print(f"{m:>6}x{n}x{k:<6} {row['choice']:>36}  A {row.get('a_us', math.nan):8.3f} us  "
              f"B {row.get('b_us', math.nan):8.3f} us  A/B {ratio if ratio else math.nan:6.3f}  "
              f"{'bitwise' if row.get('bitwise') else 'DIFFERS' if 'bitwise' in row else row.get('error', '')}",
              flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    differs = [r for r in rows if r.get("bitwise") is False]
    print(f"build A against build B ({' '.join(args.define)}), paired within rounds:")
    print("\n".join(summarise(rows)))
    print(f"outputs: {len(rows) - len(differs) - sum('error' in r for r in rows)} bitwise equal, {len(differs)} differ, "
          f"{sum('error' in r for r in rows)} failed")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
