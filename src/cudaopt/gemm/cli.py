"""Entry points for the `cudaopt bench-gemm` and `cudaopt tune-gemm` commands (wired by the CLI).

Plain functions with keyword arguments; each returns what it wrote. Shapes are given as a spec
string: 'grid' (the 1,000 shapes), 'sample:N[:seed]', 'offgrid:N[:seed]' (shapes off the grid), a file of
'M N K' lines, or 'MxNxK,...'.
Both continue where an earlier (killed or budget-limited) run into the same place stopped:
bench_gemm through out_dir/shapes.jsonl (resume=True), tune_gemm through the table (merge=True).
shard='i/n' takes only the shapes whose index in the list % n == i.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cudaopt.gemm.shapes import Shape, parse_shapes


def check_args(shapes: str, mode: str = "offline", timing: str = "gpu", shard: str | None = None,
               budget_s: float | None = None, rounds: int = 1, order: str = "list") -> list[Shape]:
    """Validate the options before any GPU work; returns the shapes. ValueError with one clear line."""
    from cudaopt.gemm.bench import ORDERS, parse_shard
    from cudaopt.gemm.build import BuildError, check_defines, env_defines

    if mode not in ("offline", "server"):
        raise ValueError(f"mode {mode!r}: use 'offline' or 'server'")
    if timing not in ("gpu", "call"):
        raise ValueError(f"timing {timing!r}: use 'gpu' or 'call'")
    if order not in ORDERS:
        raise ValueError(f"order {order!r}: use {' or '.join(repr(o) for o in ORDERS)}")
    parse_shard(shard)
    try:  # a diagnostic build asked for through the environment: its defines checked before anything is built
        check_defines(env_defines())
    except BuildError as e:
        raise ValueError(f"CUDAOPT_GEMM_DEFINES: {e}") from None
    if budget_s is not None and budget_s < 0:
        raise ValueError(f"budget {budget_s}: give seconds >= 0")
    if rounds < 1:
        raise ValueError(f"rounds {rounds}: give at least 1")
    try:
        return parse_shapes(shapes)
    except (ValueError, OSError) as e:
        raise ValueError(str(e) or f"shapes {shapes!r}: cannot read") from None


def bench_gemm(shapes: str = "grid", mode: str = "offline", timing: str = "gpu", out_dir: str | Path = "runs/gemm",
               table: str | None = None, baselines: bool = True, check: bool = True, rounds: int = 15,
               seed: int = 0, budget_s: float | None = None, resume: bool = True, shard: str | None = None,
               order: str = "list") -> Path:
    """Benchmark ours vs torch.matmul / cuBLAS / cuBLASLt; writes shapes.csv, summary.csv/.md,
    speedup.png and checks.json under out_dir and returns out_dir. Each shape is logged to
    out_dir/shapes.jsonl as it finishes; resume=True skips logged shapes and reports over all of
    them, resume=False starts the log afresh. order="shuffled": the shapes in a seeded random order, so that a
    budget that cuts the run short leaves out every class alike."""
    from cudaopt.gemm.bench import run_bench, write_outputs

    shape_list = check_args(shapes, mode, timing, shard, budget_s, rounds, order)
    out = Path(out_dir)
    res = run_bench(shape_list, mode=mode, timing=timing, table_path=table, with_blas=baselines,
                    check=check, rounds=rounds, seed=seed, budget_s=budget_s, out_dir=out, resume=resume,
                    shard=shard, order=order)
    write_outputs(res, out, f"HGEMM {mode} / {timing} timing")
    return out


def tune_gemm(shapes: str = "grid", out: str | Path = "runs/gemm/tuned.json", rounds: int = 5,
              budget_s: float | None = None, merge: bool = True, seed: int = 0, retune: bool = False,
              shard: str | None = None) -> Path:
    """Tune our kernel configs per shape on the GPU and write (or merge into) the JSON table at out,
    after every shape. With merge, shapes already in the table are skipped unless retune."""
    from cudaopt.gemm.build import env_defines
    from cudaopt.gemm.tune import run_tune

    shape_list = check_args(shapes, shard=shard, budget_s=budget_s, rounds=rounds)
    defines = env_defines()
    if defines:  # (the table would be tuned on kernels that do not ship)
        print(f"tune-gemm: our kernels are a diagnostic build, CUDAOPT_GEMM_DEFINES = {' '.join(defines)}",
              file=sys.stderr)
    run_tune(shape_list, Path(out), rounds=rounds, budget_s=budget_s, merge=merge, seed=seed, retune=retune,
             shard=shard)
    return Path(out)


def check_table_for_gpu_args(grids: int, rounds: int, margin: float, bt_margin: float = 1.02, verify: int = 2) -> None:
    """ValueError for gemm-table-for-gpu's arguments that cannot work (checked before the GPU is asked for)."""
    if grids < 1 or rounds < 1:
        raise ValueError("give --grids and --rounds of at least 1")
    if verify < 0:
        raise ValueError(f"--verify {verify}: give 0 (keep every move) or more")
    for name, value in (("--margin", margin), ("--bt-margin", bt_margin)):
        if not value >= 1.0:
            raise ValueError(f"{name} {value}: give 1.0 or more")


def table_for_gpu(out: str | Path, device: str, base: str | Path, grids: int = 2, rounds: int = 20,
                  margin: float = 1.01, bt: bool = True, bt_margin: float = 1.02, bench=None,
                  log=print, verify: int = 2) -> tuple[Path, int, int, int, int]:
    """A table for the GPU `device` from whole grids run on it (session 44's H100 table, as one command): the base
    table (the shipped one hgemm would take here) copied to out/base.json, its grid run `grids` times into
    out/grid1.. (bench-gemm, offline, GPU timing; each resumable, so a rerun continues), then its shapes moved
    between ours, torch.matmul and cuBLASLt's autotuned NN algorithm where every grid agrees by `margin`
    (grid_choice.rechoose), written to out/tuned.json with `device`. With `bt` (the default) the grids also time
    hgemm's B^T route (CUDAOPT_GEMM_BENCH_BT=1) and the route is rechosen too (grid_choice.rechoose_bt, paired, by
    `bt_margin`): a base table's cuBLASLt TN algorithm indices were chosen on another card, where they name other
    kernels (session 45: 121-125 shapes under 0.98x of cuBLASLt TN on an H100 before, 30-40 after); and (session 49)
    the layout hgemm reads when handed both (grid_choice.rechoose_both, paired, where every grid reads the B^T route
    faster at all: the check below sends back what reads slower on its own). The grids'
    proposal (out/proposed.json) is then judged move by move: with `verify` repeats (0: not at all) the moved shapes
    are timed under the base table and the proposal alternately (moves.verify_moves, into out/moves/) and a move
    that reads slower there goes back (session 48: two grids of one table differ by more than a whole proposal's
    worth of shapes under 0.98x, so a grid cannot judge one). Returns (its path, the NN moves kept, the B^T moves
    kept, the both-layout moves kept, the moves sent back). A rerun keeps out/base.json and must keep `bt`: the grids it resumes ran that table
    that way. bench: bench_gemm's stand-in (tests)."""
    import os

    from cudaopt.gemm.bench import BT_BENCH_ENV
    from cudaopt.gemm.grid_choice import load_grid, rechoose, rechoose_both, rechoose_bt, table_data
    from cudaopt.gemm.moves import moved_routes, verify_moves
    from cudaopt.gemm.tune import write_json_atomic

    check_table_for_gpu_args(grids, rounds, margin, bt_margin, verify)
    out = Path(out)
    mode, mode_file = ("bt" if bt else "nn"), out / "grid_mode.txt"
    if mode_file.is_file() and mode_file.read_text().strip() != mode:
        raise ValueError(f"{out} holds grids run {'without' if bt else 'with'} the B^T route: rerun with "
                         f"{'--no-bt' if bt else '--bt'}, or give a new --out")
    out.mkdir(parents=True, exist_ok=True)
    mode_file.write_text(mode + "\n")
    base_copy = out / "base.json"
    if not base_copy.is_file():
        write_json_atomic(base_copy, table_data(base))  # (GridError, a ValueError, where it is not a table)
    data = table_data(base_copy)
    log(f"base table: {base_copy} ({len(data['entries'])} shapes, tuned on {data.get('device') or 'an unnamed GPU'})")
    bench = bench or bench_gemm
    was = os.environ.get(BT_BENCH_ENV)
    try:
        os.environ[BT_BENCH_ENV] = "1" if bt else "0"
        for i in range(1, grids + 1):
            log(f"== grid {i} of {grids} on {device}{' with the B^T route' if bt else ''} (resumable: a rerun "
                "continues it)")
            bench(shapes="grid", out_dir=out / f"grid{i}", table=str(base_copy), rounds=rounds, resume=True)
    finally:
        if was is None:
            os.environ.pop(BT_BENCH_ENV, None)
        else:
            os.environ[BT_BENCH_ENV] = was
    loaded = [load_grid(out / f"grid{i}" / "shapes.csv") for i in range(1, grids + 1)]
    entries, moves = rechoose(data["entries"], loaded, margin)  # (GridError: a ValueError)
    bt_moves = both_moves = []
    if bt:  # (after the NN moves: a shape whose NN choice moved keeps a default route the grids did not time)
        entries, bt_moves = rechoose_bt(entries, loaded, bt_margin, paired=True)
        entries, both_moves = rechoose_both(entries, loaded, 1.0, paired=True)
    proposed = {**data, "entries": entries, "device": device}
    write_json_atomic(out / "proposed.json", proposed)
    back = []
    if verify > 0 and (moves or bt_moves or both_moves):
        entries, back = verify_moves(out / "moves", data, proposed, verify, rounds, bt, bench, log)
    kept = [moved_routes(b, e) for b, e in zip(data["entries"], entries) if b != e]
    table = out / "tuned.json"
    write_json_atomic(table, {**proposed, "entries": entries})
    return table, sum("nn" in r for r in kept), sum("bt" in r for r in kept), sum("both" in r for r in kept), len(back)
