"""`profile_candidate`: Nsight Compute where it can run, and always the compiler's resource report.

The two are independent (ncu runs the candidate on the GPU, ptxas compiles its CUDA source on the CPU),
so they run at the same time; the report's `timings` say what each cost. `pending_candidates` is the
work list of `profile_db` (and of `scripts/profile_corpus.py`, which prebuilds it in parallel first).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cudaopt.db.store import source_hash
from cudaopt.profile.ncu import DEFAULT_LAUNCH_COUNT, run_ncu_detailed
from cudaopt.profile.ptxas import ptxas_resources
from cudaopt.profile.report import KernelResources, ProfileReport
from cudaopt.tasks.loader import Task, read_source, resolve_task

PtxasResult = tuple[str, str, list[KernelResources]]


def timed_ptxas(cand_source: str, *, arch: str = "sm_90a", nvcc: str | None = None,
                timeout_s: float = 600.0) -> tuple[PtxasResult, float]:
    """`ptxas_resources` and the seconds it took (what `profile_candidate` accepts as `ptxas_result`)."""
    t0 = time.perf_counter()
    got = ptxas_resources(cand_source, arch=arch, nvcc=nvcc, timeout_s=timeout_s)
    return got, time.perf_counter() - t0


def profile_candidate(
    task: str | Path | Task,
    candidate: str | Path,
    *,
    device: str = "cuda",
    ncu_path: str | None = None,
    timeout_s: float = 600.0,
    calls: int = 3,
    size: str = "full",
    ncu: bool = True,
    ptxas: bool = True,
    arch: str = "sm_90a",
    nvcc: str | None = None,
    cache_dir: str | None = None,
    launch_count: int | None = DEFAULT_LAUNCH_COUNT,
    ptxas_result: tuple[PtxasResult, float] | None = None,
) -> ProfileReport:
    """Profile one candidate (a path or its source text) of `task`. Never raises for a missing or
    forbidden tool or a broken candidate: the report's statuses and reasons say what happened.
    `ncu=False` or a CPU device gives the ptxas report only; `ptxas=False` skips the compile.
    `cache_dir`: the evaluator's extension cache the ncu driver loads from (default: `default_cache_dir()`).
    `ptxas_result`: a `timed_ptxas` result already computed for this source (then nvcc is not run again)."""
    task = task if isinstance(task, Task) else resolve_task(task)
    cand_source, _ = read_source(candidate)
    device = "cuda:0" if device == "cuda" else device
    timings: dict = {}
    with ThreadPoolExecutor(max_workers=1) as pool:
        ptx_future = None
        if ptxas and ptxas_result is None:  # nvcc on the CPU while ncu runs the candidate on the GPU
            ptx_future = pool.submit(timed_ptxas, cand_source, arch=arch, nvcc=nvcc, timeout_s=timeout_s)
        if ncu:
            run = run_ncu_detailed(task.source, cand_source, device=device, ncu_path=ncu_path, size=size, calls=calls,
                                   timeout_s=timeout_s, cache_dir=cache_dir, launch_count=launch_count)
            ncu_status, ncu_reason, kernels = run.status, run.reason, run.kernels
            if run.status not in ("skipped", "missing"):
                timings["ncu_s"] = round(run.seconds, 2)
                timings.update({f"ncu_{k}": v for k, v in run.phases.items()})
                if run.extension_cached is not None:
                    timings["extension_cached"] = run.extension_cached
        else:
            ncu_status, ncu_reason, kernels = "skipped", "not asked for", []
        if ptx_future is not None:
            ptxas_result = ptx_future.result()
    if ptxas and ptxas_result is not None:
        (ptx_status, ptx_reason, resources), ptx_s = ptxas_result
        timings["ptxas_s"] = round(ptx_s, 2)
    else:
        ptx_status, ptx_reason, resources = "skipped", "not asked for", []
    return ProfileReport(task=task.name, source_hash=source_hash(cand_source), device=device, ncu_status=ncu_status,
                         ncu_reason=ncu_reason, kernels=tuple(kernels), ptxas_status=ptx_status, ptxas_reason=ptx_reason,
                         resources=tuple(resources), timings=timings)


def candidate_text(source: str) -> str:
    """A stored candidate's source as `profile_candidate` takes it (text with a newline is source, not a path)."""
    return source if "\n" in source else source + "\n"


def pending_candidates(db, *, tasks: list[str] | None = None, status: str | None = "ok", redo: bool = False) -> list:
    """(task, candidate record) for the stored candidates `profile_db` would profile, in its order."""
    from cudaopt.profile.store import load_profiles
    from cudaopt.train.data import db_tasks

    have = set() if redo else set(load_profiles(db))
    out = []
    for task_id, task in db_tasks(db):
        if tasks is not None and task.name not in tasks:
            continue
        out += [(task, rec) for rec in db.candidates(task_id=task_id, status=status) if rec.id not in have and rec.source.strip()]
    return out


def profile_db(
    db_url: str | Path,
    *,
    device: str = "cuda",
    tasks: list[str] | None = None,
    status: str | None = "ok",
    redo: bool = False,
    limit: int | None = None,
    **kw,
) -> int:
    """Profile stored candidates (by default the successful ones without a stored report) and store each
    report beside its candidate. `kw` goes to `profile_candidate`. Returns how many were profiled."""
    from cudaopt.db.store import ExemplarDB
    from cudaopt.profile.store import save_profile

    done = 0
    with ExemplarDB(db_url) as db:
        for task, rec in pending_candidates(db, tasks=tasks, status=status, redo=redo):
            if limit is not None and done >= limit:
                return done
            save_profile(db, rec.id, profile_candidate(task, candidate_text(rec.source), device=device, **kw))
            done += 1
    return done
