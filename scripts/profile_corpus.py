"""Issue 8's GPU figures: profiler metrics for the seed corpus, and the technique report over the database.

    python scripts/profile_corpus.py --db runs/corpus.sqlite [--results corpus.json] [--profile] [--budget-s 400] \
        [--techniques-out runs/techniques]

1. The CUDA candidates of the seed corpus go into an exemplar database (once each; a second run adds
   nothing). With `--results` (the JSON of `scripts/eval_corpus.py`), each gets its measured status and
   speedup; without it, the status `unmeasured` and no speedup.
2. With `--profile`: Nsight Compute metrics (where ncu can run; otherwise the reason) and the compiler's
   resource report for the stored candidates that have no profile yet, until `--budget-s` is spent. Run it
   again to go on: profiles are stored beside their candidates.
3. The technique report (`cudaopt techniques`) over everything the database holds.
Prints, last, a short table: ncu statuses, and per profiled candidate its kernels, registers and spills.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
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


def profile_within(db_url: str, budget_s: float, device: str) -> int:
    from cudaopt.profile.api import profile_db

    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < budget_s:
        n = profile_db(db_url, device=device, status=None, limit=1, calls=PROFILE_CALLS)  # one at a time: the budget is checked between
        if n == 0:
            break
        done += n
        print(f"profiled {done} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return done


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
        profile_within(args.db, args.budget_s, args.device)
    from cudaopt.analysis import technique_report

    out = Path(args.techniques_out or Path(args.db).with_suffix("").as_posix() + "_techniques")
    print(f"technique report: {technique_report(args.db, out)}", flush=True)
    print("\n".join(summary(args.db)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
