"""The tuner: time every candidate configuration of our kernels per shape, keep the fastest that
passes the correctness checks, and write the dispatcher's JSON table.

Each entry also records torch.matmul's time on the same shape, timed in the same interleaved
rounds, and sets backend "torch" (a labelled cuBLAS fallback) where our best, timed again against
torch alone, is not faster (`decide`).

The table is rewritten atomically after every shape, and a rerun that merges skips the shapes it
already holds, so a tuning run can be killed and continued (the grid over several GPU calls).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import random
import tempfile
import time
from pathlib import Path

from cudaopt.gemm.configs import Choice, candidate_choices
from cudaopt.gemm.shapes import Shape

FALLBACK_BELOW = 1.0  # hand a shape to torch.matmul when t_torch / t_ours (screened or confirmed) is below this
CONFIRM_ROUNDS = 15  # the winner is timed again against torch alone, with the benchmark's round count
# The runoff (session 13): the screening's fastest candidates within RUNOFF_WITHIN of the fastest (at most
# RUNOFF_MAX) are timed again among themselves over RUNOFF_ROUNDS rounds before the winner is taken, so
# that a 5-round screening's noise (about 1% between close candidates) does not pick the winner.
RUNOFF_WITHIN = 0.03
RUNOFF_MAX = 4
RUNOFF_ROUNDS = 9


def tune_shape(m: int, n: int, k: int, rounds: int = 5, rng: random.Random | None = None) -> dict:
    from cudaopt.gemm import _lib, hgemm
    from cudaopt.gemm.bench import make_inputs, num_sets, ours_launch, torch_launch
    from cudaopt.gemm.correctness import check_gemm
    from cudaopt.gemm.stats import paired_ratio
    from cudaopt.gemm.timing import time_gpu

    rng = rng or random.Random(0)
    choices = candidate_choices(m, n, k)
    sets = num_sets(m, n, k)
    ws = max(_lib.workspace_bytes(m, n, c.splits) for c in choices)
    x = make_inputs(m, n, k, sets, ws, with_blas=False)
    cands = {c.label(): ours_launch(x, m, n, k, c) for c in choices}
    cands["torch"] = torch_launch(x)
    times = time_gpu(cands, sets, rounds=rounds, rng=rng)

    def confirm(c: Choice) -> tuple[float, float, float | None]:
        per_round: dict[str, list[float]] = {}
        t = time_gpu({"ours": cands[c.label()], "torch": cands["torch"]}, sets, rounds=CONFIRM_ROUNDS, rng=rng,
                     per_round=per_round)
        return t["ours"], t["torch"], paired_ratio(per_round, ("torch",), "ours")

    def correct(c: Choice) -> bool:
        return check_gemm(lambda a, b, out, c=c: hgemm(a, b, out=out, choice=c), m, n, k).ok

    runoff_us: dict[str, float] = {}

    def runoff(labels: list[str]) -> dict[str, float]:
        runoff_us.update(time_gpu({lbl: cands[lbl] for lbl in labels}, sets, rounds=RUNOFF_ROUNDS, rng=rng))
        return dict(runoff_us)

    entry = {"m": m, "n": n, "k": k, **decide(times, {c.label(): c for c in choices}, correct, confirm, runoff)}
    screen = {"m": m, "n": n, "k": k, "rounds": rounds,
              "screen_us": {lbl: round(t, 3) for lbl, t in times.items() if math.isfinite(t)}}
    if runoff_us:
        screen["runoff_us"] = {lbl: round(t, 3) for lbl, t in runoff_us.items() if math.isfinite(t)}
    return entry, screen


def runoff_order(times: dict[str, float], runoff=None) -> list[str]:
    """Our candidates fastest first: by the screening, except that the contenders (within RUNOFF_WITHIN
    of the fastest, at most RUNOFF_MAX) are ranked by `runoff(labels) -> label -> us` where it is given
    and there is more than one; a contender the runoff could not time goes after those it timed."""
    ranked = [lbl for t, lbl in sorted((t, lbl) for lbl, t in times.items() if lbl != "torch" and math.isfinite(t))]
    if runoff is None or not ranked:
        return ranked
    fastest = times[ranked[0]]
    contenders = [lbl for lbl in ranked[:RUNOFF_MAX] if times[lbl] <= fastest * (1 + RUNOFF_WITHIN)]
    if len(contenders) < 2:
        return ranked
    again = runoff(contenders)
    timed = sorted((again[lbl], i, lbl) for i, lbl in enumerate(contenders)
                   if lbl in again and math.isfinite(again[lbl]))
    order = [lbl for _, _, lbl in timed]
    return order + [lbl for lbl in ranked if lbl not in order]


def decide(times: dict[str, float], by_label: dict[str, Choice], correct, confirm, runoff=None) -> dict:
    """The table entry from a screening (label -> us, "torch" included): the fastest of the three
    fastest candidates (after the runoff among close ones, `runoff_order`) that is correct, then timed
    again against torch alone (`confirm`, more rounds)
    and kept only where both the screening and the confirmation found it faster than torch. The
    5-round screening alone left 30 of 1,000 shapes below 0.98x torch in the benchmark (session 10);
    the confirmation alone still 9 (session 11), 7 of them shapes the screening had found slower:
    under the power cap one timing of a pair can be several percent off, two rarely agree by chance."""
    ranked = runoff_order(times, runoff)
    best = next((by_label[lbl] for lbl in ranked[:3] if correct(by_label[lbl])), None)
    if best is None:
        return {"backend": "torch", "config": 0, "splits": 1, "ours_us": None, "torch_us": times["torch"],
                "note": "no correct config among the three fastest"}
    ours_us, torch_us, *paired = confirm(best)
    # the confirmation's verdict: its within-round (paired) ratio where it has one, else its medians'
    confirmed = paired[0] if paired and paired[0] is not None else torch_us / ours_us
    screen_ratio = times["torch"] / times[best.label()]
    faster = confirmed >= FALLBACK_BELOW and screen_ratio >= FALLBACK_BELOW  # NaN: not faster
    backend = "ours" if faster else "torch"
    entry = {"backend": backend, "config": best.config, "splits": best.splits, "label": best.label(),
             "ours_us": round(ours_us, 3), "torch_us": round(torch_us, 3),
             "ratio_vs_torch": round(torch_us / ours_us, 4), "screen_ours_us": round(times[best.label()], 3),
             "screen_torch_us": round(times["torch"], 3)}
    if paired and paired[0] is not None:
        entry["paired_ratio_vs_torch"] = round(paired[0], 4)
    return entry


def runoff_summary(screening: Path) -> str:
    """One line on what the runoff did over a screening log: how many shapes ran it, on how many its
    winner differs from the screening's fastest contender, and by how much the runoff's own times say
    that changed things (screening winner / runoff winner, > 1: the runoff's pick is faster)."""
    ran, changed, gains = 0, 0, []
    path = Path(screening)
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a torn last line of a killed run
        again, screen = rec.get("runoff_us") or {}, rec.get("screen_us") or {}
        timed = [lbl for lbl in again if lbl in screen]
        if len(timed) < 2:
            continue
        ran += 1
        by_screen = min(timed, key=lambda lbl: screen[lbl])
        by_runoff = min(timed, key=lambda lbl: again[lbl])
        if by_runoff != by_screen:
            changed += 1
            gains.append(again[by_screen] / again[by_runoff])
    if not ran:
        return "runoff: no shape ran it"
    text = f"runoff: {ran} shapes ran it; it changed the winner on {changed}"
    if gains:
        geo = math.exp(sum(math.log(g) for g in gains) / len(gains))
        text += f", by geomean {geo:.4f}x (max {max(gains):.4f}x) in its own timing"
    return text


def table_entries(path: Path) -> dict[Shape, dict]:
    """(m, n, k) -> entry of the table at path; {} if there is none (an unreadable one is an error)."""
    path = Path(path)
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {(e["m"], e["n"], e["k"]): e for e in data.get("entries", [])}


def shapes_to_tune(shapes: list[Shape], indices: list[int], done: dict[Shape, dict], retune: bool) -> list[int]:
    """The indices whose shapes still need tuning: all with retune, else those not in `done`."""
    return list(indices) if retune else [i for i in indices if shapes[i] not in done]


def table_data(entries: dict[Shape, dict], meta: dict) -> dict:
    return {**meta, "fallback_below": FALLBACK_BELOW, "entries": [entries[s] for s in sorted(entries)]}


def write_json_atomic(path: Path, data: dict) -> None:
    """Write a temp file in the same folder, fsync it, then os.replace: readers (and a kill) see the
    old table or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_table(path: Path, tuned: dict[Shape, dict], base: dict[Shape, dict], merge: bool, meta: dict) -> dict:
    """Write base (merge=False) or the table now on disk (merge=True: entries other runs or shards
    wrote meanwhile stay) with this run's tuned entries on top. Shards tuning into one file at once
    serialise on a lock of its folder (flock), so none overwrites another's entries."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX)
        entries = {**base, **(table_entries(path) if merge else {}), **tuned}
        data = table_data(entries, meta)
        write_json_atomic(path, data)
    finally:
        os.close(dir_fd)  # releases the lock
    return data


def _device_meta() -> dict:
    import torch

    try:
        device = torch.cuda.get_device_name()
    except Exception:  # noqa: BLE001 - no device (or a dead context): the entries still count
        device = "unknown"
    return {"device": device, "torch": torch.__version__}


def screening_log(table: Path) -> Path:
    """Where run_tune appends every candidate's screening time per shape (one JSON line a shape, next
    to the table, not shipped): what a heuristic for untuned shapes can be checked against offline."""
    return Path(table).with_name(Path(table).stem + ".screening.jsonl")


def run_tune(shapes: list[Shape], out: Path, rounds: int = 5, budget_s: float | None = None,
             merge: bool = True, seed: int = 0, retune: bool = False, shard: str | None = None,
             log=print) -> dict:
    """Tune each shape (of this shard, until the budget is spent) and write/merge the table at `out`.

    The table is rewritten (atomically) after every shape, so a killed run keeps what it tuned; every
    candidate's screening time goes to `screening_log(out)` (appended). With
    merge, shapes already in the table are skipped unless retune; without merge, the table holds this
    run's shapes only. A shape whose tuning raises is logged and left out of the table (tried again
    next run); if the CUDA context is unusable after it, the run stops there."""
    from cudaopt.gemm.bench import (
        _error_text,
        _release,
        append_record,
        cuda_usable,
        parse_shard,
        shard_indices,
    )

    out = Path(out)
    picked = shard_indices(len(shapes), parse_shard(shard))
    base = table_entries(out) if merge else {}
    todo = shapes_to_tune(shapes, picked, base, retune)
    if len(todo) < len(picked):
        log(f"{out}: {len(picked) - len(todo)} of {len(picked)} shapes already tuned (retune=True to redo them)")
    tuned: dict[Shape, dict] = {}
    meta: dict | None = None
    data = None
    t0 = time.perf_counter()
    for pos, i in enumerate(todo):
        m, n, k = shapes[i]
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            log(f"tune budget reached after {pos} shapes ({len(todo) - pos} not tuned)")
            break
        msg = None
        try:
            e, screen = tune_shape(m, n, k, rounds=rounds, rng=random.Random(seed * 1_000_003 + i))
        except Exception as err:  # noqa: BLE001 - one shape's failure must not lose the others
            msg = _error_text(err)
        if msg is not None:
            _release()  # the traceback held the shape's inputs
            log(f"[tune {pos + 1}/{len(todo)}] {m}x{n}x{k}: FAILED (not in the table): {msg}")
            if not cuda_usable():
                log(f"stopping: CUDA context unusable after {m}x{n}x{k}; the table keeps {len(tuned)} shapes of this run")
                break
            continue
        tuned[(m, n, k)] = e
        append_record(screening_log(out), screen)  # one O_APPEND write a line: shards do not interleave
        meta = meta or _device_meta()
        data = save_table(out, tuned, base, merge, meta)
        log(f"[tune {pos + 1}/{len(todo)}] {m}x{n}x{k}: {e.get('label', e['backend'])} {e['ours_us']}us "
            f"torch {e['torch_us']:.2f}us -> {e['backend']}")
    if data is None:  # nothing tuned in this run: leave the table there as it is, or write one
        data = json.loads(out.read_text()) if merge and out.exists() else save_table(out, {}, base, merge, _device_meta())
    return data


# --- The cuBLASLt fallback pass (session 18) -------------------------------------------------------------
# torch.matmul runs cuBLAS's heuristic pick, up to 15% slower on the H200 than the fastest algorithm of
# cuBLASLt's own list for the shape (session 18's grid). This pass times, per table shape, the table's choice
# (ours, or torch where ours lost) against every algorithm of that list (NN layout: what hgemm receives),
# and hands the shape to the fastest algorithm (backend "cublaslt", `lt_fallback`) where it beats the table's
# choice in the screening and again, paired, in a longer confirmation: the same two-verdict rule as the
# torch fallback, so a tie stays with what the table had.
LT_SCREEN_ROUNDS = 3
LT_MAX_ALGOS = 16


def base_entry(entry: dict) -> dict:
    """The entry as the kernel tuner left it: a cuBLASLt fallback's record removed and the backend it
    replaced restored (so the pass can be run again on its own output)."""
    base = {k: v for k, v in entry.items() if k not in ("lt_algo", "lt_fallback")}
    rec = entry.get("lt_fallback") or {}
    if entry.get("backend") == "cublaslt":
        base["backend"] = rec.get("replaced", "torch")
    return base


def decide_lt(entry: dict, screen: dict[str, float], confirm, correct, info=None, runoff=None) -> dict:
    """The entry after the fallback pass. screen: "table" (the entry's choice) and "lt<j>" (algorithm j)
    -> us. confirm(j) -> (table_us, lt_us, paired t_table / t_lt or None); correct(j) -> bool; info(j) ->
    what algorithm j is (recorded); runoff(labels) -> label -> us, optional: the algorithms within
    RUNOFF_WITHIN of the fastest are timed again among themselves (`runoff_order`) before one is picked
    (session 18's pass had none: 3 screening rounds left 29 grid shapes below 0.98x of cuBLASLt's
    autotuned NN time). The picked algorithm replaces the table's choice only where the screening (its
    fastest algorithm) and the confirmation's paired ratio (its medians' where it has none) both find
    cuBLASLt faster."""
    base = base_entry(entry)
    algos = {int(name[2:]): t for name, t in screen.items() if name.startswith("lt") and math.isfinite(t)}
    table_us = screen.get("table", math.nan)
    if not algos:
        return {**base, "lt_fallback": {"checked": True, "note": "no cuBLASLt algorithm ran"}}
    fastest = min(algos, key=algos.get)
    rec = {"checked": True, "best_algo": fastest, "screen_table_us": round(table_us, 3),
           "screen_lt_us": round(algos[fastest], 3)}
    if not table_us / algos[fastest] > 1.0:  # NaN (the table's choice failed to run): not decided here
        return {**base, "lt_fallback": rec}
    j = int(runoff_order({f"lt{i}": t for i, t in algos.items()}, runoff)[0][2:])
    rec.update(best_algo=j, screen_lt_us=round(algos[j], 3))
    if j != fastest:  # the runoff's pick: the screening verdict was the fastest algorithm's (session 30: recorded)
        rec["screen_fastest_lt_us"] = round(algos[fastest], 3)
    t_table, t_lt, paired = confirm(j)
    verdict = paired if paired is not None else t_table / t_lt
    rec.update(table_us=round(t_table, 3), lt_us=round(t_lt, 3), paired_table_over_lt=None if paired is None else round(paired, 4))
    if not verdict > 1.0 or not correct(j):
        return {**base, "lt_fallback": rec}
    rec["replaced"] = base.get("backend", "ours")
    if info is not None:
        rec["algo_info"] = info(j)
    return {**base, "backend": "cublaslt", "lt_algo": j, "lt_fallback": rec}


def lt_fallback_shape(entry: dict, rng: random.Random | None = None) -> dict:
    """Time the table's choice for one shape against cuBLASLt's algorithms and decide (`decide_lt`)."""
    import torch

    from cudaopt.gemm import _lib, hgemm
    from cudaopt.gemm.bench import lt_launch, make_inputs, num_sets, ours_launch, torch_launch
    from cudaopt.gemm.correctness import check_gemm
    from cudaopt.gemm.lt_fallback import plan_for
    from cudaopt.gemm.stats import paired_ratio
    from cudaopt.gemm.timing import time_gpu

    rng = rng or random.Random(0)
    m, n, k = entry["m"], entry["n"], entry["k"]
    base = base_entry(entry)
    choice = Choice(base.get("backend", "ours"), int(base.get("config", 0)), int(base.get("splits", 1)))
    sets = num_sets(m, n, k)
    # NN only (what hgemm can run): cuBLASLt's workspace, no transposed copy of B
    x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, choice.splits), with_blas=True, transposed_b=False)
    plan = plan_for(torch.cuda.current_device(), m, n, k)
    if plan is None:  # not "checked": a rerun where cuBLASLt works tries the shape again
        raise _lib.GemmError(f"no cuBLASLt plan for {m}x{n}x{k} (see the warning above)")
    table = ours_launch(x, m, n, k, choice) if choice.backend == "ours" else torch_launch(x)
    cands = {"table": table, **{f"lt{j}": lt_launch(x, plan, j) for j in range(min(plan.count, LT_MAX_ALGOS))}}
    screen = time_gpu(cands, sets, rounds=LT_SCREEN_ROUNDS, rng=rng)

    def confirm(j: int):
        per_round: dict[str, list[float]] = {}
        t = time_gpu({"table": table, "lt": cands[f"lt{j}"]}, sets, rounds=CONFIRM_ROUNDS, rng=rng, per_round=per_round)
        return t["table"], t["lt"], paired_ratio(per_round, ("table",), "lt")

    def runoff(labels: list[str]) -> dict[str, float]:
        return time_gpu({lbl: cands[lbl] for lbl in labels}, sets, rounds=RUNOFF_ROUNDS, rng=rng)

    def correct(j: int) -> bool:
        return check_gemm(lambda a, b, out: hgemm(a, b, out=out, choice=Choice("cublaslt", choice.config,
                                                                               choice.splits, j)), m, n, k).ok

    return decide_lt(entry, screen, confirm, correct, info=plan.algo_info, runoff=runoff)


def _table_pass(table: Path, out: Path, shapes: list[Shape] | None, budget_s: float | None, recheck: bool, log,
                *, seed: int, name: str, record: str, select, per_shape, describe) -> tuple[dict[Shape, dict], dict]:
    """One pass over a tuned table's shapes, written to `out` after every shape (atomically; out may be table):
    the shapes `select(entry)` picks, skipping those whose `record` says checked unless recheck, so a killed or
    budget-limited pass continues where it stopped. per_shape(entry, rng) -> the new entry; a shape that raises
    keeps its entry (tried again next run), and an unusable CUDA context stops the pass. describe(new entry) -> the
    end of its progress line. A shape's replay order is fixed per seed and shape. Returns (entries, meta)."""
    from cudaopt.gemm.bench import _error_text, _release, cuda_usable

    table, out = Path(table), Path(out)
    if not table.exists():
        raise FileNotFoundError(f"no table at {table}: give the tuned table the pass starts from")
    meta = {k: v for k, v in json.loads(table.read_text()).items() if k != "entries"}
    entries = table_entries(table)
    entries.update({s: e for s, e in table_entries(out).items() if s in entries})  # {} where out is new
    wanted = [s for s in (sorted(entries) if shapes is None else [s for s in shapes if s in entries])
              if select(entries[s])]
    todo = [s for s in wanted if recheck or not (entries[s].get(record) or {}).get("checked")]
    if len(todo) < len(wanted):
        log(f"{out}: {len(wanted) - len(todo)} of {len(wanted)} shapes already checked (recheck to redo them)")
    t0 = time.perf_counter()
    write_json_atomic(out, table_data(entries, meta))
    for pos, s in enumerate(todo):
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            log(f"{name} budget reached after {pos} shapes ({len(todo) - pos} not checked)")
            break
        try:
            e = per_shape(entries[s], rng=random.Random(seed * 1_000_003 + hash(s) % 1_000_003))
        except Exception as err:  # noqa: BLE001 - one shape's failure keeps the table's choice there
            _release()
            log(f"[{name} {pos + 1}/{len(todo)}] {s[0]}x{s[1]}x{s[2]}: FAILED (entry unchanged): {_error_text(err)}")
            if not cuda_usable():
                log("stopping: CUDA context unusable")
                break
            continue
        entries[s] = e
        write_json_atomic(out, table_data(entries, meta))
        log(f"[{name} {pos + 1}/{len(todo)}] {s[0]}x{s[1]}x{s[2]}: {describe(e)}")
    return entries, meta


def run_lt_fallbacks(table: Path, out: Path, shapes: list[Shape] | None = None, budget_s: float | None = None,
                     seed: int = 0, recheck: bool = False, log=print) -> dict:
    """The fallback pass over the table at `table` (all its shapes, or those of `shapes` it holds), written
    to `out` after every shape (atomically; out may be table). Shapes `out` already records as checked
    are skipped unless recheck, so a killed or budget-limited pass continues where it stopped."""
    from cudaopt.gemm.lt_fallback import clear_plans

    def describe(e: dict) -> str:
        rec = e["lt_fallback"]
        return (f"table {rec.get('screen_table_us')}us, best cuBLASLt algo {rec.get('best_algo')} "
                f"{rec.get('screen_lt_us')}us -> {e['backend']}")

    moved = []

    def per_shape(e: dict, rng) -> dict:
        new = lt_fallback_shape(e, rng=rng)
        if new["backend"] == "cublaslt":
            moved.append(e)
        return new

    entries, meta = _table_pass(table, out, shapes, budget_s, recheck, log, seed=seed, name="lt", record="lt_fallback",
                                   select=lambda e: True, per_shape=per_shape, describe=describe)
    clear_plans()
    n_lt = sum(1 for e in entries.values() if e.get("backend") == "cublaslt")
    log(f"fallback pass: {len(moved)} shapes moved to cuBLASLt this run; the table hands {n_lt} of {len(entries)} to it")
    return table_data(entries, meta)


# ---- ours back (session 34): a fallback chosen against older kernels, timed against ours again ------------------
# The screen (LT_SCREEN_ROUNDS, two candidates) only prunes: a shape goes on to the paired confirmation unless the
# fallback read more than 3% faster there. Session 38 found these screens off two whole grids by 4.2% per shape,
# leaning against ours, so a gate at 1.0 dropped shapes ours win; the confirmation (15 rounds, paired) decides.
OURS_BACK_SCREEN_SLACK = 0.97


def decide_ours_back(entry: dict, screen: dict[str, float], confirm, correct) -> dict:
    """The entry after the ours-back check. The table hands the shape to a fallback (torch.matmul, or cuBLASLt's
    algorithm lt_algo) although it records our kernel (config, splits): a kernel change can make ours the faster.
    screen: {"ours": us, "fallback": us}; confirm() -> (ours_us, fallback_us, paired t_fallback / t_ours or None);
    correct() -> bool (ours passes the checks). Ours takes the shape back only where the screening finds it no more
    than 3% slower (OURS_BACK_SCREEN_SLACK), the confirmation's paired ratio (its medians' where it has none) finds it
    faster, and it is correct; the fallback's record goes with it (the cuBLASLt pass checks the shape again). Either
    way the entry records the check in "ours_back"."""
    was = entry.get("backend", "ours")
    rec: dict = {"checked": True, "fallback": was}
    if was == "cublaslt":
        rec["lt_algo"] = entry.get("lt_algo")
    ours_us, fb_us = screen.get("ours", math.nan), screen.get("fallback", math.nan)
    rec.update(screen_ours_us=round(ours_us, 3), screen_fallback_us=round(fb_us, 3))
    if not fb_us / ours_us > OURS_BACK_SCREEN_SLACK:  # NaN (either failed to run) or the fallback clearly faster
        return {**entry, "ours_back": rec}
    t_ours, t_fb, paired = confirm()
    verdict = paired if paired is not None else t_fb / t_ours
    rec.update(ours_us=round(t_ours, 3), fallback_us=round(t_fb, 3),
               paired_fallback_over_ours=None if paired is None else round(paired, 4))
    if not verdict > 1.0 or not correct():
        return {**entry, "ours_back": rec}
    rec["taken_back"] = True
    back = {k: v for k, v in entry.items() if k not in ("lt_algo", "lt_fallback")}
    return {**back, "backend": "ours", "ours_back": rec}


def ours_back_shape(entry: dict, rng: random.Random | None = None) -> dict:
    """Time our kernel of the entry (config, splits) against the fallback the table hands the shape to, and decide
    (`decide_ours_back`)."""
    import torch

    from cudaopt.gemm import _lib, hgemm
    from cudaopt.gemm.bench import lt_launch, make_inputs, num_sets, ours_launch, torch_launch
    from cudaopt.gemm.correctness import check_gemm
    from cudaopt.gemm.lt_fallback import plan_for
    from cudaopt.gemm.stats import paired_ratio
    from cudaopt.gemm.timing import time_gpu

    rng = rng or random.Random(0)
    m, n, k = entry["m"], entry["n"], entry["k"]
    ours_choice = Choice("ours", int(entry.get("config", 0)), int(entry.get("splits", 1)))
    lt = entry.get("backend") == "cublaslt"
    sets = num_sets(m, n, k)
    x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, ours_choice.splits), with_blas=lt, transposed_b=False)
    if lt:
        plan = plan_for(torch.cuda.current_device(), m, n, k)
        algo = int(entry.get("lt_algo", -1))
        if plan is None or not 0 <= algo < plan.count:
            raise _lib.GemmError(f"cuBLASLt cannot run algorithm {algo} for {m}x{n}x{k} here")
        fallback = lt_launch(x, plan, algo)
    else:
        fallback = torch_launch(x)
    cands = {"ours": ours_launch(x, m, n, k, ours_choice), "fallback": fallback}
    screen = time_gpu(cands, sets, rounds=LT_SCREEN_ROUNDS, rng=rng)

    def confirm():
        per_round: dict[str, list[float]] = {}
        t = time_gpu(cands, sets, rounds=CONFIRM_ROUNDS, rng=rng, per_round=per_round)
        return t["ours"], t["fallback"], paired_ratio(per_round, ("fallback",), "ours")

    def correct() -> bool:
        return check_gemm(lambda a, b, out: hgemm(a, b, out=out, choice=ours_choice), m, n, k).ok

    return decide_ours_back(entry, screen, confirm, correct)


def run_ours_back(table: Path, out: Path, shapes: list[Shape] | None = None, budget_s: float | None = None,
                  seed: int = 0, recheck: bool = False, log=print) -> dict:
    """The ours-back pass: every shape the table hands to torch.matmul or cuBLASLt, our kernel of record timed against
    that fallback again (`ours_back_shape`); written to `out` after every shape, resumable like the cuBLASLt pass."""
    from cudaopt.gemm.lt_fallback import clear_plans

    def describe(e: dict) -> str:
        rec = e["ours_back"]
        return (f"ours {rec.get('screen_ours_us')}us, {rec.get('fallback')} {rec.get('screen_fallback_us')}us -> "
                f"{e['backend']}")

    entries, meta = _table_pass(table, out, shapes, budget_s, recheck, log, seed=seed, name="back", record="ours_back",
                                   select=lambda e: e.get("backend", "ours") != "ours" and "config" in e,
                                   per_shape=lambda e, rng: ours_back_shape(e, rng=rng), describe=describe)
    clear_plans()
    back = sum(1 for e in entries.values() if (e.get("ours_back") or {}).get("taken_back"))
    log(f"ours-back pass: {back} shapes back to ours on record; the table hands "
        f"{sum(1 for e in entries.values() if e.get('backend', 'ours') != 'ours')} of {len(entries)} to a fallback")
    return table_data(entries, meta)
