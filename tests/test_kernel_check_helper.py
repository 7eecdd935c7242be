"""The kernel-check helper process (EvalOptions.kernel_check_helper): its protocol with the parent, for real
on the CPU (where its profiler sees no device events and says so), and the parent's handling of every
message or end the helper can give."""

import multiprocessing as mp
import time

import pytest
from test_evaluate_cpu import FAST, TASK, cand

from cudaopt.evaluate import EvalOptions, evaluate
from cudaopt.evaluate.codec import send_msg
from cudaopt.evaluate.result import EvalResult
from cudaopt.evaluate.runner import _Session
from cudaopt.guards.findings import GuardPolicy
from cudaopt.tasks.loader import resolve_task

HONEST = cand("return torch.tanh(x * self.w) + self.b")


@pytest.fixture(autouse=True)
def _cpu_helper(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("CUDAOPT_CACHE", str(tmp_path_factory.getbasetemp() / "cudaopt-cache"))
    monkeypatch.setenv("CUDAOPT_TEST_CHECKER_ON_CPU", "1")


def helper_run(**kw):
    return evaluate(TASK, HONEST, EvalOptions(**{**FAST, "kernel_check_helper": True, "kernel_check_helper_wait_s": 120, **kw}))


def test_helper_warms_up_then_checks_after_timing():
    r = helper_run(kernel_check="always")
    assert r.status == "ok", r.message + r.error
    assert any(n.startswith("kernel check helper: profiler started") for n in r.notes), r.notes
    # the helper ran the check itself: its profiler (CPU build: no CUDA activity) says it could not look
    assert any(n.startswith("kernel check skipped") for n in r.notes), r.notes
    assert "kernel_check_profiler" in r.guard_parts
    assert r.guard_seconds >= r.guard_parts["kernel_check_profiler"]


def test_auto_ends_the_helper_when_the_figure_needs_no_check():
    r = helper_run(kernel_check="auto")  # an honest candidate near 1x: no check
    assert r.status == "ok", r.message + r.error
    assert any(n.startswith("kernel check helper: profiler started") for n in r.notes)
    assert not any(n.startswith("kernel check skipped") for n in r.notes)
    assert "kernel_check_profiler" not in r.guard_parts


def test_no_helper_where_it_is_not_asked_for():
    r = evaluate(TASK, HONEST, EvalOptions(**{**FAST, "kernel_check": "always", "kernel_check_helper": False}))
    assert r.status == "ok" and not any("helper" in n for n in r.notes)
    # the default with kernel_check="auto": no helper (its wait would be paid by every evaluation)
    r = evaluate(TASK, HONEST, EvalOptions(**{**FAST, "kernel_check": "auto"}))
    assert r.status == "ok" and not any("helper" in n for n in r.notes)


def test_helper_is_the_default_when_the_check_always_runs():
    r = evaluate(TASK, HONEST, EvalOptions(**{**FAST, "kernel_check": "always", "kernel_check_helper_wait_s": 120}))
    assert r.status == "ok", r.message + r.error
    assert any(n.startswith("kernel check helper: profiler started") for n in r.notes), r.notes


def test_helper_wait_must_not_be_negative():
    with pytest.raises(ValueError, match="kernel_check_helper_wait_s"):
        EvalOptions(kernel_check_helper_wait_s=-1)


# ---------------------------------------------------------------- the parent's side, message by message
class FakeProcess:
    def __init__(self, exitcode=0):
        self.exitcode = exitcode
        self.sentinel = None

    def join(self, timeout=None):
        pass

    def is_alive(self):
        return False

    def close(self):
        pass


def session(state="checking", timing=None):
    s = _Session(resolve_task(str(TASK)), HONEST, EvalOptions(**FAST, kernel_check_helper=True), GuardPolicy(), [])
    s.t_start = time.time()
    s.device_name, s.precision = "cpu", {}
    parent, child = mp.Pipe()
    s.cconn, s.checker, s.checker_state = parent, FakeProcess(), state
    s.check_sent_at = time.time()
    s.timing = timing
    return s, child


def feed(s, child, *msgs):
    for m in msgs:
        send_msg(child, m)  # framed as the helper's harness frames them
    out = None
    while s.cconn.poll(0.2):
        out = s._on_checker()
        if isinstance(out, EvalResult):
            return out
    return out


def test_unknown_message_is_tampering():
    s, c = session("starting")
    r = feed(s, c, ("timing", {"speedup": 99.0}, "mac"))
    assert r.status == "rejected" and "kernel-check helper sent 'timing'" in r.findings[-1].evidence


def test_a_result_nobody_asked_for_is_tampering():
    s, c = session("ready")
    r = feed(s, c, ("check_done", False))
    assert r.status == "rejected" and "nobody asked for" in r.findings[-1].evidence


def test_second_result_is_tampering():
    s, c = session("checking", timing={"window": "events"})
    r = feed(s, c, ("check_done", False), ("check_done", False))
    assert isinstance(r, EvalResult) and r.status == "rejected" and "nobody asked for" in r.findings[-1].evidence


def test_failure_during_the_check_is_the_candidates_result():
    s, c = session("checking")
    r = feed(s, c, ("fail", "runtime_error", "ValueError: boom", "tb"))
    assert r.status == "runtime_error" and "during the kernel check" in r.message


def test_failure_before_ready_only_drops_the_helper():
    s, c = session("starting")
    assert feed(s, c, ("fail", "compile_error", "nvcc failed", "")) is None
    assert s.checker_state == "gone" and any("failed to start" in n for n in s.notes)


def test_death_during_the_check_is_a_runtime_error():
    s, _ = session("checking")
    r = s._checker_died()
    assert r.status == "runtime_error" and "died during the kernel check" in r.message


def test_abnormal_end_after_the_report_is_a_runtime_error():
    s, _ = session("done")
    s.checker = FakeProcess(exitcode=-9)
    r = s._checker_died()
    assert r.status == "runtime_error" and "ended abnormally" in r.message
    s, _ = session("done")
    assert s._checker_died() is None and s.checker_state == "gone"


def test_side_stream_found_moves_the_figure_to_the_device_window():
    dw = {"speedup_raw": 1.5, "speedup": 1.5, "ci_low": 1.4, "ci_high": 1.6, "bucket_means": [1.5], "bucket_variance": 0.0,
          "stable": True, "rounds": 70, "ref_time_us": 30.0, "cand_time_us": 20.0}
    t = {"speedup_raw": 3.5, "speedup": 3.5, "window": "events", "device_window": dw}
    s, c = session("checking", timing=dict(t))
    assert feed(s, c, ("finding", {"category": "side_stream", "message": "kernels ran elsewhere", "evidence": "stream 7"}),
                ("check_done", True)) is None
    assert s.timing["window"] == "device" and s.timing["speedup"] == 1.5 and s.timing["cand_time_us"] == 20.0
    assert any(f.category == "side_stream" for f in s.findings)
    s, c = session("checking", timing=dict(t))
    feed(s, c, ("check_done", False))
    assert s.timing["window"] == "events" and s.timing["speedup"] == 3.5


def test_late_helper_is_ended_before_timing():
    s, _ = session("starting")
    s.opt = EvalOptions(**FAST, kernel_check_helper=True, kernel_check_helper_wait_s=0.0)
    assert s._helper_for_timing() is False
    assert s.checker_state == "gone" and s.checker is None and any("not warm" in n for n in s.notes)


def test_malformed_message_is_tampering_not_a_crash():
    s, c = session("starting")
    r = feed(s, c, ("check_ready", "not a number"))
    assert r.status == "rejected" and "malformed" in r.findings[-1].evidence
    s, c = session("checking")
    r = feed(s, c, ("finding", {"no category": 1}))
    assert r.status == "rejected"
