"""The HGEMM benchmark: our kernels against torch.matmul, cuBLAS and cuBLASLt, per shape.

For each shape: allocate several input sets (rotated, so L2 does not keep them), build one launch
per candidate, time them interleaved in random order (`timing`), run the correctness checks on
ours, and finally summarise ours (and the dispatcher) against every baseline, per work class.

Candidates (all fp16 in/out):
  ours                  our kernel (wgmma or mma.sync) with the tuned (or heuristic) config; no cuBLAS
                        inside; launched with programmatic dependent launch (PDL, _lib.set_pdl)
  ours_nopdl            the same kernel launched without PDL, only with CUDAOPT_GEMM_PDL_AB=1 (the
                        "ours vs ours_nopdl" row is what PDL buys; it matters only back to back)
  dispatch              cudaopt.gemm.hgemm: ours, or where the table says ours lose torch.matmul or its
                        tuned cuBLASLt algorithm (NN; `lt_fallback`)
  torch                 torch.matmul(a, b, out=c)
  cublas_nn, cublas_tn  cublasGemmEx, CUBLAS_COMPUTE_32F; TN reads a pre-transposed B (N x K)
  lt_heur_{nn,tn}       cuBLASLt, heuristic top-1, fp32 compute and scale, 64 MiB workspace
  lt_auto_{nn,tn}       cuBLASLt, fastest of up to 16 heuristic algorithms timed on this shape
  cublas_nn_fp16compute cublasGemmEx with CUBLAS_COMPUTE_16F: fp16 accumulate, labelled, not a peer
"*_max" baselines are the faster of NN and TN per shape, as in the CUDA-L2 seed.

Resumable: with an output folder, every finished shape is appended at once to shapes.jsonl there
(times of every candidate and the check, or the error of a shape that raised); a rerun with resume
skips the logged shapes and reports over all of them, so a long grid runs as several killed or
budget-limited calls. shard 'i/n' runs only the shapes whose index % n == i.
"""

from __future__ import annotations

import csv
import gc
import json
import math
import os
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from cudaopt.gemm import _lib
from cudaopt.gemm import build as _build
from cudaopt.gemm.configs import NUM_SMS_H200, Choice, cluster_offered, split_choices
from cudaopt.gemm.dispatch import choose, load_table
from cudaopt.gemm.lt_fallback import LT_FALLBACK_WORKSPACE
from cudaopt.gemm.shapes import Shape
from cudaopt.gemm.stats import (SpeedupSummary, aa_spread, max_of, paired_ratios, paired_upper_bounds, ratios,
                                summarize_by_class)
from cudaopt.gemm.timing import L2_FLUSHED, PROTOCOL_LINE, l2_flush_on, time_call, time_gpu

LT_WORKSPACE = LT_FALLBACK_WORKSPACE  # the fallback's too: the heuristic's list depends on it
ROTATE_BYTES = 256 << 20  # input bytes per shape across rotated sets: several times the 60 MB L2
BASELINES = ("torch", "cublas_nn", "cublas_tn", "cublas_max", "lt_heur_nn", "lt_heur_tn", "lt_heur_max",
             "lt_auto_nn", "lt_auto_tn", "lt_auto_max", "cublas_nn_fp16compute")
BT_BASELINES = ("torch_bt", "cublas_tn", "lt_auto_tn")  # a caller holding B transposed: what it could run instead


@dataclass
class ShapeInputs:
    a: list
    b: list
    bt: list
    c: list
    ws: object  # fp32 split-K workspace (or None)
    lt_ws: object


def num_sets(m: int, n: int, k: int) -> int:
    per_set = 2 * (m * k + 2 * k * n + m * n)
    return max(2, min(8, math.ceil(ROTATE_BYTES / per_set)))


def make_inputs(m: int, n: int, k: int, sets: int, ws_bytes: int, with_blas: bool,
                transposed_b: bool = True) -> ShapeInputs:
    """Input sets for one shape; with_blas adds cuBLASLt's workspace and (unless not transposed_b) the
    pre-transposed B the TN baselines read."""
    import torch

    a = [torch.randn((m, k), device="cuda", dtype=torch.float16) for _ in range(sets)]
    b = [torch.randn((k, n), device="cuda", dtype=torch.float16) for _ in range(sets)]
    bt = [x.t().contiguous() for x in b] if with_blas and transposed_b else []
    c = [torch.empty((m, n), device="cuda", dtype=torch.float16) for _ in range(sets)]
    ws = torch.zeros(max(ws_bytes, 4) // 4, device="cuda", dtype=torch.float32)  # split-K counters zero
    lt_ws = torch.empty(LT_WORKSPACE, device="cuda", dtype=torch.uint8) if with_blas else None
    return ShapeInputs(a, b, bt, c, ws, lt_ws)


def _stream() -> int:
    import torch

    return torch.cuda.current_stream().cuda_stream


def ours_launch(x: ShapeInputs, m: int, n: int, k: int, choice: Choice, pdl: bool = True, lib=None):
    """One call of our kernel on input set i; pdl=False launches it without programmatic dependent
    launch (the setting a CUDA graph captures, so both can be timed side by side). lib: another build of
    the kernel library (_lib.load_kernels; benchmarks/gemm_build_ab.py), default the package's own."""
    ws_bytes = _lib.workspace_bytes(m, n, choice.splits)
    if choice.streamk:  # (session 47) the stream-K tail twin, with a workspace of its own
        sk_ws = _lib.new_streamk_workspace(choice.config)

        def run(i: int) -> None:
            _lib.launch_ours_streamk(x.a[i].data_ptr(), x.b[i].data_ptr(), x.c[i].data_ptr(), m, n, k, choice.config,
                                     sk_ws.data_ptr(), sk_ws.numel() * 4, _stream(), lib=lib)
        return run if pdl else launch_under(run, _lib.set_pdl, False, True)

    def run(i: int) -> None:
        _lib.launch_ours(x.a[i].data_ptr(), x.b[i].data_ptr(), x.c[i].data_ptr(), m, n, k, choice.config,
                         choice.splits, x.ws.data_ptr(), ws_bytes, _stream(), lib=lib)

    return run if pdl else launch_under(run, _lib.set_pdl, False, True)


def launch_under(run, setter, value, restore):
    """`run` (a launch on input set i) made with a library setting: setter(value) before the call, setter(restore)
    after it, whatever happens (a CUDA graph captured from it keeps what the setting chose at capture)."""
    def call(i: int) -> None:
        setter(value)
        try:
            run(i)
        finally:
            setter(restore)
    return call


def torch_launch(x: ShapeInputs):
    """One torch.matmul call on input set i, into the same output buffer as ours."""
    import torch

    return lambda i: torch.matmul(x.a[i], x.b[i], out=x.c[i])


BT_BENCH_ENV = "CUDAOPT_GEMM_BENCH_BT"  # "1": also time our B^T twins ("ours_bt", on x.bt) where the choice has one,
# and (session 42) what a caller holding B transposed (nn.Linear's weight) gets: hgemm on x.bt's transposed view
# ("dispatch_bt", its B^T route) and torch.matmul on the same view ("torch_bt", that caller's baseline)


def bt_view_launches(x: ShapeInputs, choice: Choice) -> dict:
    """hgemm and torch.matmul handed B as the transposed view of x.bt (unit row stride), on input set i: the B^T
    route hgemm takes by default, and the torch.matmul a caller holding B^T would otherwise run."""
    import torch

    from cudaopt.gemm import hgemm

    views = [bt.t() for bt in x.bt]  # made once, untimed (session 50: a .t() per call is host time that call timing
    # charged these candidates and not the ones they are compared with; the seed's harness builds b_col_major once)
    return {"dispatch_bt": lambda i: hgemm(x.a[i], views[i], out=x.c[i], workspace=x.ws, choice=choice),
            "torch_bt": lambda i: torch.matmul(x.a[i], views[i], out=x.c[i]),
            # (session 49) the seed's protocol: hgemm handed B in both layouts, reading the one its table names
            "dispatch_both": lambda i: hgemm(x.a[i], x.b[i], out=x.c[i], workspace=x.ws, choice=choice,
                                             b_col_major=views[i])}


def ours_bt_launch(x: ShapeInputs, m: int, n: int, k: int, choice: Choice):
    """One call of choice's B^T twin (session 39) on input set i: B read from the pre-transposed x.bt, the TN
    baselines' operand; its split-K partials in x.ws."""
    ws_bytes = _lib.workspace_bytes(m, n, choice.splits)

    def run(i: int) -> None:
        _lib.launch_ours_bt(x.a[i].data_ptr(), x.bt[i].data_ptr(), x.c[i].data_ptr(), m, n, k, choice.config,
                            choice.splits, x.ws.data_ptr(), ws_bytes, _stream())
    return run


def blas_launches(x: ShapeInputs, m: int, n: int, k: int, plans: dict) -> dict:
    lib = _lib.blas()

    def gemm_ex(layout: int, compute: int):
        bs = x.b if layout == 0 else x.bt

        def run(i: int) -> None:
            st = lib.cudaopt_cublas_gemm(x.a[i].data_ptr(), bs[i].data_ptr(), x.c[i].data_ptr(), m, n, k,
                                         layout, compute, _stream())
            if st:
                raise _lib.GemmError(f"cublasGemmEx status {st}")
        return run

    out = {"cublas_nn": gemm_ex(0, 0), "cublas_tn": gemm_ex(1, 0), "cublas_nn_fp16compute": gemm_ex(0, 1)}
    for layout, tag in ((0, "nn"), (1, "tn")):
        if layout in plans:
            out[f"lt_heur_{tag}"] = lt_launch(x, plans[layout], 0, layout)
            out[f"lt_auto_{tag}"] = lt_launch(x, plans[layout], plans[f"best{layout}"], layout)
    return out


def lt_launch(x: ShapeInputs, plan, algo: int, layout: int = 0):
    """One call of algorithm `algo` of a cuBLASLt plan (layout 0: NN, 1: TN, reading x.bt) on input set i."""
    bs = x.b if layout == 0 else x.bt

    def run(i: int) -> None:
        plan.run(algo, x.a[i].data_ptr(), bs[i].data_ptr(), x.c[i].data_ptr(), x.lt_ws.data_ptr(), LT_WORKSPACE,
                 _stream())
    return run


def lt_plans(x: ShapeInputs, m: int, n: int, k: int, sets: int, rng: random.Random) -> dict:
    """cuBLASLt plans for NN and TN, each with its fastest returned algorithm found by timing."""
    plans: dict = {}
    for layout in (0, 1):
        try:
            plan = _lib.LtPlan(m, n, k, layout, LT_WORKSPACE)
        except _lib.GemmError:
            continue
        plans[layout] = plan
        times = time_gpu({str(j): lt_launch(x, plan, j, layout) for j in range(plan.count)}, sets, rounds=3, rng=rng)
        finite = {int(j): t for j, t in times.items() if math.isfinite(t)}
        plans[f"best{layout}"] = min(finite, key=finite.get) if finite else 0
    return plans


def time_with_lt_auto(cands: dict, x: ShapeInputs, m: int, n: int, k: int, sets: int, rounds: int,
                      rng: random.Random) -> dict[str, float]:
    """time_gpu over `cands` plus cuBLASLt autotuned ("lt_auto_nn" / "lt_auto_tn": each layout's fastest
    returned algorithm, lt_plans), interleaved in one run; the plans are closed afterwards."""
    plans = lt_plans(x, m, n, k, sets, rng)
    try:
        lt = {key: f for key, f in blas_launches(x, m, n, k, plans).items() if key.startswith("lt_auto")}
        return time_gpu({**cands, **lt}, sets, rounds=rounds, rng=rng)
    finally:
        for layout in (0, 1):
            if layout in plans:
                plans[layout].close()


def lt_auto_best(t: dict[str, float]) -> float:
    """cuBLASLt autotuned max for one shape: the faster of its NN and TN times (inf where neither ran)."""
    return min(t.get("lt_auto_nn", math.inf), t.get("lt_auto_tn", math.inf))


@dataclass
class BenchResult:
    times: dict[str, dict[Shape, float]] = field(default_factory=dict)  # candidate -> shape -> us
    checks: dict[Shape, dict] = field(default_factory=dict)
    paired: dict[str, dict[Shape, float]] = field(default_factory=dict)  # comparison -> shape -> ratio
    # (session 41) comparison -> shape -> one-sided 95% upper bound of that paired ratio (stats.median_upper_bound)
    paired_hi: dict[str, dict[Shape, float]] = field(default_factory=dict)
    summaries: list[SpeedupSummary] = field(default_factory=list)
    skipped: list[Shape] = field(default_factory=list)  # not run: time budget, or the CUDA context died
    failed: dict[Shape, str] = field(default_factory=dict)  # the benchmark raised on this shape: the error
    seconds: float = 0.0
    aborted: str = ""  # why the run stopped before its shapes were done (CUDA context unusable), else ""
    remaining: int = 0  # shapes of the list with no log record yet (other shards' too): for the next run
    build: tuple[str, ...] = ()  # a diagnostic kernel library's defines (CUDAOPT_GEMM_DEFINES); () the shipped one
    protocol: dict = field(default_factory=dict)  # (session 53) run_protocol: its seed, the L2 flush; {} the old default
    timing: str = "gpu"  # the run's timing ("gpu" or "call"): whether the L2 flush applies to it at all
    # (session 59) the fingerprints (dispatch.table_digest) of the tables the summarised shapes were measured with:
    # one, unless a log written before session 59 is summarised without a run ("" for records that carry none)
    tables: tuple[str, ...] = ()


# --- bookkeeping: per-shape log, resume, shards (pure, no GPU) ------------------------------------

SHAPE_LOG = "shapes.jsonl"  # one JSON line per finished shape, in the output folder


def parse_shard(spec: str | None) -> tuple[int, int] | None:
    """'i/n' -> (i, n) with 0 <= i < n; None or '' -> None (all shapes)."""
    if spec is None or not str(spec).strip():
        return None
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(spec))
    if not m or int(m.group(2)) < 1 or int(m.group(1)) >= int(m.group(2)):
        raise ValueError(f"shard {spec!r}: give i/n with 0 <= i < n (e.g. 0/2 and 1/2)")
    return int(m.group(1)), int(m.group(2))


def shard_indices(count: int, shard: tuple[int, int] | None) -> list[int]:
    """Indices into the full shape list that this shard runs: index % n == i."""
    if shard is None:
        return list(range(count))
    i, n = shard
    return [j for j in range(count) if j % n == i]


def _num(x: float) -> float | None:
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None  # JSON has no NaN/inf


def shape_record(index: int, shape: Shape, mode: str, timing: str, times: dict[str, float] | None = None,
                 check: dict | None = None, error: str | None = None, fatal: bool = False,
                 seconds: float = 0.0, paired: dict[str, float] | None = None, build: tuple[str, ...] = (),
                 paired_hi: dict[str, float] | None = None, rounds: dict[str, list[float]] | None = None,
                 protocol: dict | None = None, table: str | None = None) -> dict:
    """One log line: a shape's times (every candidate, null = did not run), its within-round paired
    ratios (gpu timing) and check, or its error. `finished_at` (Unix seconds, session 29) lines a shape up with
    the card's clock samples of the same run (gpu_check.sh gemm_table_grid's clocks.csv). `build` (session 37): the
    defines of a diagnostic kernel library (CUDAOPT_GEMM_DEFINES), absent for the shipped one. `protocol` (session 52):
    how the run timed where not the default (its seed, the L2 flush), absent for the default. `table` (session 59): the
    fingerprint of the dispatch table the shape was measured with (dispatch.table_digest)."""
    m, n, k = shape
    rec = {"m": m, "n": n, "k": k, "index": index, "mode": mode, "timing": timing,
           "status": "failed" if error is not None else "ok", "seconds": round(seconds, 3),
           "finished_at": round(time.time(), 3)}
    if build:
        rec["build"] = list(build)
    if protocol:
        rec["protocol"] = dict(protocol)
    if table:
        rec["table"] = table
    if error is not None:
        rec.update(error=error, fatal=fatal)
    else:
        rec.update(times={name: _num(us) for name, us in (times or {}).items()}, check=check)
        if paired:
            rec["paired"] = {name: _num(r) for name, r in paired.items()}
        if paired_hi:
            rec["paired_hi95"] = {name: _num(r) for name, r in paired_hi.items()}
        if rounds:  # (session 41) every candidate's time in each round, in round order: any pairing can be read later
            rec["rounds"] = {name: [_num(float(f"{us:.4g}")) for us in ts] for name, ts in rounds.items()}
    return rec


def append_record(path: Path, rec: dict) -> None:
    """Append one JSON line and push it to disk (flush + fsync): a kill loses at most the shape in flight.

    One write per line in append mode; a partial last line (a kill mid-write) is closed first so
    the new record starts on its own line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    line = b"\n" + line
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def load_log(path: Path) -> dict[Shape, dict]:
    """Shape -> its last record in the log; unreadable lines (a line cut by a kill) are ignored."""
    out: dict[Shape, dict] = {}
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        try:
            rec = json.loads(line)
            shape = (int(rec["m"]), int(rec["n"]), int(rec["k"]))
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(rec, dict) and rec.get("status") in ("ok", "failed"):
            out[shape] = rec
    return out


def usable_records(records: dict[Shape, dict], shapes: list[Shape], mode: str, timing: str,
                   build: tuple[str, ...] = (), protocol: dict | None = None,
                   table: str | None = None) -> dict[Shape, dict]:
    """The records for shapes in this run's list, measured with the same mode and timing, of the same kernel
    library (a resumed run of another build measures its shapes afresh rather than mixing two builds' times), the
    same protocol (seed, L2 flush) and, where `table` is given, the same dispatch table (its table_digest; a record
    without one, from before session 59, does not match)."""
    wanted = set(shapes)
    return {s: r for s, r in records.items()
            if s in wanted and r.get("mode", mode) == mode and r.get("timing", timing) == timing
            and tuple(r.get("build", ())) == tuple(build) and (r.get("protocol") or {}) == (protocol or {})
            and (table is None or r.get("table") == table)}


def run_protocol(seed: int, timing: str) -> dict:
    """How a bench run times, where not the default: its seed (the shapes' order, inputs and round orders: grids
    meant as independent readings take different ones) and gpu timing's L2 flush (the default since session 53;
    records of runs before it, and of runs with CUDAOPT_GEMM_L2_FLUSH=0, carry none)."""
    return {**({"seed": seed} if seed else {}), **({"l2_flush": True} if timing == "gpu" and l2_flush_on() else {})}


def protocol_line(protocol: dict, gpu: bool = True) -> str:
    """summary.md's line on how the run timed (session 53): readers compare grids of one protocol only."""
    flush = (L2_FLUSHED if protocol.get("l2_flush")
             else "L2 not flushed (CUDAOPT_GEMM_L2_FLUSH=0, or a run before session 53)") if gpu else ""
    return f"{PROTOCOL_LINE} " + "; ".join(x for x in (f"seed {protocol.get('seed', 0)}", flush) if x)


def result_from_records(records: dict[Shape, dict]) -> BenchResult:
    """Times, checks and failures of the logged shapes, then the summaries over all of them."""
    res = BenchResult()
    for shape, rec in records.items():
        if rec.get("status") == "failed":
            res.failed[shape] = rec.get("error", "")
            continue
        for name, us in (rec.get("times") or {}).items():
            res.times.setdefault(name, {})[shape] = math.nan if us is None else float(us)
        if rec.get("check") is not None:
            res.checks[shape] = rec["check"]
        rounds = rec.get("rounds") or {}
        if rounds:  # (session 49) comparisons added since a log was written, read from the rounds it keeps (to 4
            # significant digits: the ratios it logged stay as logged)
            rec = {**rec, "paired": {**paired_ratios(rounds), **(rec.get("paired") or {})},
                   "paired_hi95": {**paired_upper_bounds(rounds), **(rec.get("paired_hi95") or {})}}
        for key, into in (("paired", res.paired), ("paired_hi95", res.paired_hi)):
            for name, r in (rec.get(key) or {}).items():
                if r is not None:
                    into.setdefault(name, {})[shape] = float(r)
    summarize_result(res)
    return res


TORCH_DISPATCH = Choice("torch").label()  # the dispatch label (check record) of a shape handed to torch.matmul


def aa_ratios(res: BenchResult, paired: bool = False, twin: str = "torch") -> dict[Shape, float]:
    """An A/A of the run (empty without checks): one kernel timed as two interleaved candidates, t_twin / t_dispatch.
    twin "torch": the shapes the table hands to torch.matmul, timed as dispatch and as torch. twin "ours" (session 40):
    the shapes it runs ours on, timed as dispatch and as ours (the same kernel of record; several times as many shapes,
    every class). paired: the within-round paired ratios of those shapes instead of the ratio of the two medians."""
    if twin == "torch":
        picked = {s for s, c in res.checks.items() if (c or {}).get("dispatch") == TORCH_DISPATCH}
        pair, invert = "dispatch vs torch", False  # (t_torch / t_dispatch)
    elif twin == "ours":
        picked = {s for s, c in res.checks.items()
                  if (c or {}).get("dispatch") and c.get("dispatch") == c.get("choice")}
        pair, invert = "ours vs dispatch", True  # (t_dispatch / t_ours, inverted)
    else:
        raise ValueError(f"twin {twin!r}: 'torch' or 'ours'")
    if paired:
        shape_ratios = {s: (1.0 / r if invert else r) for s, r in res.paired.get(pair, {}).items() if r}
    elif twin in res.times and "dispatch" in res.times:
        shape_ratios = ratios(res.times[twin], res.times["dispatch"])
    else:
        return {}
    return {s: r for s, r in shape_ratios.items() if s in picked}


def summarize_result(res: BenchResult) -> None:
    """Add the "*_max" baselines (faster of NN/TN) and the per-class summaries to res."""
    times = res.times
    if "cublas_nn" in times:
        times["cublas_max"] = max_of(times["cublas_nn"], times.get("cublas_tn", {}))
    if "lt_heur_nn" in times:
        times["lt_heur_max"] = max_of(times["lt_heur_nn"], times.get("lt_heur_tn", {}))
    if "lt_auto_nn" in times:
        times["lt_auto_max"] = max_of(times["lt_auto_nn"], times.get("lt_auto_tn", {}))
    res.summaries = []
    for who in ("ours", "dispatch"):
        for base in BASELINES:
            if base in times and who in times:
                res.summaries += summarize_by_class(f"{who} vs {base}", ratios(times[base], times[who]))
    for name, shape_ratios in res.paired.items():  # the same comparisons, ratios taken within rounds
        res.summaries += summarize_by_class(f"{name} (paired)", shape_ratios)
    if "ours_nopdl" in times:  # > 1: programmatic dependent launch made ours faster
        res.summaries += summarize_by_class("ours vs ours_nopdl", ratios(times["ours_nopdl"], times["ours"]))
        # The kernels against the baselines without that overlap: back to back, PDL lets our call start
        # while the previous one of ours finishes, which the baselines (and a call after a torch op) do not
        # get; session 19 read the whole offline lead over cuBLASLt autotuned to be that overlap.
        for base in ("torch", "cublas_max", "lt_auto_max"):
            if base in times:
                res.summaries += summarize_by_class(f"ours_nopdl vs {base}", ratios(times[base], times["ours_nopdl"]))
    if "ours_bt" in times:  # (CUDAOPT_GEMM_BENCH_BT=1, the shapes whose choice has a B^T twin) against the TN layouts
        for base in ("lt_auto_tn", "cublas_tn", "lt_auto_max", "ours"):
            if base in times:
                res.summaries += summarize_by_class(f"ours_bt vs {base}", ratios(times[base], times["ours_bt"]))
    if "dispatch_both" in times:  # (session 49) hgemm handed both layouts (the seed's protocol) against the same
        for base in BASELINES:  # baselines as dispatch: each of them may read either layout too ("*_max")
            if base in times:
                res.summaries += summarize_by_class(f"dispatch_both vs {base}", ratios(times[base], times["dispatch_both"]))
    if "dispatch_bt" in times:  # (session 42) a B^T caller: hgemm against torch.matmul and cuBLAS(Lt) on that B^T
        for base in BT_BASELINES:
            if base in times:
                res.summaries += summarize_by_class(f"dispatch_bt vs {base}", ratios(times[base], times["dispatch_bt"]))


# --- the GPU side: one shape, setup, health ---------------------------------------------------------

@dataclass
class BenchEnv:
    table: dict
    mode: str
    timing: str
    with_blas: bool
    check: bool
    rounds: int
    seed: int


def _bench_shape(index: int, shape: Shape, env: BenchEnv
                 ) -> tuple[dict[str, float], dict | None, dict[str, list[float]]]:
    """Time every candidate on one shape and check ours: (candidate -> us, check dict or None, every candidate's
    per-round times (gpu timing; {} for call timing)). The paired statistics are run_bench's, from those times."""
    import torch

    from cudaopt.gemm import hgemm
    from cudaopt.gemm.correctness import check_gemm

    m, n, k = shape
    rng = random.Random(env.seed * 1_000_003 + index)  # per shape: shards and resumed runs time alike
    torch.manual_seed(env.seed + index)
    choice = choose(m, n, k, env.table)
    ours_choice = choice.as_ours()
    sets = num_sets(m, n, k)
    x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, max(ours_choice.splits, choice.splits)), env.with_blas)
    cands = {"ours": ours_launch(x, m, n, k, ours_choice),
             "dispatch": lambda i, x=x, c=choice: hgemm(x.a[i], x.b[i], out=x.c[i], workspace=x.ws, choice=c),
             "torch": torch_launch(x)}
    if os.environ.get("CUDAOPT_GEMM_PDL_AB") == "1":  # what programmatic dependent launch buys, same run
        cands["ours_nopdl"] = ours_launch(x, m, n, k, ours_choice, pdl=False)
    bench_bt = os.environ.get(BT_BENCH_ENV) == "1" and bool(x.bt)
    with_bt = bench_bt and _lib.has_bt(ours_choice.config, ours_choice.splits)
    if with_bt:  # (session 39) the same kernel reading B transposed, beside the TN baselines given the same x.bt
        cands["ours_bt"] = ours_bt_launch(x, m, n, k, ours_choice)
    if bench_bt:  # every shape: the dispatcher's B^T route decides
        cands.update(bt_view_launches(x, choice))
    plans = {}
    lt_algos = {}  # (session 40) which cuBLASLt algorithm "lt_auto" timed: gemm-table-from-grids can hand a shape to it
    try:
        if env.with_blas:
            plans = lt_plans(x, m, n, k, sets, rng)
            cands.update(blas_launches(x, m, n, k, plans))
            lt_algos = {f"lt_auto_{tag}_algo": int(plans[f"best{layout}"]) for layout, tag in ((0, "nn"), (1, "tn"))
                        if layout in plans}
        per_round: dict[str, list[float]] = {}
        if env.timing == "gpu":
            t = time_gpu(cands, sets, rounds=env.rounds, server=(env.mode == "server"), rng=rng, per_round=per_round)
        else:
            t = time_call(cands, sets, rng=rng)
    finally:
        for layout in (0, 1):
            if layout in plans:
                plans[layout].close()
    del x, cands
    chk = None
    if env.check:
        r = check_gemm(lambda a, b, out, c=ours_choice: hgemm(a, b, out=out, choice=c), m, n, k, seed=env.seed + index)
        chk = {"correct": r.ok, "exact01": r.exact_ok, "normal": r.normal_ok, "nan": r.nan_ok,
               "guard": r.guard_ok, "rel_err": f"{r.rel_err:.3e}", "torch_rel_err": f"{r.ref_rel_err:.3e}",
               "choice": ours_choice.label(), "dispatch": choice.label(), **lt_algos}
        if "dispatch_bt" in t:  # (session 42) the B^T route the grid timed, for gemm-table-from-grids --bt
            chk["dispatch_bt"] = bt_route(choice, with_bt)
        if "dispatch_both" in t:  # (session 49) what hgemm read when handed both layouts
            chk["dispatch_both"] = "bt:" + chk["dispatch_bt"] if choice.both_bt else "nn:" + choice.label()
            if choice.both_bt:  # the route it read through the same checks, handed both layouts
                chk["both_correct"] = check_gemm(
                    lambda a, b, out, c=choice: hgemm(a, b, out=out, choice=c, b_col_major=b.t().contiguous().t()),
                    m, n, k, seed=env.seed + index).ok
        if with_bt:  # the twin through the same checks, B handed over transposed (a column of its own)
            chk["bt_correct"] = check_gemm(lambda a, b, out, c=ours_choice: _bt_call(a, b, out, c), m, n, k,
                                           seed=env.seed + index).ok
    return t, chk, per_round


def bt_route(choice: Choice, has_twin: bool) -> str:
    """The label of the route hgemm takes for a B held transposed (packed): the table's cuBLASLt TN algorithm
    (Choice.bt_label), the choice's B^T twin, or torch.matmul."""
    if choice.bt_algo >= 0:
        return choice.bt_label()
    return choice.label() + "_bt" if choice.backend == "ours" and has_twin else TORCH_DISPATCH


def _bt_call(a, b, out, choice: Choice):
    """hgemm's B^T path for check_gemm: b stored transposed, then choice's twin (an error where it refuses)."""
    import torch

    from cudaopt.gemm import _hgemm_bt

    m, k = a.shape
    if _hgemm_bt(torch, _lib, a, b.t().contiguous().t(), out, m, b.shape[1], k, choice, None) is None:
        raise _lib.GemmError(f"{choice.label()}: the B^T twin refused these operands")
    return out


def _gpu_setup(seed: int, with_blas: bool, log) -> bool:
    """Seed torch and load the cuBLAS baselines; returns whether they are available."""
    import torch

    torch.manual_seed(seed)
    if with_blas:
        try:
            _lib.blas()
        except _lib.GemmError as err:
            log(f"cuBLAS baselines unavailable, torch.matmul only: {err}")
            return False
    return with_blas


def _release() -> None:
    """Free cached GPU memory (and what a failed shape's traceback held); never raises."""
    gc.collect()
    try:
        import torch

        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001, S110 - a dead context: nothing more to free
        pass


def cuda_usable() -> bool:
    """Can this process still run work on the GPU (no sticky error such as an illegal address)?"""
    try:
        import torch

        torch.cuda.synchronize()
        return float((torch.ones(1, device="cuda") + 1).item()) == 2.0
    except Exception:  # noqa: BLE001
        return False


def _error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:500]


def _shape_line(pos: int, total: int, index: int, shape: Shape, t: dict, chk: dict | None, with_blas: bool) -> str:
    m, n, k = shape
    lt = min(t.get("lt_auto_nn", math.inf), t.get("lt_auto_tn", math.inf))
    return (f"[{pos}/{total}] #{index} {m}x{n}x{k} ours {t.get('ours', math.nan):.2f}us "
            f"torch {t.get('torch', math.nan):.2f}us " + (f"lt_auto_max {lt:.2f}us " if with_blas else "")
            + (f"ok={chk['correct']}" if chk is not None else ""))


ORDERS = ("list", "shuffled")


def run_bench(shapes: list[Shape], mode: str = "offline", timing: str = "gpu", table_path: str | None = None,
              with_blas: bool = True, check: bool = True, rounds: int = 15, seed: int = 0,
              budget_s: float | None = None, out_dir: str | Path | None = None, resume: bool = True,
              shard: str | None = None, log=print, order: str = "list") -> BenchResult:
    """Benchmark the shapes (this shard's, not yet in the log when resuming) until the budget is spent.

    With out_dir, each finished shape is appended to out_dir/shapes.jsonl at once; resume=True skips
    the shapes already there (a different mode/timing does not count), resume=False starts the log
    afresh. The result covers every logged shape of `shapes` (all shards), not only this run's. A
    shape whose benchmark raises is logged as failed; if the CUDA context is unusable afterwards the
    run stops there (res.aborted), keeping what is logged. Failed shapes are not retried on resume.
    order: "list" runs the shapes in the list's order (the grid's: M, then N, then K); "shuffled" (session 40) in an order
    drawn from `seed`, so that a run the budget cuts short leaves out shapes of every kind alike, not the largest M."""
    if mode not in ("offline", "server") or timing not in ("gpu", "call"):
        raise ValueError("mode is 'offline' or 'server'; timing is 'gpu' or 'call'")
    if order not in ORDERS:
        raise ValueError(f"order {order!r}: use one of {', '.join(ORDERS)}")
    picked = shard_indices(len(shapes), parse_shard(shard))
    t_start = time.perf_counter()
    log_path = Path(out_dir) / SHAPE_LOG if out_dir is not None else None
    kernel_build = _build.env_defines()  # what _lib.kernels() builds and loads
    if kernel_build:
        log(f"kernel library: a diagnostic build with CUDAOPT_GEMM_DEFINES = {' '.join(kernel_build)}")
    protocol = run_protocol(seed, timing)
    if protocol:
        log(f"protocol: {', '.join(f'{k}={v}' for k, v in protocol.items())}")
    records: dict[Shape, dict] = {}
    if log_path is not None:
        if resume:
            records = usable_records(load_log(log_path), shapes, mode, timing, kernel_build, protocol)
        else:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_text("")
    if order == "shuffled":  # (the whole list, then the logged ones out: a resumed run keeps the first run's order)
        random.Random(f"order:{seed}").shuffle(picked)
    todo = [i for i in picked if shapes[i] not in records]
    table = None  # (session 59) the table's fingerprint, known once there is something to measure
    if todo:
        if table_path is None:  # the shipped table of this GPU, as hgemm's first call would take it
            import torch

            from cudaopt.gemm import _table_for_device

            _table_for_device(torch)
        from cudaopt.gemm.dispatch import table_device, table_digest, table_path as in_use

        table = table_digest(table_path)
        log(f"table: {in_use(table_path)} (tuned on {table_device(table_path) or 'an unnamed GPU'}; "
            f"fingerprint {table})")
        same = usable_records(records, shapes, mode, timing, kernel_build, protocol, table)
        if len(same) < len(records):  # measured with another table (or before records named theirs): afresh, not mixed
            log(f"{len(records) - len(same)} logged shapes were measured with another table: measuring them afresh")
            records = same
            todo = [i for i in picked if shapes[i] not in records]
    if records:
        log(f"resuming from {log_path}: {len(picked) - len(todo)} of {len(picked)} shapes already done")
    skipped: list[Shape] = []
    aborted = ""
    if todo:
        env = BenchEnv(load_table(table_path), mode, timing, _gpu_setup(seed, with_blas, log), check, rounds, seed)
    for pos, idx in enumerate(todo):
        shape = shapes[idx]
        if budget_s is not None and time.perf_counter() - t_start > budget_s:
            skipped = [shapes[i] for i in todo[pos:]]
            log(f"time budget reached: {len(skipped)} shapes not run")
            break
        t0 = time.perf_counter()
        err = None
        try:
            t, chk, per_round = _bench_shape(idx, shape, env)
        except Exception as e:  # noqa: BLE001 - one shape's failure is that shape's result
            err = _error_text(e)
        if err is None:
            rec = shape_record(idx, shape, mode, timing, times=t, check=chk, seconds=time.perf_counter() - t0,
                               paired=paired_ratios(per_round), build=kernel_build,
                               paired_hi=paired_upper_bounds(per_round),
                               rounds=per_round, protocol=protocol, table=table)
            log(_shape_line(pos + 1, len(todo), idx, shape, t, chk, env.with_blas))
        else:
            _release()  # the traceback held the shape's inputs
            fatal = not cuda_usable()
            rec = shape_record(idx, shape, mode, timing, error=err, fatal=fatal, seconds=time.perf_counter() - t0,
                               build=kernel_build, protocol=protocol, table=table)
            log(f"[{pos + 1}/{len(todo)}] #{idx} {'x'.join(map(str, shape))} FAILED: {err}")
        records[shape] = rec
        if log_path is not None:
            append_record(log_path, rec)
        if err is not None and rec["fatal"]:
            skipped = [shapes[i] for i in todo[pos + 1:]]
            aborted = f"CUDA context unusable after {'x'.join(map(str, shape))} ({err}); {len(skipped)} shapes not run"
            log(f"stopping: {aborted}")
            break
    if todo:
        _release()
    if log_path is not None:  # the log is the record: it also holds other shards' shapes
        records.update(usable_records(load_log(log_path), shapes, mode, timing, kernel_build, protocol, table))
    res = result_from_records(records)
    res.tables = tuple(sorted({r.get("table", "") for r in records.values()}))
    res.skipped, res.aborted, res.build = skipped, aborted, kernel_build
    res.protocol, res.timing = dict(protocol), timing
    res.remaining = sum(1 for s in set(shapes) if s not in records)
    res.seconds = time.perf_counter() - t_start
    return res


def write_outputs(res: BenchResult, out_dir: Path, title: str) -> None:
    from cudaopt.gemm.report import (
        plot_speedups,
        summary_markdown,
        write_shape_csv,
        write_summary_csv,
    )

    out_dir.mkdir(parents=True, exist_ok=True)
    # (the within-round paired ratios beside the checks: "paired_ours_vs_torch" and the like, for later readers of
    # several grids, e.g. the floor on paired ratios across runs)
    extra = {s: dict(c or {}) for s, c in res.checks.items()}
    for name, shape_ratios in res.paired.items():
        for s, r in shape_ratios.items():
            extra.setdefault(s, {})["paired_" + name.replace(" ", "_")] = f"{r:.4f}"
    for name, shape_ratios in res.paired_hi.items():
        for s, r in shape_ratios.items():
            extra.setdefault(s, {})["paired_hi95_" + name.replace(" ", "_")] = f"{r:.4f}"
    write_shape_csv(out_dir / "shapes.csv", res.times, extra)
    write_summary_csv(out_dir / "summary.csv", res.summaries)
    n_ok = sum(1 for c in res.checks.values() if c["correct"])
    md = [f"## {title}", "", (f"shapes timed: {len(res.times.get('ours', {}))}; correct (all checks): "
                              f"{n_ok}/{len(res.checks)}; skipped for time: {len(res.skipped)}; "
                              f"wall {res.seconds:.0f} s"), ""]
    both = [c["both_correct"] for c in res.checks.values() if "both_correct" in c]
    if both:  # (session 49) hgemm handed both layouts, where it read the copy: its own line, like the count above
        md += [f"handed both layouts, reading the column-major copy: {sum(map(bool, both))}/{len(both)} correct (all "
               "checks)", ""]
    md += [protocol_line(res.protocol, gpu=res.timing == "gpu"), ""]
    if len(res.tables) > 1:  # (session 59) only a log from before records named their table can get here
        md += [f"WARNING: these shapes were measured with {len(res.tables)} different tables "
               f"({', '.join(t or 'unrecorded' for t in res.tables)}); rerun without resume to read one table", ""]
    elif res.tables and res.tables[0]:
        md += [f"table fingerprint: {res.tables[0]}", ""]
    if res.build:  # its own line, and in the title's reach: these are not the shipped kernels
        md += [f"kernel library: a diagnostic build, CUDAOPT_GEMM_DEFINES = {' '.join(res.build)} (not the shipped "
               "kernels)", ""]
    if res.failed:  # its own line: scripts grep the line above
        md += [f"failed shapes (the benchmark raised; not timed): {len(res.failed)}: "
               + "; ".join(f"{m}x{n}x{k} {e[:120]}" for (m, n, k), e in sorted(res.failed.items())), ""]
    if res.aborted:
        md += [f"run stopped early: {res.aborted}", ""]
    if res.remaining:
        md += [f"not run yet (this shard or others; rerun with resume to continue): {res.remaining} shapes", ""]
    md.append(summary_markdown(res.summaries, "t_ref / t_ours per baseline (ours, then dispatch)"))
    # The run's own noise floor for one shape's ratio (session 32; session 40: also on the shapes the table runs ours on)
    for twin, heading in (("torch", "torch.matmul timed as dispatch and as torch (shapes the table hands to torch)"),
                          ("ours", "our kernel timed as dispatch and as ours (shapes the table runs ours on)")):
        spread = aa_spread(aa_ratios(res, twin=twin))
        if not spread:
            continue
        md += ["", f"### A/A: {heading}", "",
               "| group | n | geomean ratio | sd | largest deviation |", "|---|---|---|---|---|"]
        md += [f"| {g} | {n} | {geo:.4f} | {100 * sd:.2f}% | {100 * dev:.1f}% |" for g, n, geo, sd, dev in spread]
        paired_spread = aa_spread(aa_ratios(res, paired=True, twin=twin))
        if paired_spread:  # (session 39) the same pairs, ratios taken within rounds
            md += ["", "Paired within rounds (the floor's second count reads these):", "",
                   "| group | n | geomean ratio | sd | largest deviation |", "|---|---|---|---|---|"]
            md += [f"| {g} | {n} | {geo:.4f} | {100 * sd:.2f}% | {100 * dev:.1f}% |"
                   for g, n, geo, sd, dev in paired_spread]
    md += floor_markdown(res, out_dir)
    (out_dir / "summary.md").write_text("\n".join(md))
    plot = {b: ratios(res.times[b], res.times["ours"]) for b in ("torch", "cublas_max", "lt_auto_max")
            if b in res.times and "ours" in res.times}
    if any(plot.values()):  # nothing timed yet (a budget of 0, or every shape failed): no plot
        plot_speedups(out_dir / "speedup.png", plot, title)
    (out_dir / "checks.json").write_text(json.dumps({f"{m}x{n}x{k}": c for (m, n, k), c in res.checks.items()}, indent=1))


def floor_markdown(res: BenchResult, out_dir: Path) -> list[str]:
    """summary.md's floor section (session 36): per baseline, the shapes dispatch runs below 0.98x of it and how many
    of those only cuBLAS's TN layout reaches (stats.dispatch_floor); floor.csv lists the cuBLASLt autotuned ones."""
    from cudaopt.gemm.stats import dispatch_floor

    def row(name: str, under: list) -> str:
        return (f"| {name} | {len(under)} | {sum(f.tn_only for f in under)} | "
                + (f"{under[0].ratio:.3f} ({'x'.join(map(str, under[0].shape))})" if under else "-") + " |")

    rows, listed = [], []
    paired = res.paired.get("dispatch vs lt_auto_max", {})
    hi = res.paired_hi.get("dispatch vs lt_auto_max", {})
    like = res.paired.get("lt_auto_nn vs dispatch", {})  # (dispatch / lt_auto_nn within rounds)
    for base in ("lt_auto_max", "lt_auto_nn", "cublas_max", "torch"):
        if base in res.times and res.times.get("dispatch"):
            under = dispatch_floor(res.times, base)
            rows.append(row(base, under))
            if base == "lt_auto_nn" and like:  # (session 42) like for like: the baseline reading B as given too
                rows.append(row(f"{base} (paired)", dispatch_floor(
                    res.times, base, shape_ratios={s: 1.0 / r for s, r in like.items() if r > 0})))
            if base == "lt_auto_max":
                listed = under
                if paired:  # (session 39) the same floor on ratios taken within rounds
                    rows.append(row(f"{base} (paired)", dispatch_floor(res.times, base, shape_ratios=paired)))
                if hi:  # (session 41) under the floor beyond the shape's own round-to-round noise: even the ratio's
                    # one-sided 95% upper bound is under 0.98x (on a true tie about none of 1,000 shapes would be)
                    rows.append(row(f"{base} (paired hi95)", dispatch_floor(res.times, base, shape_ratios=hi)))
    bt_rows = []  # (session 42) the B^T route against that caller's own baselines, which read the same B^T
    for base in BT_BASELINES if "dispatch_bt" in res.times else ():
        if base in res.times:
            under = {s: r for s, r in ratios(res.times[base], res.times["dispatch_bt"]).items() if r < 0.98}
            paired_bt = res.paired.get(f"dispatch_bt vs {base}")
            bt_rows.append(f"| {base} | {len(res.times['dispatch_bt'])} | {len(under)} | "
                           + ("-" if paired_bt is None else str(sum(r < 0.98 for r in paired_bt.values()))) + " | "
                           + (f"{min(under.values()):.3f} ({'x'.join(map(str, min(under, key=under.get)))})"
                              if under else "-") + " |")
    if bt_rows:
        bt_rows = ["", "### B held transposed (nn.Linear's layout): hgemm's B^T route (dispatch_bt) under 0.98x", "",
                   "| baseline | shapes | under 0.98x | paired | slowest |", "|---|---|---|---|---|", *bt_rows]
    bt_rows += both_floor_markdown(res)
    if not rows:
        return bt_rows
    with open(out_dir / "floor.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["m", "n", "k", "dispatch", "ratio", "best_nn", "tn_gain", "tn_only", "paired_ratio", "paired_hi95"])
        for fl in listed:
            p, h = paired.get(fl.shape), hi.get(fl.shape)
            w.writerow([*fl.shape, res.checks.get(fl.shape, {}).get("dispatch", ""), f"{fl.ratio:.4f}", fl.best_nn,
                        f"{fl.tn_gain:.4f}", int(fl.tn_only), "" if p is None else f"{p:.4f}",
                        "" if h is None else f"{h:.4f}"])
    return ["", "### Dispatcher floor: shapes under 0.98x of a baseline (floor.csv: those of cuBLASLt autotuned max)",
            "", "TN only: the baseline's TN layout (B pre-transposed) beats every candidate that reads B as given by "
            "more than 2% in this run; no table choice reaches those. (paired hi95): shapes whose within-round ratio's "
            "one-sided 95% upper bound is under 0.98x, under the floor beyond their own noise. lt_auto_nn: the same "
            "floor like for like, against cuBLASLt autotuned reading B as given.", "",
            "| baseline | under 0.98x | TN only | slowest |", "|---|---|---|---|", *rows, *bt_rows]


def both_floor_markdown(res: BenchResult) -> list[str]:
    """(session 49) The floor of hgemm handed B in both layouts (dispatch_both, the seed's protocol: its harness hands
    every function b and a column-major copy, untimed, and "max" takes the faster layout of each baseline): the
    shapes under 0.98x of each baseline, on the two medians, within rounds (paired) and beyond the shape's own
    round-to-round noise (paired hi95); [] where the run did not time it."""
    if not res.times.get("dispatch_both"):
        return []
    from cudaopt.gemm.stats import dispatch_floor

    rows = []
    for base in ("lt_auto_max", "cublas_max", "torch"):
        if base not in res.times:
            continue
        cols = [dispatch_floor(res.times, base, who="dispatch_both")]
        for source in (res.paired, res.paired_hi):
            got = source.get(f"dispatch_both vs {base}")
            cols.append(None if got is None else dispatch_floor(res.times, base, shape_ratios=got, who="dispatch_both"))
        slowest = min((c[0] for c in cols if c), key=lambda f: f.ratio, default=None)
        rows.append(f"| {base} | {len(res.times['dispatch_both'])} | "
                    + " | ".join("-" if c is None else str(len(c)) for c in cols) + " | "
                    + (f"{slowest.ratio:.3f} ({'x'.join(map(str, slowest.shape))})" if slowest else "-") + " |")
    return ["", "### B handed in both layouts (the seed's protocol): hgemm's dispatch_both under 0.98x", "",
            "The seed's harness hands every function B and its column-major copy (untimed); each \"*_max\" baseline "
            "takes its faster layout, and hgemm reads the layout its table names for the shape (both_layouts).", "",
            "| baseline | shapes | under 0.98x | paired | paired hi95 | slowest |", "|---|---|---|---|---|---|", *rows]


# --- the wgmma comparison (scripts/gpu_gemm.sh's last step): every wgmma (config, splits) vs cuBLASLt ---

QUICK_REL_ERR = 2e-3  # every timed wgmma candidate's output on input set 0 vs fp32 (the smoke test's bound)


def wgmma_compare_choices(m: int, n: int, k: int, configs, num_sms: int = NUM_SMS_H200) -> list[Choice]:
    """Every given wgmma config, each with the K splits the tuner would time (`split_choices`: more
    than 1 only for generation 2 where tiles < #SMs and each split keeps >= 2 k-blocks); the 2x1
    cluster configs only where `cluster_offered` (tiles >= 2 x #SMs)."""
    return [Choice("ours", c.id, s) for c in configs if cluster_offered(c, m, n, num_sms)
            for s in split_choices(c, m, n, k, num_sms)]


def _compare_time_shape(m: int, n: int, k: int, choices: list[Choice], mma: Choice, rounds: int,
                        rng: random.Random) -> tuple[dict[str, float], dict[str, float]]:
    """GPU part of one comparison shape: times of every wgmma choice (by label), "mma", "torch",
    "lt_auto_nn/tn", interleaved; and each wgmma choice's relative error on input set 0 against an
    fp32 reference (one extra launch each, after timing: the split-K results are all checked)."""
    import torch

    sets = num_sets(m, n, k)
    ws = max(_lib.workspace_bytes(m, n, c.splits) for c in [*choices, mma])
    x = make_inputs(m, n, k, sets, ws, with_blas=True)
    cands = {c.label(): ours_launch(x, m, n, k, c) for c in choices}
    cands["mma"] = ours_launch(x, m, n, k, mma)
    cands["torch"] = torch_launch(x)
    t = time_with_lt_auto(cands, x, m, n, k, sets, rounds, rng)
    ref = x.a[0].float() @ x.b[0].float()
    errs = {}
    for c in choices:
        x.c[0].fill_(float("nan"))  # a launch that writes nothing cannot pass
        try:
            ours_launch(x, m, n, k, c)(0)
            torch.cuda.synchronize()
            err = ((x.c[0].float() - ref).norm() / ref.norm()).item()
        except Exception:  # noqa: BLE001 - a refused or failed launch is that candidate's failure
            err = math.inf
        errs[c.label()] = err if math.isfinite(err) else math.inf
    del x, cands
    return t, errs


def _compare_full_check(choice: Choice, m: int, n: int, k: int) -> bool:
    """All correctness checks (0/1 exact, normal bound, NaN rows, guard band) on one choice."""
    from cudaopt.gemm import hgemm
    from cudaopt.gemm.correctness import check_gemm

    return check_gemm(lambda a, b, out, c=choice: hgemm(a, b, out=out, choice=c), m, n, k).ok


def _fastest(times: dict[str, float], labels) -> str | None:
    ok = [lbl for lbl in labels if lbl in times and math.isfinite(times[lbl])]
    return min(ok, key=times.get) if ok else None


def run_wgmma_compare(shapes: list[Shape], budget_s: float, out_dir: Path | None, configs=None, rounds: int = 7,
                      seed: int = 1, num_sms: int = NUM_SMS_H200, log=print) -> dict:
    """Per shape: every wgmma (config, splits) candidate, the mma.sync heuristic choice, torch.matmul
    and cuBLASLt autotuned (NN/TN) timed interleaved; every wgmma candidate's output checked against
    fp32 on one input set (a candidate failing it cannot be "best"); full checks on the best
    (config, splits), the best generation-2 one, the best without split-K and the best with split-K.
    Writes summary.md and shapes.json to out_dir; returns {"rows", "summaries", "markdown"}."""
    from cudaopt.gemm.configs import KERNEL_CONFIGS, WGMMA_CONFIGS
    from cudaopt.gemm.dispatch import heuristic_choice
    from cudaopt.gemm.report import summary_markdown
    from cudaopt.gemm.shapes import flops

    configs = WGMMA_CONFIGS if configs is None else configs
    rng, t0, rows = random.Random(seed), time.perf_counter(), []
    keys = ("wgmma_best", "wgmma_nosplit", "wgmma_splitk", "gen1_best", "gen2_best", "mma", "torch",
            "lt_auto_nn", "lt_auto_tn")
    times: dict[str, dict[Shape, float]] = {key: {} for key in keys}
    quick_failures: list[str] = []
    for m, n, k in shapes:
        if time.perf_counter() - t0 > budget_s:
            log("budget reached")
            break
        s = (m, n, k)
        mma = heuristic_choice(m, n, k)
        choices = wgmma_compare_choices(m, n, k, configs, num_sms)
        t, errs = _compare_time_shape(m, n, k, choices, mma, rounds, rng)
        by_label = {c.label(): c for c in choices}
        bad = sorted(lbl for lbl in by_label if errs.get(lbl, math.inf) > QUICK_REL_ERR)
        quick_failures += [f"{m}x{n}x{k} {lbl} rel_err={errs.get(lbl, math.inf):.2e}" for lbl in bad]
        good = [lbl for lbl in by_label if lbl not in bad]
        gen2 = [lbl for lbl in good if KERNEL_CONFIGS[by_label[lbl].config].schedule != 0]
        picks = {
            "wgmma_best": _fastest(t, good),
            "wgmma_nosplit": _fastest(t, [lbl for lbl in good if by_label[lbl].splits == 1]),
            "wgmma_splitk": _fastest(t, [lbl for lbl in good if by_label[lbl].splits > 1]),
            "gen1_best": _fastest(t, [lbl for lbl in good if lbl not in gen2]),
            "gen2_best": _fastest(t, gen2),
        }
        for key, lbl in picks.items():
            if lbl is not None:
                times[key][s] = t[lbl]
        for key in ("mma", "torch", "lt_auto_nn", "lt_auto_tn"):
            if key in t:
                times[key][s] = t[key]
        checked: dict[str, bool] = {}
        for key in ("wgmma_best", "gen2_best", "wgmma_nosplit", "wgmma_splitk"):
            lbl = picks[key]
            if lbl is not None and lbl not in checked:
                checked[lbl] = _compare_full_check(by_label[lbl], m, n, k)
        best = picks["wgmma_best"]
        row = {"m": m, "n": n, "k": k, "best": best,
               "best_config": by_label[best].config if best else None,
               "best_splits": by_label[best].splits if best else None,
               "correct": checked.get(best), "gen2_correct": checked.get(picks["gen2_best"]),
               "nosplit_best": picks["wgmma_nosplit"], "splitk_best": picks["wgmma_splitk"],
               "splitk_correct": checked.get(picks["wgmma_splitk"]),
               "candidates": len(choices), "splitk_candidates": sum(1 for c in choices if c.splits > 1),
               "quick_failed": bad, "max_quick_rel_err": max(errs.values(), default=0.0),
               "times": {key: _num(v) for key, v in t.items()}}
        rows.append(row)
        lt = min(t.get("lt_auto_nn", math.inf), t.get("lt_auto_tn", math.inf))

        def tf(us: float | None, s: Shape = s) -> float:
            return flops(s) / us / 1e6 if us and math.isfinite(us) else math.nan
        b_us = t.get(best, math.nan) if best else math.nan
        ns_us = t.get(picks["wgmma_nosplit"], math.nan) if picks["wgmma_nosplit"] else math.nan
        log(f"{m}x{n}x{k}: best {best} {b_us:.2f}us ({tf(b_us):.0f} TF/s) no-split best {ns_us:.2f}us "
            f"mma {t.get('mma', math.nan):.2f}us lt_auto_max {lt:.2f}us ({tf(lt):.0f} TF/s) "
            f"torch {t.get('torch', math.nan):.2f}us ok={row['correct']} gen2_ok={row['gen2_correct']} "
            f"splitk_ok={row['splitk_correct']} quick_fail={len(bad)}")
        log("   " + "  ".join(f"{lbl} {t[lbl]:.2f}" for lbl in sorted(by_label, key=lambda x: t.get(x, math.inf))
                              if math.isfinite(t.get(lbl, math.nan))))
    times["lt_auto_max"] = max_of(times["lt_auto_nn"], times["lt_auto_tn"])
    summ = []
    for base in ("lt_auto_max", "torch", "mma"):
        summ += summarize_by_class(f"wgmma_best vs {base}", ratios(times[base], times["wgmma_best"]))
    if times["gen1_best"] and times["gen2_best"]:  # did generation 2 help, shape by shape
        summ += summarize_by_class("wgmma_gen2 vs wgmma_gen1", ratios(times["gen1_best"], times["gen2_best"]))
        summ += summarize_by_class("wgmma_gen2 vs lt_auto_max", ratios(times["lt_auto_max"], times["gen2_best"]))
    # split-K: the session-6 figure (no split) against cuBLASLt, and what splitting bought where offered
    summ += summarize_by_class("wgmma_nosplit vs lt_auto_max", ratios(times["lt_auto_max"], times["wgmma_nosplit"]))
    split_shapes = {r_s for r_s in times["wgmma_splitk"]}
    summ += summarize_by_class("wgmma_best vs wgmma_nosplit (split-K shapes)",
                               ratios({s_: v for s_, v in times["wgmma_nosplit"].items() if s_ in split_shapes},
                                      times["wgmma_best"]))
    wins: dict[str, int] = {}
    for r in rows:
        wins[r["best"]] = wins.get(r["best"], 0) + 1
    n_ok = sum(1 for r in rows if r["correct"])
    n_ok2 = sum(1 for r in rows if r["gen2_correct"])
    sk_rows = [r for r in rows if r["splitk_best"] is not None]
    n_sk_ok = sum(1 for r in sk_rows if r["splitk_correct"])
    n_sk_best = sum(1 for r in rows if (r["best_splits"] or 1) > 1)
    md = [(f"## wgmma configs vs cuBLASLt ({len(rows)} shapes, correct {n_ok}/{len(rows)}, "
           f"best generation-2 config correct {n_ok2}/{len(rows)}, fastest config counts {wins})"), "",
          (f"split-K: offered on {len(sk_rows)} shapes ({sum(r['splitk_candidates'] for r in rows)} candidates), "
           f"fastest on {n_sk_best}; best split-K candidate correct (all checks) {n_sk_ok}/{len(sk_rows)}; "
           f"candidates failing the quick fp32 check: {len(quick_failures)}")
          + (": " + "; ".join(quick_failures[:12]) if quick_failures else ""), "",
          summary_markdown(summ, "t_ref / t_wgmma_best (GPU time)"), "",
          "### best (config, splits) per shape (GPU us; ratio = t_lt_auto_max / t_ours)", "",
          "| shape | best | us | no-split best | us | lt_auto_max us | ratio | no-split ratio | correct |",
          "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        s_ = (r["m"], r["n"], r["k"])
        lt_us, b_us, ns_us = (times["lt_auto_max"].get(s_), times["wgmma_best"].get(s_),
                              times["wgmma_nosplit"].get(s_))
        md.append(f"| {r['m']}x{r['n']}x{r['k']} | {r['best']} | {_us_text(b_us)} | {r['nosplit_best']} | "
                  f"{_us_text(ns_us)} | {_us_text(lt_us)} | {_ratio_text(lt_us, b_us)} | {_ratio_text(lt_us, ns_us)} | "
                  f"{r['correct']}{'' if r['splitk_best'] is None else ' / split-K ' + str(r['splitk_correct'])} |")
    text = "\n".join(md)
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "summary.md").write_text(text)
        (out_dir / "shapes.json").write_text(json.dumps(rows, indent=1))
    log(text)
    return {"rows": rows, "summaries": summ, "markdown": text}


def _ratio_text(t_ref: float | None, t_ours: float | None) -> str:
    if not t_ref or not t_ours or not math.isfinite(t_ref) or not math.isfinite(t_ours):
        return "n/a"
    return f"{t_ref / t_ours:.3f}"


def _us_text(us: float | None) -> str:
    return f"{us:.2f}" if us and math.isfinite(us) else "n/a"
