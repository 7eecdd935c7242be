"""`profile_candidate`: Nsight Compute where it can run, and always the compiler's resource report."""

from __future__ import annotations

from pathlib import Path

from cudaopt.db.store import source_hash
from cudaopt.profile.ncu import run_ncu
from cudaopt.profile.ptxas import ptxas_resources
from cudaopt.profile.report import ProfileReport
from cudaopt.tasks.loader import Task, read_source, resolve_task


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
) -> ProfileReport:
    """Profile one candidate (a path or its source text) of `task`. Never raises for a missing or
    forbidden tool or a broken candidate: the report's statuses and reasons say what happened.
    `ncu=False` or a CPU device gives the ptxas report only; `ptxas=False` skips the compile."""
    task = task if isinstance(task, Task) else resolve_task(task)
    cand_source, _ = read_source(candidate)
    device = "cuda:0" if device == "cuda" else device
    if ncu:
        ncu_status, ncu_reason, kernels = run_ncu(task.source, cand_source, device=device, ncu_path=ncu_path, size=size,
                                                  calls=calls, timeout_s=timeout_s)
    else:
        ncu_status, ncu_reason, kernels = "skipped", "not asked for", []
    if ptxas:
        ptx_status, ptx_reason, resources = ptxas_resources(cand_source, arch=arch, nvcc=nvcc, timeout_s=timeout_s)
    else:
        ptx_status, ptx_reason, resources = "skipped", "not asked for", []
    return ProfileReport(task=task.name, source_hash=source_hash(cand_source), device=device, ncu_status=ncu_status,
                         ncu_reason=ncu_reason, kernels=tuple(kernels), ptxas_status=ptx_status, ptxas_reason=ptx_reason,
                         resources=tuple(resources))


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
    from cudaopt.profile.store import load_profiles, save_profile
    from cudaopt.train.data import db_tasks

    done = 0
    with ExemplarDB(db_url) as db:
        have = set() if redo else set(load_profiles(db))
        for task_id, task in db_tasks(db):
            if tasks is not None and task.name not in tasks:
                continue
            for rec in db.candidates(task_id=task_id, status=status):
                if limit is not None and done >= limit:
                    return done
                if rec.id in have or not rec.source.strip():
                    continue
                save_profile(db, rec.id, profile_candidate(task, rec.source if "\n" in rec.source else rec.source + "\n",
                                                           device=device, **kw))
                done += 1
    return done
