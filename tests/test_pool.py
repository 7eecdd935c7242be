"""EvaluatorPool: queueing, streaming, retries, backstop deadlines and verification on another device.

Most tests use fake evaluate functions (instant); one runs real subprocesses through `snippet_evaluate`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from cudaopt.evaluate.result import EvalOptions, EvalResult
from cudaopt.pool import EvaluatorPool
from cudaopt.pool.procs import stray_processes
from cudaopt.pool.snippet import EXPECTED_STATUS, MISBEHAVING, fake_timing, snippet_evaluate
from cudaopt.tasks.loader import TaskError

GPUS = ["cuda:0", "cuda:1"]  # only labels here: the fakes never touch a device


def ok(speedup: float, options: EvalOptions) -> EvalResult:
    return EvalResult(status="ok", stage_reached="timed", correct=True, timing=fake_timing(speedup, 0.01),
                      device=options.device)


class Recorder:
    """A fake evaluate_fn: the candidate is the speedup, or a list of what successive calls answer."""

    def __init__(self):
        self.calls: list[tuple[object, EvalOptions]] = []
        self.lock = threading.Lock()

    def __call__(self, reference, candidate, options):
        with self.lock:
            self.calls.append((candidate, options))
        with self.lock:
            value = candidate[len(self.calls) - 1] if isinstance(candidate, list) else candidate
        if isinstance(value, Exception):
            raise value
        return ok(float(value), options)


def test_map_keeps_order_and_every_job_gets_a_result():
    fake = Recorder()
    with EvaluatorPool(["cpu"] * 3, fake) as pool:
        results = list(pool.map([("ref", s) for s in (1.0, 1.5, 2.0, 1.1, 1.2)], EvalOptions()))
    assert [r.speedup for r in results] == [1.0, 1.5, 2.0, 1.1, 1.2]
    assert all(opts.device == "cpu" for _, opts in fake.calls)


def test_stream_and_as_completed_yield_everything():
    with EvaluatorPool(["cpu"] * 2, Recorder()) as pool:
        streamed = dict(pool.stream([("ref", s) for s in (1.0, 2.0, 1.5)]))
        assert {i: r.speedup for i, r in streamed.items()} == {0: 1.0, 1: 2.0, 2: 1.5}
        jobs = [pool.submit("ref", 1.25) for _ in range(4)]
        assert {j.id for j in pool.as_completed(jobs, timeout=30)} == {j.id for j in jobs}
        assert all(j.summary()["state"] == "done" and j.summary()["status"] == "ok" for j in jobs)


def test_each_slot_gets_its_own_device():
    fake = Recorder()
    with EvaluatorPool(GPUS, fake) as pool:
        for job in [pool.submit("ref", 1.0) for _ in range(10)]:
            assert job.result(timeout=30).device == job.device
    assert {opts.device for _, opts in fake.calls} <= set(GPUS)


def test_evaluator_exception_is_retried_once_on_another_slot():
    attempts = []

    def flaky(reference, candidate, options):
        attempts.append(options.device)
        if len(attempts) == 1:
            raise RuntimeError("internal evaluator error")
        return ok(1.5, options)

    with EvaluatorPool(GPUS, flaky) as pool:
        job = pool.submit("ref", "cand")
        assert job.result(timeout=30).speedup == 1.5
        assert job.attempts == 2 and attempts[0] != attempts[1]
        assert pool.status()["retried"] == 1


def test_evaluator_failing_twice_is_reported_as_runtime_error():
    calls = []

    def broken(reference, candidate, options):
        calls.append(1)
        raise OSError("worker pipe closed")

    with EvaluatorPool(["cpu"], broken) as pool:
        result = pool.submit("ref", "cand").result(timeout=30)
    assert result.status == "runtime_error"
    assert result.message.startswith("evaluator failed: OSError: worker pipe closed")
    assert len(calls) == 2  # the original call and one retry


def test_usage_errors_are_not_retried():
    calls = []

    def bad_task(reference, candidate, options):
        calls.append(1)
        raise TaskError("ref.py: no such file; give the path of a Python file")

    with EvaluatorPool(["cpu"] * 2, bad_task) as pool:
        result = pool.submit("ref.py", "cand").result(timeout=30)
    assert result.status == "runtime_error" and "no such file" in result.message
    assert len(calls) == 1


def test_a_wrong_return_type_is_an_evaluator_failure():
    with EvaluatorPool(["cpu"], lambda r, c, o: {"status": "ok"}, retries=0) as pool:
        result = pool.submit("ref", "cand").result(timeout=30)
    assert result.status == "runtime_error" and "not EvalResult" in result.message


def test_an_evaluator_that_never_returns_is_abandoned_and_the_slot_moves_on():
    release = threading.Event()

    def stuck_then_fine(reference, candidate, options):
        if candidate == "stuck":
            release.wait(30)
        return ok(1.0, options)

    pool = EvaluatorPool(["cpu"], stuck_then_fine, job_timeout_s=0.3)
    stuck, after = pool.submit("ref", "stuck"), pool.submit("ref", "fine")
    assert stuck.result(timeout=30).status == "timeout"
    assert "did not return" in stuck.result().message
    assert after.result(timeout=30).ok
    release.set()
    pool.close()


def test_high_speedups_are_verified_on_a_different_device():
    fake = Recorder()
    with EvaluatorPool(GPUS, fake) as pool:
        result = pool.submit("ref", [5.0, 5.2]).result(timeout=30)
    devices = [opts.device for _, opts in fake.calls]
    assert result.timing.verified is True
    assert (result.speedup, result.timing.verify_speedup) == (5.0, 5.2)
    assert len(devices) == 2 and devices[0] != devices[1]
    assert all(opts.verify is False for _, opts in fake.calls)  # the pool verifies, not the evaluator


def test_disagreeing_verification_reports_the_lower_speedup():
    with EvaluatorPool(GPUS, Recorder()) as pool:
        result = pool.submit("ref", [6.0, 2.0]).result(timeout=30)
    assert result.ok and result.timing.verified is False
    assert result.speedup == 2.0 and result.timing.verify_speedup == 2.0
    assert "more than 10% apart" in result.message


def test_a_failed_verification_run_leaves_the_result_unverified():
    with EvaluatorPool(GPUS, Recorder(), retries=0) as pool:
        result = pool.submit("ref", [4.0, RuntimeError("boom")]).result(timeout=30)
    assert result.ok and result.speedup == 4.0 and result.timing.verified is False
    assert "could not run" in result.message


def test_previous_best_triggers_verification_below_3x():
    fake = Recorder()
    with EvaluatorPool(GPUS, fake) as pool:
        plain = pool.submit("ref", 2.5).result(timeout=30)
        checked = pool.submit("ref", 2.5, EvalOptions(previous_best=1.0)).result(timeout=30)
    assert plain.timing.verified is None
    assert checked.timing.verified is True
    assert len(fake.calls) == 3


def test_one_slot_leaves_verification_to_the_evaluator():
    fake = Recorder()
    with EvaluatorPool(["cpu"], fake) as pool:
        result = pool.submit("ref", 9.0).result(timeout=30)
    assert result.timing.verified is None and len(fake.calls) == 1
    assert fake.calls[0][1].verify is True


def test_close_cancels_what_has_not_started_and_refuses_new_jobs():
    gate = threading.Event()

    def slow(reference, candidate, options):
        gate.wait(30)
        return ok(1.0, options)

    pool = EvaluatorPool(["cpu"], slow)
    jobs = [pool.submit("ref", i) for i in range(5)]
    time.sleep(0.2)
    pool.close(wait=False, cancel_pending=True)
    gate.set()
    pool.close()
    assert jobs[0].result(timeout=30).ok
    assert all(j.cancelled() for j in jobs[1:])
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit("ref", 1.0)


def test_options_may_be_a_dict_and_are_checked():
    with EvaluatorPool(["cpu"], Recorder()) as pool:
        assert pool.submit("ref", 1.0, {"trials": 3}).result(timeout=30).ok
        with pytest.raises(ValueError, match="unknown evaluation options"):
            pool.submit("ref", 1.0, {"trails": 3})


def test_real_subprocess_candidates_crash_hang_and_flood_without_leaks():
    options = EvalOptions(exec_floor_s=1.0)
    with EvaluatorPool(["cpu"] * 3, snippet_evaluate) as pool:
        names = list(MISBEHAVING)
        results = list(pool.map([("ref", MISBEHAVING[n]) for n in names], options))
    for name, result in zip(names, results):
        assert result.status in EXPECTED_STATUS[name], (name, result.status, result.message)
    assert stray_processes() == []


def test_status_counts_add_up():
    with EvaluatorPool(["cpu"] * 2, Recorder()) as pool:
        for job in [pool.submit("ref", 1.0) for _ in range(6)]:
            job.result(timeout=30)
        status = pool.status()
    assert status["submitted"] == status["finished"] == 6
    assert status["queued"] == 0 and status["busy"] == 0 and status["workers"] == 2
    assert len(pool.recent) == 6


def test_finished_results_carry_the_task_name():
    from cudaopt.tasks.loader import Task

    task = Task(name="matrix_vector", level=1, source="x = 1\n")
    with EvaluatorPool(["cpu"], lambda r, c, o: replace(ok(1.0, o), task="")) as pool:
        assert pool.submit(task, "cand").result(timeout=30).task == "matrix_vector"


def test_unknown_devices_fail_when_the_pool_is_made():
    with pytest.raises(ValueError, match="unknown device"):
        EvaluatorPool(["tpu:0"], Recorder())


def test_a_candidate_that_fails_its_verification_run_fails():
    from cudaopt.guards.findings import Finding

    def first_fast_then_rejected(reference, candidate, options):
        if options.kernel_check == "never":  # the verification run: the profiler list is the first run's
            bad = replace(ok(1.0, options), status="rejected", message="drift: outputs of timed calls are wrong",
                          findings=(Finding("drift", "outputs of timed calls are wrong"),), timing=None)
            return bad
        return ok(6.0, options)

    with EvaluatorPool(GPUS, first_fast_then_rejected) as pool:
        result = pool.submit("ref", "cand").result(timeout=30)
    assert result.status == "rejected" and result.speedup is None
    assert "verification run" in result.message and {f.category for f in result.findings} == {"drift"}
    assert result.timing.verified is False  # the first figure is kept for the record only


def test_a_verification_call_abandoned_by_the_backstop_leaves_the_first_figure_unverified():
    release = threading.Event()

    def fast_then_stuck(reference, candidate, options):
        if options.kernel_check == "never":  # the verification run never returns
            release.wait(30)
        return ok(6.0, options)

    pool = EvaluatorPool(GPUS, fast_then_stuck, job_timeout_s=0.5)
    result = pool.submit("ref", "cand").result(timeout=30)
    release.set()
    pool.close()
    assert result.ok and result.speedup == 6.0 and result.timing.verified is False
    assert "could not run" in result.message
