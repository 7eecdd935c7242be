"""Issue 8's GPU figures: profiler metrics for the seed corpus, and the technique report over the database.

    python scripts/profile_corpus.py --db runs/corpus.sqlite [--results corpus.json] [--profile] [--budget-s 400] \
        [--techniques-out runs/techniques]

1. The CUDA candidates of the seed corpus go into an exemplar database (once each; a second run adds
   nothing). With `--results` (the JSON of `scripts/eval_corpus.py`), each gets its measured status and
   speedup; without it, the status `unmeasured` and no speedup.
2. With `--profile`: Nsight Compute metrics (where ncu can run; otherwise the reason) and the compiler's
   resource report for the stored candidates that have no profile yet, until `--budget-s` is spent. Run it
   again to go on: profiles are stored beside their candidates. The CPU work runs ahead of the GPU work:
   `--jobs` workers build every pending candidate's extension into the evaluator's cache
   (`cudaopt.evaluate.prebuild`, skipped where it is already built) and compile its ptxas report, in the
   order ncu takes them, so ncu (one candidate at a time) only loads the built extension. Each profiled
   candidate prints its split: ncu seconds (and the driver's torch import / load / set-up / profiled
   calls), ptxas seconds, build seconds, and how long ncu waited for the workers.
3. The technique report (`cudaopt techniques`) over everything the database holds.
Prints, last, a short table: ncu statuses, and per profiled candidate its kernels, registers and spills.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def seed_db(db_url: str, results: list[dict] | None) -> int:
    from cudaopt.db.store import CandidateRecord, ExemplarDB
    from cudaopt.tasks.seed_corpus import corpus_entries

    measured = {(r["task"], r["candidate"]): r for r in results or []}
    added = 0
    with ExemplarDB(db_url) as db:
        run = None
        for e in corpus_entries():
            if e.device != "cuda":
                continue
            tid = db.ensure_task(e.reference())
            if db.has_source(tid, e.source):
                continue
            run = run or db.start_run("seed-corpus", {"results": bool(results)})
            r = measured.get((e.task, e.name))
            status = r["status"] if r else "unmeasured"
            db.add_candidate(CandidateRecord(
                task_id=tid, run_id=run.id, source=e.source, status=status, origin="corpus", model=f"corpus:{e.kind}",
                result=r, speedup=(r.get("speedup") if r else None), gpu_name=(r.get("device_name", "") if r else ""),
                note=e.note or ""))
            added += 1
    return added


PROFILE_CALLS = 3  # forward calls the profiler driver makes per candidate (per-call times divide by it)


@dataclasses.dataclass(frozen=True)
class Built:
    ok: bool | None  # None: nothing to build, already built, or not attempted
    seconds: float
    note: str


def build_ahead(source: str, cache_dir: str | None, deadline: float) -> Built:
    """Build one candidate's extension into the evaluator's cache (the folder the ncu driver loads from)."""
    from cudaopt.evaluate import prebuild
    from cudaopt.profile.ncu import extension_built, extension_dir

    if extension_built(extension_dir(source, cache_dir)):
        return Built(None, 0.0, "cached")
    if time.perf_counter() > deadline:
        return Built(None, 0.0, "not built: the budget was spent")
    out = prebuild.prebuild([source], jobs=1, cache_dir=cache_dir)
    if not out:
        return Built(None, 0.0, "nothing to build")
    return Built(out[0].ok, out[0].seconds, out[0].message)


def ptxas_ahead(source: str, deadline: float):
    from cudaopt.profile import api

    return None if time.perf_counter() > deadline else api.timed_ptxas(source)


def _split(rep, built: Built, waited: float) -> str:
    t = rep.timings
    driver = ", ".join(f"{k[4:-2]} {t[k]:.1f}" for k in ("ncu_import_torch_s", "ncu_load_candidate_s", "ncu_setup_s", "ncu_profiled_s")
                       if k in t)
    ncu = f"ncu {rep.ncu_status} {t['ncu_s']:.1f} s" if "ncu_s" in t else f"ncu {rep.ncu_status}"
    if driver:
        ncu += f" [{driver}; extension {'cached' if t.get('extension_cached') else 'built under ncu'}]"
    ptx = f"ptxas {rep.ptxas_status} {t['ptxas_s']:.1f} s" if "ptxas_s" in t else f"ptxas {rep.ptxas_status}"
    build = f"build {built.seconds:.1f} s" + ("" if built.ok else f" ({built.note or 'failed'})")
    return f"{ncu}, {ptx}, {build}, waited {waited:.1f} s"


def profile_within(db_url: str, budget_s: float, device: str, *, jobs: int | None = None, cache_dir: str | None = None,
                   **kw) -> int:
    """Profile the pending candidates in order until `budget_s` (counted from the start, builds included)
    is spent; builds and ptxas reports run ahead on `jobs` threads. `kw` goes to `profile_candidate`."""
    from cudaopt.db.store import ExemplarDB
    from cudaopt.profile.api import (
        candidate_text,
        pending_candidates,
        profile_candidate,
    )
    from cudaopt.profile.store import save_profile

    t0 = time.perf_counter()
    deadline = t0 + budget_s
    done = 0
    with ExemplarDB(db_url) as db:
        todo = [(task, rec, candidate_text(rec.source)) for task, rec in pending_candidates(db, status=None)]
        if not todo:
            return 0
        jobs = jobs or max(1, (os.cpu_count() or 2) - 2)
        print(f"{len(todo)} candidates to profile: {jobs} CPU workers build extensions and ptxas reports ahead of ncu", flush=True)
        pool = ThreadPoolExecutor(max_workers=jobs)
        ahead = [(pool.submit(build_ahead, src, cache_dir, deadline), pool.submit(ptxas_ahead, src, deadline)) for _, _, src in todo]
        try:
            for (task, rec, src), (build_f, ptx_f) in zip(todo, ahead):
                if time.perf_counter() > deadline:
                    break
                tw = time.perf_counter()
                built, ptx = build_f.result(), ptx_f.result()
                waited = time.perf_counter() - tw
                if built.ok is False:  # the driver would only fail the same build again, under ncu
                    rep = profile_candidate(task, src, device=device, ncu=False, ptxas_result=ptx, **kw)
                    rep = dataclasses.replace(rep, ncu_status="failed", ncu_reason=f"the extension did not build: {built.note}")
                else:
                    rep = profile_candidate(task, src, device=device, calls=PROFILE_CALLS, cache_dir=cache_dir,
                                            ptxas_result=ptx, **kw)
                rep = dataclasses.replace(rep, timings={**rep.timings, "build_s": round(built.seconds, 2),
                                                        "build_wait_s": round(waited, 2)})
                save_profile(db, rec.id, rep)
                done += 1
                print(f"profiled {done} ({time.perf_counter() - t0:.0f} s) {task.name} #{rec.id}: {_split(rep, built, waited)}", flush=True)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # queued work is dropped; running builds finish
    return done


def timing_line(profiles) -> str:
    """Mean seconds per candidate over the reports that carry timings (the split the next GPU run reads)."""
    rows = [p.timings for p in profiles if p.timings]
    if not rows:
        return "timings: none stored"
    parts = []
    for key, label in (("ncu_s", "ncu"), ("ncu_import_torch_s", "of which torch import"), ("ncu_load_candidate_s", "load/build"),
                       ("ncu_setup_s", "set-up"), ("ncu_profiled_s", "profiled calls"), ("ptxas_s", "ptxas"),
                       ("build_s", "build"), ("build_wait_s", "ncu waited for builds")):
        vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        if vals:
            parts.append(f"{label} {statistics.mean(vals):.1f} (max {max(vals):.1f})")
    cached = sum(bool(r.get("extension_cached")) for r in rows)
    return f"timings, mean s over {len(rows)} profiles: " + ", ".join(parts) + f"; extension cached before ncu in {cached}"


def summary(db_url: str) -> list[str]:
    from cudaopt.db.store import ExemplarDB
    from cudaopt.profile.store import load_profiles

    lines = []
    with ExemplarDB(db_url) as db:
        profiles = load_profiles(db)
        by_id = {c.id: c for c in db.candidates()}
    lines.append(f"candidates {len(by_id)}, profiled {len(profiles)}; ncu statuses "
                 f"{dict(collections.Counter(p.ncu_status for p in profiles.values()))}; ptxas statuses "
                 f"{dict(collections.Counter(p.ptxas_status for p in profiles.values()))}")
    reasons = collections.Counter(p.ncu_reason for p in profiles.values() if p.ncu_status != "ok")
    for reason, n in reasons.most_common(3):
        lines.append(f"  ncu not ok x{n}: {reason[:160]}")
    lines.append(timing_line(profiles.values()))
    lines.append("| task | candidate | speedup | kernels (own) | registers | spills B | ncu us (own) |")
    lines.append("|---|---|---|---|---|---|---|")
    for cid, p in sorted(profiles.items()):
        c = by_id.get(cid)
        own = [k for k in p.kernels if k.own]
        regs = sorted({r.registers for r in p.resources if r.registers is not None})
        spills = sum(r.spill_store_bytes + r.spill_load_bytes for r in p.resources)
        us = sum((k.time_us or 0) * max(k.calls, 1) for k in own) / PROFILE_CALLS if own else None
        lines.append(f"| {p.task} | {(c.model if c else '')[len('corpus:'):]} #{cid} | {c.speedup if c and c.speedup is not None else '-'} | "
                     f"{len(p.kernels)} ({len(own)}) | {','.join(map(str, regs)) or '-'} | {spills} | "
                     f"{f'{us:.1f}' if us is not None else '-'} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="SQLite file or SQLAlchemy URL (created if missing)")
    ap.add_argument("--results", help="eval_corpus.py's JSON: measured status and speedup per candidate")
    ap.add_argument("--profile", action="store_true", help="collect ncu metrics and ptxas resources (GPU machine)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget-s", type=float, default=400.0, help="profiling starts no new candidate after this")
    ap.add_argument("--jobs", type=int, default=None, help="CPU workers building extensions and ptxas reports ahead of ncu "
                    "(default: CPU count - 2)")
    ap.add_argument("--techniques-out", default=None, help="folder for the technique report (default: beside the db)")
    args = ap.parse_args()

    results = None
    if args.results:
        try:
            results = json.loads(Path(args.results).read_text())
        except (OSError, ValueError) as e:
            print(f"profile_corpus: cannot read --results {args.results}: {e}; give eval_corpus.py's JSON output", file=sys.stderr)
            return 2
    print(f"added {seed_db(args.db, results)} corpus candidates to {args.db}", flush=True)
    if args.profile:
        profile_within(args.db, args.budget_s, args.device, jobs=args.jobs)
    from cudaopt.analysis import technique_report

    out = Path(args.techniques_out or Path(args.db).with_suffix("").as_posix() + "_techniques")
    print(f"technique report: {technique_report(args.db, out)}", flush=True)
    print("\n".join(summary(args.db)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
