"""A pool of evaluation slots on one machine: one slot per device, a shared queue, streaming results.

Each `evaluate()` call already runs the candidate in fresh subprocesses with hard timeouts that kill
their process group, so a slot is a thread that feeds one device, not a sandbox of its own. The pool
adds what a single call cannot: a queue over many devices, retries when the evaluator itself fails,
re-measurement of suspicious speedups on a *different* device, and a backstop deadline per call.
"""

from __future__ import annotations

import collections
import concurrent.futures
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cudaopt.evaluate.result import (
    EvalOptions,
    EvalResult,
    remeasurement_options,
    verification_failure,
)
from cudaopt.evaluate.stats import needs_verification as _needs_verification
from cudaopt.evaluate.stats import verification_agrees
from cudaopt.tasks.loader import TaskError

EvaluateFn = Callable[[Any, Any, EvalOptions], EvalResult]

# How many times a job is retried (on another slot where there is one) when the evaluator raises.
DEFAULT_RETRIES = 1


def default_evaluate(reference: Any, candidate: Any, options: EvalOptions) -> EvalResult:
    from cudaopt.evaluate import (
        evaluate,  # imported late: the pool's tests run without the evaluator
    )

    return evaluate(reference, candidate, options)


def backstop_timeout(options: EvalOptions) -> float:
    """Seconds after which the pool gives up on one evaluate() call. The evaluator enforces its own,
    tighter timeouts; this only catches an evaluator that never returns."""
    return 2 * (options.compile_timeout_s + options.exec_floor_s + 3 * options.budget_s) + 60.0


def task_name_of(reference: Any) -> str:
    name = getattr(reference, "name", None)
    return name if isinstance(name, str) else ""


def failure_result(message: str, options: EvalOptions, task: str = "", status: str = "runtime_error") -> EvalResult:
    return EvalResult(status=status, stage_reached="load", message=message, device=options.device,
                      baseline=options.baseline, task=task)


class Job(concurrent.futures.Future):
    """One submitted evaluation: a Future of `EvalResult` with the bookkeeping a queue page shows."""

    def __init__(self, reference: Any, candidate: Any, options: EvalOptions, task: str = "") -> None:
        super().__init__()
        self.id = uuid.uuid4().hex[:16]
        self.reference = reference
        self.candidate = candidate
        self.options = options
        self.task = task or task_name_of(reference)
        self.state = "queued"  # queued -> running -> (verifying) -> done | cancelled
        self.device: str | None = None
        self.attempts = 0
        self.submitted_at = time.time()
        self.started_at: float | None = None
        self.finished_at: float | None = None

    def summary(self) -> dict:
        d = {"id": self.id, "task": self.task, "state": self.state, "device": self.device,
             "attempts": self.attempts, "submitted_at": self.submitted_at, "started_at": self.started_at,
             "finished_at": self.finished_at, "status": None, "speedup": None}
        if self.done() and not self.cancelled():
            r = self.result()
            d["status"], d["speedup"] = r.status, r.speedup
        return d


@dataclass
class _Item:
    """A unit of work in the queue: the first evaluation of a job, a retry, or its verification."""

    job: Job
    kind: str = "eval"  # "eval" or "verify"
    failures: int = 0
    exclude_slot: int | None = None  # run anywhere but here (retries, verification)
    first: EvalResult | None = None  # the measurement a verification checks
    first_device: str | None = None


@dataclass
class _Slot:
    index: int
    device: str  # what the evaluator is told ("cpu", "cuda:N")
    name: str  # what people are shown (the device, or e.g. the Ray worker's host and GPU)
    evaluate_fn: EvaluateFn
    thread: threading.Thread | None = None
    current: Job | None = None


class EvaluatorPool:
    """One slot per device: `EvaluatorPool(["cuda:0", "cuda:1"])` or `EvaluatorPool(["cpu"] * 2)`.

        with EvaluatorPool(["cuda:0", "cuda:1"]) as pool:
            for job in pool.as_completed([pool.submit(ref, cand, opts) for cand in cands]):
                print(job.result())
    """

    def __init__(self, devices: Sequence[str] = ("cpu",), evaluate_fn: EvaluateFn | None = None, *,
                 retries: int = DEFAULT_RETRIES, job_timeout_s: float | None = None, recent: int = 100,
                 names: Sequence[str] | None = None) -> None:
        if not devices:
            raise ValueError("give at least one device, e.g. devices=['cpu'] or ['cuda:0', 'cuda:1']")
        for d in devices:
            EvalOptions(device=d)  # an unknown device fails here, once, not in every job
        self.devices = list(names or devices)
        self.retries = retries
        self.job_timeout_s = job_timeout_s
        self._evaluate_fn = evaluate_fn or default_evaluate
        self._cond = threading.Condition()
        self._pending: collections.deque[_Item] = collections.deque()
        self._in_flight = 0
        self._closed = False
        self._counts = collections.Counter()
        self.recent: collections.deque[Job] = collections.deque(maxlen=recent)
        self._slots = [_Slot(i, d, name, self._make_slot_fn(i, d))
                       for i, (d, name) in enumerate(zip(devices, self.devices))]
        for slot in self._slots:
            slot.thread = threading.Thread(target=self._slot_loop, args=(slot,), name=f"cudaopt-slot-{slot.index}",
                                           daemon=True)
            slot.thread.start()

    # -- hooks for other backends (the Ray pool runs each slot's calls on an actor) ----------------------

    def _make_slot_fn(self, index: int, device: str) -> EvaluateFn:
        return self._evaluate_fn

    @property
    def size(self) -> int:
        return len(self._slots)

    # -- submitting and streaming ------------------------------------------------------------------------

    def submit(self, reference: Any, candidate: Any, options: EvalOptions | dict | None = None, *,
               task: str = "") -> Job:
        if isinstance(options, dict):
            options = EvalOptions.from_dict(options)
        job = Job(reference, candidate, options or EvalOptions(), task)
        with self._cond:
            if self._closed:
                raise RuntimeError("the pool is closed; create a new EvaluatorPool")
            self._pending.append(_Item(job))
            self._counts["submitted"] += 1
            self._cond.notify_all()
        return job

    def map(self, pairs: Iterable[tuple[Any, Any]], options: EvalOptions | dict | None = None) -> Iterator[EvalResult]:
        """Results in the order of `pairs`; all pairs are queued before the first result is awaited."""
        jobs = [self.submit(ref, cand, options) for ref, cand in pairs]
        for job in jobs:
            yield job.result()

    def stream(self, pairs: Iterable[tuple[Any, Any]], options: EvalOptions | dict | None = None
               ) -> Iterator[tuple[int, EvalResult]]:
        """(index, result) pairs as evaluations finish, fastest first."""
        jobs = {self.submit(ref, cand, options): i for i, (ref, cand) in enumerate(pairs)}
        for job in concurrent.futures.as_completed(jobs):
            yield jobs[job], job.result()

    @staticmethod
    def as_completed(jobs: Iterable[Job], timeout: float | None = None) -> Iterator[Job]:
        return concurrent.futures.as_completed(list(jobs), timeout=timeout)

    def status(self) -> dict:
        with self._cond:
            return {
                "workers": len(self._slots),
                "devices": self.devices,
                "queued": sum(1 for it in self._pending if it.kind == "eval" and it.failures == 0),
                "running": [s.current.summary() for s in self._slots if s.current is not None],
                "busy": sum(1 for s in self._slots if s.current is not None),
                "submitted": self._counts["submitted"],
                "finished": self._counts["finished"],
                "cancelled": self._counts["cancelled"],
                "retried": self._counts["retried"],
                "verified": self._counts["verified"],
                "evaluator_failures": self._counts["evaluator_failures"],
                "closed": self._closed,
            }

    def close(self, wait: bool = True, cancel_pending: bool = False) -> None:
        """Stop taking jobs. By default the queue drains first; `cancel_pending` cancels what has not started."""
        with self._cond:
            self._closed = True
            if cancel_pending:
                kept = collections.deque()
                for item in self._pending:
                    if item.kind == "eval" and item.failures == 0 and item.job.cancel():
                        item.job.state = "cancelled"
                        self._counts["cancelled"] += 1
                    else:
                        kept.append(item)
                self._pending = kept
            self._cond.notify_all()
        if wait:
            for slot in self._slots:
                if slot.thread is not None and slot.thread is not threading.current_thread():
                    slot.thread.join()

    def __enter__(self) -> "EvaluatorPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close(wait=True, cancel_pending=exc[0] is not None)

    # -- the slot loop -----------------------------------------------------------------------------------

    def _take(self, slot: _Slot) -> _Item | None:
        with self._cond:
            while True:
                for i, item in enumerate(self._pending):
                    # An excluded slot still takes the item when it is the only slot there is.
                    if item.exclude_slot != slot.index or len(self._slots) == 1:
                        del self._pending[i]
                        self._in_flight += 1
                        return item
                if self._closed and not self._pending and self._in_flight == 0:
                    return None
                self._cond.wait(timeout=1.0)

    def _slot_loop(self, slot: _Slot) -> None:
        while (item := self._take(slot)) is not None:
            try:
                self._run(slot, item)
            except BaseException as e:  # noqa: BLE001 - a bug here must still end the job, never the slot
                self._finish(item.job, failure_result(f"evaluator failed: pool error: {type(e).__name__}: {e}",
                                                      item.job.options, item.job.task))
            finally:
                with self._cond:
                    slot.current = None
                    self._in_flight -= 1
                    self._cond.notify_all()

    def _pool_verifies(self, options: EvalOptions) -> bool:
        # With one slot the evaluator re-measures in a fresh process itself; with more, the pool does it
        # on a different device, which also catches a device that is noisy.
        return options.verify and len(self._slots) >= 2

    def _run(self, slot: _Slot, item: _Item) -> None:
        job = item.job
        if item.kind == "eval" and item.failures == 0 and not job.set_running_or_notify_cancel():
            with self._cond:  # cancelled while queued
                job.state = "cancelled"
                self._counts["cancelled"] += 1
            return
        with self._cond:
            slot.current = job
            job.attempts += 1
            job.device = slot.name if item.kind == "eval" else job.device
            job.state = "verifying" if item.kind == "verify" else "running"
            job.started_at = job.started_at or time.time()
        options = replace(job.options, device=slot.device)
        if self._pool_verifies(job.options):
            options = replace(options, verify=False)
        if item.kind == "verify":
            options = remeasurement_options(options)
        try:
            result, abandoned = self._call(slot, job, options)
        except Exception as e:  # noqa: BLE001 - the evaluator itself failed: retry, then report
            self._on_evaluator_failure(slot, item, e)
            return
        if item.kind == "verify" and abandoned:  # the backstop, not the candidate's own deadline: infrastructure
            self._finish(job, mark_verified(item.first, False, None, f"verification on {slot.name} could not run ({result.message})"))
        elif item.kind == "verify":
            self._finish(job, combine_verification(item.first, item.first_device, result, slot.name))
        elif self._pool_verifies(job.options) and needs_verification(result, job.options):
            with self._cond:
                self._pending.appendleft(_Item(job, "verify", exclude_slot=slot.index, first=result,
                                               first_device=slot.name))
                self._counts["verified"] += 1
                self._cond.notify_all()
        else:
            self._finish(job, result)

    def _call(self, slot: _Slot, job: Job, options: EvalOptions) -> tuple[EvalResult, bool]:
        """One evaluate() call with a backstop deadline, and whether it was abandoned. A call past the
        deadline is abandoned (its thread is left to end on its own) so that the slot, and everything
        queued behind it, keeps moving."""
        deadline = self.job_timeout_s if self.job_timeout_s is not None else backstop_timeout(options)
        box: concurrent.futures.Future = concurrent.futures.Future()

        def call() -> None:
            try:
                box.set_result(slot.evaluate_fn(job.reference, job.candidate, options))
            except BaseException as e:  # noqa: BLE001 - handed to the slot thread
                box.set_exception(e)

        threading.Thread(target=call, name=f"cudaopt-call-{slot.index}", daemon=True).start()
        try:
            result = box.result(timeout=deadline)
        except concurrent.futures.TimeoutError:
            return failure_result(f"evaluator did not return within {deadline:.0f} s; the call was abandoned",
                                  options, job.task, status="timeout"), True
        if not isinstance(result, EvalResult):
            raise TypeError(f"evaluate_fn returned {type(result).__name__}, not EvalResult")
        return result, False

    def _on_evaluator_failure(self, slot: _Slot, item: _Item, error: Exception) -> None:
        job = item.job
        with self._cond:
            self._counts["evaluator_failures"] += 1
            if item.failures < self.retries and not isinstance(error, TaskError):
                self._counts["retried"] += 1
                self._pending.appendleft(replace(item, failures=item.failures + 1, exclude_slot=slot.index))
                self._cond.notify_all()
                return
        message = f"evaluator failed: {type(error).__name__}: {error}".splitlines()[0][:500]
        if item.kind == "verify":  # the first measurement stands, unverified
            self._finish(job, mark_verified(item.first, False, None,
                                            f"verification on another device could not run ({message})"))
        else:
            self._finish(job, failure_result(message, job.options, job.task))

    def _finish(self, job: Job, result: EvalResult) -> None:
        with self._cond:
            if job.done():
                return
            if not result.task and job.task:
                result = replace(result, task=job.task)
            job.state = "done"
            job.finished_at = time.time()
            self._counts["finished"] += 1
            self.recent.append(job)
        job.set_result(result)


# -- verification across devices ---------------------------------------------------------------------------
# The rule itself (which speedups are re-measured, what agreeing means) is the evaluator's, in
# cudaopt.evaluate.stats; the pool only decides where the second measurement runs.


def needs_verification(result: EvalResult, options: EvalOptions) -> bool:
    return result.ok and result.timing is not None and _needs_verification(result.timing.speedup_raw, options.previous_best)


def mark_verified(result: EvalResult, verified: bool, verify_speedup: float | None, note: str) -> EvalResult:
    timing = replace(result.timing, verified=verified, verify_speedup=verify_speedup) if result.timing else None
    message = f"{result.message}; {note}" if result.message else note
    return replace(result, timing=timing, message=message)


def combine_verification(first: EvalResult, first_device: str | None, second: EvalResult, second_device: str) -> EvalResult:
    """Accept the first measurement when the second, on another device, agrees within 10%; otherwise
    report the lower of the two, unverified (as the evaluator does when it verifies by itself)."""
    seconds, gpu_seconds = first.seconds + second.seconds, first.gpu_seconds + second.gpu_seconds
    where = f"re-measured on {second_device}"
    if second.status != "ok":
        # The candidate failed, hung or was rejected when run again: that is its result (otherwise a
        # candidate that fakes a speedup once and misbehaves when re-run would keep the fake figure).
        return replace(verification_failure(first, second, f"verification run on {second_device}"),
                       seconds=seconds, gpu_seconds=gpu_seconds)
    if second.timing is None:
        note = f"verification on {second_device} failed: {second.status}" + (f" ({second.message})" if second.message else "")
        return replace(mark_verified(first, False, None, note), seconds=seconds, gpu_seconds=gpu_seconds)
    t1, t2 = first.timing, second.timing
    if verification_agrees(t1.speedup_raw, t2.speedup_raw):
        result = mark_verified(first, True, t2.speedup, f"{where}: {t2.speedup:.2f}x, within 10%")
    else:
        low = t1 if t1.speedup_raw <= t2.speedup_raw else t2
        note = (f"{where}: {t2.speedup:.2f}x vs {t1.speedup:.2f}x on {first_device}, more than 10% apart; "
                "the lower is reported")
        result = mark_verified(replace(first, timing=low), False, t2.speedup, note)
    return replace(result, seconds=seconds, gpu_seconds=gpu_seconds)
