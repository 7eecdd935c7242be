"""`evaluate()`: one candidate against one reference, in stages, in fresh processes.

    static guards -> compile -> executable -> correct -> timed (-> verified)

The parent (this process) never imports either file. It starts a judge (reference only) and a worker
(candidate + reference for paired timing), compares their outputs, enforces every deadline by killing
the worker's process group, and turns whatever happens into an EvalResult.
"""

from __future__ import annotations

import hashlib
import hmac
import multiprocessing as mp
import os
import secrets
import signal
import sys
import threading
import time
import types
from dataclasses import replace
from multiprocessing.connection import wait
from pathlib import Path

from cudaopt.evaluate.codec import TamperedMessage, recv_plain, timing_mac
from cudaopt.evaluate.compare import Comparison, compare_outputs
from cudaopt.evaluate.inputs import N_TIMING_SETS, round_seed, timing_seed
from cudaopt.evaluate.result import (
    EvalOptions,
    EvalResult,
    Timing,
    remeasurement_options,
    verification_failure,
)
from cudaopt.evaluate.profiling import ENV as PROFILE_ENV
from cudaopt.evaluate.profiling import Profiled
from cudaopt.evaluate.stats import needs_verification, verification_agrees
from cudaopt.evaluate.views import unview, wants_sample
from cudaopt.guards.findings import Finding, GuardPolicy
from cudaopt.tasks.loader import Task, TaskError, read_source, resolve_task

# Every kind of message the worker's harness sends; anything else on its pipe was written by someone else.
_WORKER_KINDS = frozenset({
    "cand_out", "cand_ready", "compiled", "device_name", "done", "fail", "finding", "first_call_done",
    "first_call_start", "guard_seconds", "kernels", "nondeterminism", "note", "precision", "round_ready", "stage",
    "timed_out", "timed_ready", "timing", "timing_ready",
})

# What the kernel-check helper's harness sends (a worker's set-up messages, then its own two).
_CHECKER_KINDS = frozenset({
    "check_done", "check_ready", "compiled", "device_name", "fail", "finding", "kernels", "note", "precision", "stage",
})
CHECK_TIMEOUT_S = 120.0  # from `check` to `check_done`: a few calls of the candidate under the warm profiler

_STAGE_ORDER = {"compile": 0, "build": 1, "executable": 2, "correct": 3, "timed": 4}

EXEC_FACTOR = 1000  # executable: a call finishes within 1000 x the reference time (seeds) ...
TIMING_GRACE_S = 60.0  # ... and timing may overrun its budget by warm-up, baseline compilation, checks
BASELINE_COMPILE_S = 300.0  # torch.compile baselines compile inside the worker before timing
NONDETERMINISM_REL = 1e-6  # identical calls differing by more than this (x output rms) are not rounding


def default_cache_dir() -> str:
    return os.environ.get("CUDAOPT_CACHE", str(Path.home() / ".cache" / "cudaopt"))


def source_hash(source: str) -> str:
    """Compiled extensions are cached per candidate source: the same source never compiles twice."""
    return hashlib.sha256(source.encode()).hexdigest()[:20]


_CTX = None


def _context():
    """A forkserver with torch preloaded: each evaluation's processes start in milliseconds, not seconds."""
    global _CTX
    if _CTX is None:
        method = os.environ.get("CUDAOPT_START_METHOD", "forkserver")
        _CTX = mp.get_context(method)
        if method == "forkserver":
            _CTX.set_forkserver_preload(["torch", "cudaopt.evaluate.child"])
    return _CTX


_START_LOCK = threading.Lock()


def _start(proc) -> None:
    """Start a child without multiprocessing's re-import of the caller's __main__ in it.

    forkserver/spawn children normally run the parent's main script again (as __mp_main__): a caller's
    script without a __main__ guard would run twice, and a program read from stdin cannot be found at
    all. The children need nothing from __main__, so it is hidden while the process starts.
    """
    with _START_LOCK:
        real = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            proc.start()
        finally:
            if real is not None:
                sys.modules["__main__"] = real


def evaluate(reference, candidate, options: EvalOptions | None = None, **overrides) -> EvalResult:
    """Evaluate `candidate` (path or source) against `reference` (path, source, built-in name or Task).

    A bad candidate never raises: its failure is the result. A reference or candidate path that does not
    exist raises TaskError (a usage error), as does a reference that cannot serve as one.
    """
    with Profiled("parent"):
        return _evaluate(reference, candidate, options, **overrides)


def _evaluate(reference, candidate, options: EvalOptions | None = None, **overrides) -> EvalResult:
    options = replace(options, **overrides) if options else EvalOptions(**overrides)
    task = reference if isinstance(reference, Task) else resolve_task(reference)
    cand_source, _ = read_source(candidate)
    t0 = time.time()
    policy = GuardPolicy.strict() if options.strict else GuardPolicy()
    base = dict(baseline=options.baseline, device=options.device, task=task.name)

    findings = list(_static_scan(cand_source, options.device, task.source))
    rejecting = policy.rejects(findings)
    if rejecting:
        f = rejecting[0]
        return EvalResult(status="rejected", stage_reached="static_guards", message=f"{f.category}: {f.message}",
                          findings=tuple(findings), seconds=time.time() - t0, **base)
    result = _Session(task, cand_source, options, policy, findings).run()
    if result.ok and options.verify and result.timing and needs_verification(result.timing.speedup_raw, options.previous_best):
        result = _verify(task, cand_source, options, policy, result)
    return replace(result, seconds=time.time() - t0)


def _static_scan(source: str, device: str, reference: str) -> list[Finding]:
    from cudaopt.guards.static import scan

    kind = "cuda" if device.startswith("cuda") else "cpu"
    return list(scan(source, device=kind, reference=reference))


def _verify(task, cand_source, options, policy, first: EvalResult) -> EvalResult:
    """Re-measure in a fresh process (on `options.verify_device` when the caller gives one); accept within 10%."""
    dev = options.verify_device or options.device
    second = _Session(task, cand_source, remeasurement_options(options, device=dev), policy, [], skip_correctness=True).run()
    if second.status != "ok":
        # The candidate failed, hung or was rejected when run again: that is its result, not the first figure.
        return verification_failure(first, second, f"verification run in a fresh process on {dev}")
    if second.timing is None:
        return replace(first, message=f"verification run failed: {second.message}",
                       timing=replace(first.timing, verified=False))
    agree = verification_agrees(first.timing.speedup_raw, second.timing.speedup_raw)
    timing = replace(first.timing, verified=agree, verify_speedup=second.timing.speedup)
    if not agree:  # not accepted: report the lower of the two figures
        low = first.timing if first.timing.speedup_raw <= second.timing.speedup_raw else second.timing
        timing = replace(low, verified=False, verify_speedup=second.timing.speedup)
        return replace(first, timing=timing, message=f"verification on {dev} disagreed by more than 10% "
                       f"({first.timing.speedup:.2f}x vs {second.timing.speedup:.2f}x); the lower is reported")
    return replace(first, timing=timing, gpu_seconds=first.gpu_seconds + second.gpu_seconds)


class _Session:
    def __init__(self, task: Task, cand_source: str, options: EvalOptions, policy: GuardPolicy,
                 findings: list[Finding], skip_correctness: bool = False) -> None:
        self.task = task
        self.cand_source = cand_source
        self.opt = options
        self.policy = policy
        self.findings = list(findings)
        self.skip_correctness = skip_correctness
        self.stage = "compile"
        self.ref_time: float | None = None
        self.ref_outs: dict[int, object] = {}
        self.cand_outs: dict[int, object] = {}
        self.compared: dict[int, Comparison] = {}
        self.ref_by_trial: dict[int, object] = {}
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.timing: dict | None = None
        self.compile_seconds = 0.0
        self.compile_cached = False
        self.notes: list[str] = []
        self.kernels: list[str] = []
        self.guard_seconds = 0.0
        self.time_sent = False  # the parent's own record of having asked for timing
        self.refresh_seed = secrets.randbits(62)  # keys the timed rounds' input seeds; never leaves this process
        self.next_round = 0  # the timed round whose input seed the worker may ask for next
        self.challenged: set[int] = set()
        self.timing_key: bytes | None = None
        self.guard_parts: dict[str, float] = {}
        self.phase_at: dict[str, float] = {}  # seconds since the start when each stage began
        # Challenge seeds for sampled comparisons, drawn here: the candidate's process never holds them early.
        self.trial_seeds = [secrets.randbits(62) for _ in range(options.trials)]
        self.set_seeds: dict[int, int] = {}
        # The kernel-check helper (EvalOptions.kernel_check_helper): None (not started), "starting", "ready",
        # "checking", "done" or "gone" (ended or not used; a check needed then runs in the worker).
        self.checker = None
        self.cconn = None
        self.checker_state: str | None = None
        self.check_sent_at = 0.0
        self.helper_check_s: float | None = None

    # ------------------------------------------------------------------ helpers
    def _add(self, category: str, message: str, evidence: str = "", source: str = "dynamic", blocking: bool = False) -> None:
        if not any(f.category == category and f.message == message for f in self.findings):
            self.findings.append(Finding(category, message, evidence, source, blocking))

    def _add_reported(self, f: dict) -> None:
        """A finding as a child process reported it (a dict read as plain data)."""
        self._add(f["category"], f["message"], f.get("evidence", ""), f.get("source", "dynamic"), f.get("blocking", False))

    @property
    def _checker_live(self) -> bool:
        """The helper process exists and its pipe is read (from start until it ended or was ended)."""
        return self.checker_state not in (None, "gone")

    def _result(self, status: str, message: str = "", error: str = "", correct: bool = False) -> EvalResult:
        timing = None
        if self.timing is not None:
            t = self.timing
            timing = Timing(t["speedup_raw"], t["speedup"], t["ci_low"], t["ci_high"], tuple(t["bucket_means"]),
                            t["bucket_variance"], t["stable"], t["rounds"], t["ref_time_us"], t["cand_time_us"],
                            t["seconds"], window=t["window"])
        held = time.time() - self.t_start
        guard_parts, guard_seconds = dict(self.guard_parts), self.guard_seconds
        if self.helper_check_s is not None:  # the helper's check sat on the critical path, its start-up did not
            guard_parts["kernel_check_profiler"] = self.helper_check_s
            guard_seconds += self.helper_check_s
        return EvalResult(
            status=status, stage_reached=self.stage, message=message, error=error, correct=correct,
            max_abs_error=self.max_abs if self.compared else None, max_rel_error=self.max_rel if self.compared else None,
            trials_passed=sum(c.ok for c in self.compared.values()), trials=self.opt.trials, timing=timing,
            findings=tuple(self.findings), baseline=self.opt.baseline, device=self.opt.device,
            device_name=self.device_name, precision=self.precision, gpu_seconds=held if self.opt.device.startswith("cuda") else 0.0,
            compile_seconds=self.compile_seconds, compile_cached=self.compile_cached, task=self.task.name,
            guard_seconds=guard_seconds, guard_parts=guard_parts, phase_seconds=self._phase_seconds(held),
            kernels=tuple(str(k) for k in (self.kernels or ())), notes=tuple(str(n) for n in self.notes),
        )

    def _phase_seconds(self, held: float) -> dict[str, float]:
        """Where the evaluation's time went: start-up, then each stage until the next one began."""
        marks = sorted(self.phase_at.items(), key=lambda kv: kv[1])
        out = {"start": marks[0][1] if marks else held}
        for (name, t), nxt in zip(marks, [m[1] for m in marks[1:]] + [held]):
            out[name] = max(0.0, nxt - t)
        return out

    def _options_dict(self) -> dict:
        d = self.opt.to_dict()
        d["cache_dir"] = default_cache_dir()
        d["source_hash"] = source_hash(self.cand_source)
        d["skip_correctness"] = self.skip_correctness
        # Handed over, not inherited: the judge and the worker fork from a forkserver started with the
        # environment of whichever evaluation came first.
        d["profile_dir"] = os.environ.get(PROFILE_ENV)
        return d

    # ------------------------------------------------------------------ the run
    def run(self) -> EvalResult:
        self.t_start = time.time()
        self.device_name = self.opt.device
        self.precision = {"allow_tf32": self.opt.allow_tf32}
        ctx = _context()
        opts = self._options_dict()
        os.makedirs(opts["cache_dir"], exist_ok=True)
        from cudaopt.evaluate import child

        w_parent, w_child = ctx.Pipe()
        self.worker = ctx.Process(target=child.worker_main, args=(w_child, self.task.source, self.cand_source, opts), daemon=True)
        _start(self.worker)
        w_child.close()
        self.wconn = w_parent
        self.judge = None
        self.jconn = None
        if not self.skip_correctness or self.opt.timing:
            # A re-measurement (no correctness trials) still gets a judge: its timed outputs are checked too.
            j_parent, j_child = ctx.Pipe()
            jopts = opts if not self.skip_correctness else {**opts, "trials": 0}
            self.judge = ctx.Process(target=child.judge_main, args=(j_child, self.task.source, jopts), daemon=True)
            _start(self.judge)
            j_child.close()
            self.jconn = j_parent
            self.jconn.send(("seeds", self.trial_seeds if not self.skip_correctness else []))
        if self._wants_checker():
            c_parent, c_child = ctx.Pipe()
            self.checker = ctx.Process(target=child.checker_main, args=(c_child, self.task.source, self.cand_source, opts), daemon=True)
            _start(self.checker)
            c_child.close()
            self.cconn = c_parent
            self.checker_state = "starting"
        try:
            return self._loop()
        finally:
            self._kill(self.worker)
            self._kill(self.checker)
            if self.judge is not None:
                try:
                    self.jconn.send(("quit",))
                except Exception:  # noqa: BLE001
                    pass
                self._kill(self.judge, grace=0.5)

    @staticmethod
    def _kill(proc, grace: float = 0.0) -> None:
        if proc is None:
            return
        if grace and proc.is_alive():
            proc.join(grace)
        if proc.is_alive() or proc.exitcode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the worker's whole group: compilers, its children
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.kill()
            except Exception:  # noqa: BLE001
                pass
        proc.join(5)
        try:
            proc.close()
        except Exception:  # noqa: BLE001
            pass

    def _wants_checker(self) -> bool:
        o = self.opt
        # CUDAOPT_TEST_CHECKER_ON_CPU: the tests run the helper's protocol on a CPU (its profiler then sees no
        # device events and says so).
        on_device = o.device.startswith("cuda") or os.environ.get("CUDAOPT_TEST_CHECKER_ON_CPU") == "1"
        wanted = o.kernel_check_helper if o.kernel_check_helper is not None else o.kernel_check == "always"
        return wanted and on_device and o.timing and not self.skip_correctness and o.kernel_check != "never"

    def _drop_checker(self, note: str = "") -> None:
        """End the helper (before timing, so it never shares the device with a timed round)."""
        if self.checker is not None:
            self._kill(self.checker)  # closes the process object: drop it
            self.checker = None
        self.checker_state = "gone"
        if note:
            self.notes.append(note)

    def _helper_for_timing(self):
        """Just before the worker's timing: keep the helper only when it is warm and idle (waiting for it up to
        kernel_check_helper_wait_s). True or False, or an EvalResult when the helper broke its protocol."""
        deadline = time.time() + self.opt.kernel_check_helper_wait_s
        while self.checker_state == "starting" and time.time() < deadline:
            if self.cconn.poll(min(0.05, max(0.0, deadline - time.time()))):
                res = self._on_checker()
                if isinstance(res, EvalResult):
                    return res
        if self.checker_state == "ready":
            return True
        if self.checker_state == "starting":
            self._drop_checker("kernel check helper not warm when timing began: a check, if needed, runs in the worker")
        return False

    def _after_timing_report(self) -> None:
        """The signed report is in: start the helper's check when the figure asks for one, else end it."""
        if self.checker_state != "ready":
            return
        when = self.opt.kernel_check
        if when == "always" or (when == "auto" and needs_verification(self.timing["speedup"], self.opt.previous_best)):
            self.cconn.send(("check",))
            self.checker_state = "checking"
            self.check_sent_at = time.time()
        else:
            self._drop_checker()

    def _on_checker(self):
        """One message of the helper. Anything outside its protocol (it ran candidate code too) is tampering."""
        try:
            msg = recv_plain(self.cconn)
        except (EOFError, OSError):
            return self._checker_died()
        except TamperedMessage as e:
            return self._tampered(e)
        kind = msg[0] if isinstance(msg, tuple) and msg else None
        if kind not in _CHECKER_KINDS:
            return self._tampered(TamperedMessage(f"the kernel-check helper sent {kind!r}"))
        try:
            return self._checker_message(kind, msg)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            return self._tampered(e)

    def _checker_message(self, kind: str, msg: tuple):
        if kind == "check_ready":
            if self.checker_state != "starting":
                return self._tampered(TamperedMessage("a second or late check_ready"))
            self.checker_state = "ready"
            self.notes.append(f"kernel check helper: profiler started in {float(msg[1]):.1f} s beside the correctness trials")
        elif kind == "check_done":
            if self.checker_state != "checking":
                return self._tampered(TamperedMessage("a kernel check result nobody asked for"))
            self.checker_state = "done"
            self.helper_check_s = time.time() - self.check_sent_at
            t = self.timing or {}
            if msg[1] and t.get("window") == "events" and isinstance(t.get("device_window"), dict):
                self.timing = {**t, **t["device_window"], "window": "device"}
        elif kind == "note":
            if self.checker_state in ("checking", "done"):  # the check's own notes (set-up ones repeat the worker's)
                self.notes.append(str(msg[1]))
        elif kind == "finding":
            if self.checker_state in ("starting", "checking", "done"):
                self._add_reported(msg[1])
        elif kind == "kernels":
            self.kernels = msg[1]
        elif kind == "fail":
            if self.checker_state == "checking":  # the candidate failed in the check's calls: that is its result
                return self._result(msg[1] if msg[1] in ("runtime_error", "timeout") else "runtime_error",
                                    f"during the kernel check: {msg[2]}", msg[3])
            self._drop_checker(f"kernel check helper failed to start ({str(msg[2])[:120]}): a check, if needed, runs in the worker")
        return None

    def _checker_died(self):
        if self.checker_state == "checking":
            return self._result("runtime_error", "the candidate's process died during the kernel check")
        if self.checker_state == "done":
            # The helper's harness ends its process with status 0 right after its one check_done; any other
            # end means something else took over the process after (or instead of) the harness's report.
            self.checker.join(1.0)
            code = self.checker.exitcode
            self._drop_checker()
            if code != 0:
                return self._result("runtime_error", f"the kernel check's process ended abnormally after its report (exit status {code})")
            return None
        if self.checker_state == "starting":
            self._drop_checker("kernel check helper ended before it was warm: a check, if needed, runs in the worker")
        elif self.checker_state == "ready":
            self._drop_checker("kernel check helper ended while idle: no check")
        else:
            self._drop_checker()
        return None

    def _deadline_for_stage(self) -> float:
        o = self.opt
        if self.stage in ("compile", "build"):
            return o.compile_timeout_s
        if self.stage in ("executable", "correct"):
            ref = self.ref_time if self.ref_time is not None else o.exec_floor_s / EXEC_FACTOR
            return max(EXEC_FACTOR * ref, o.exec_floor_s)
        if self.stage == "timed":
            extra = BASELINE_COMPILE_S if o.baseline.startswith("compile") else 0.0
            return o.budget_s + TIMING_GRACE_S + extra
        return 60.0

    def _loop(self) -> EvalResult:  # noqa: C901 - one state machine over the two pipes
        o = self.opt
        self.last_progress = time.time()
        trials_needed = 0 if self.skip_correctness else o.trials
        self.nondet_reported = None
        self.worker_done = False
        self.drift_pending: dict[int, object] = {}
        while True:
            conns = [self.wconn] + ([self.jconn] if self.jconn else [])
            if self._checker_live:
                conns += [self.cconn, self.checker.sentinel]
            if self.checker_state == "checking" and time.time() - self.check_sent_at > CHECK_TIMEOUT_S:
                return self._result("timeout", f"the candidate's calls under the kernel check did not finish within {CHECK_TIMEOUT_S:.0f} s")
            limit = self._deadline_for_stage()
            remaining = limit - (time.time() - self.last_progress)
            if remaining <= 0 and not self.worker_done:
                what = {"compile": "compilation", "build": "building ModelNew"}.get(self.stage, "a call")
                msg = f"{what} did not finish within {limit:.1f} s"
                if self.stage in ("executable", "correct"):
                    msg += f" (executable limit: max({EXEC_FACTOR} x reference time, {o.exec_floor_s:g} s))"
                return self._result("timeout", msg)
            ready = wait(conns + ([] if self.worker_done else [self.worker.sentinel]), timeout=max(0.01, min(remaining, 1.0)))
            if self.wconn in ready or (self.worker.sentinel in ready):
                # drain everything the worker said, also when it has just exited
                while not self.worker_done and self.wconn.poll():
                    try:
                        msg = recv_plain(self.wconn)
                        self.last_progress = time.time()
                        res = self._on_worker(msg)
                    except (EOFError, OSError):
                        break
                    except (TamperedMessage, KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
                        return self._tampered(e)
                    if isinstance(res, EvalResult):
                        return res
                if self.worker.sentinel in ready and not self.worker_done and not self.wconn.poll():
                    return self._result("runtime_error", _death_message(self.worker.exitcode))
            if self.jconn is not None and self.jconn in ready:
                res = self._on_judge()
                if isinstance(res, EvalResult):
                    return res
            if self._checker_live and (self.cconn in ready or self.checker.sentinel in ready):
                while self._checker_live and self.cconn.poll():
                    res = self._on_checker()
                    if isinstance(res, EvalResult):
                        return res
                if self._checker_live and self.checker.sentinel in ready and not self.cconn.poll():
                    res = self._checker_died()
                    if isinstance(res, EvalResult):
                        return res
            # compare whatever pairs are complete
            for i in sorted(set(self.ref_outs) & set(self.cand_outs)):
                self._compare_trial(i)
            if not self.time_sent and not self.skip_correctness and len(self.compared) == trials_needed and self.nondet_reported is not None:
                verdict = self._correctness_verdict()
                if verdict is not None:
                    return verdict
                if not o.timing:
                    return self._final()
                helper = self._helper_for_timing()
                if isinstance(helper, EvalResult):
                    return helper
                self.time_sent = True  # set before sending: a dead worker must not read as unchecked
                self.wconn.send(("time", self.opt.fresh_inputs, helper))
                self.stage = "timed"
                self.last_progress = time.time()
            # A re-measurement's judge measures the reference once at its start: timing waits until it has
            # (its ref_time has come), so the two processes never share the device while rounds are timed.
            if (self.skip_correctness and not self.time_sent and self.stage in ("executable", "correct", "build")
                    and (self.jconn is None or self.ref_time is not None)):
                self.time_sent = True
                self.wconn.send(("time", self.opt.fresh_inputs))
            correctness_done = self.skip_correctness or self.time_sent
            if self.worker_done and self.checker_state == "ready":  # no timing report came: nothing to check
                self._drop_checker()
            if (self.worker_done and correctness_done and (not self.drift_pending or self.jconn is None)
                    and self.checker_state not in ("checking", "done")):
                return self._final()
            if self.worker_done and not correctness_done and self.nondet_reported is None:
                return self._result("runtime_error", "the worker ended before finishing the correctness trials")

    def _on_judge(self):
        try:
            msg = recv_plain(self.jconn)
        except (EOFError, OSError, TamperedMessage):
            return self._result("runtime_error", "the reference process died", "judge exited without a result")
        kind = msg[0]
        if kind == "ref_time":
            self.ref_time = msg[1]
        elif kind == "ref_out":
            self.ref_outs[msg[1]] = unview(msg[2])
        elif kind == "ref_set":
            cand = self.drift_pending.pop(msg[1], None)
            if cand is not None:
                cmp = self._cmp(unview(msg[2]), cand)
                if not cmp.ok:
                    self._add("drift", "outputs of timed calls are wrong; the kernel is correct at first and wrong later",
                              f"timed input set {msg[1]}: {cmp.reason}")
        elif kind == "judge_error":
            raise TaskError(f"the reference failed to run: {msg[1]}")
        return None

    def _timed_input_seed(self, slot: int) -> int:
        """The input seed of the last timed round whose output the worker keeps in `slot` (round r is kept in
        slot r % N_TIMING_SETS), from the signed report's round count; the fixed set's seed where the
        rounds rotated through fixed sets."""
        t = self.timing or {}
        n = int(t.get("calls_per_side", 0))
        if not t.get("fresh_inputs") or not 0 <= slot < min(n, N_TIMING_SETS) or n > self.next_round:
            return timing_seed(slot, self.opt.seed)
        last = n - 1 - ((n - 1 - slot) % N_TIMING_SETS)
        return round_seed(self.refresh_seed, last)

    def _cmp(self, ref, cand) -> Comparison:
        tol = task_tolerance(self.task)
        return compare_outputs(ref, cand, self.opt.atol if self.opt.atol is not None else tol.get("atol"),
                               self.opt.rtol if self.opt.rtol is not None else tol.get("rtol"))

    def _on_worker(self, msg):
        kind = msg[0]
        if kind == "done":
            self.worker_done = True
        elif kind == "nondeterminism":
            if self.nondet_reported is not None:
                raise TamperedMessage("a second nondeterminism report")
            self.nondet_reported = True
            worst, scale = msg[1], msg[2]
            if worst > NONDETERMINISM_REL * scale:
                self._add("nondeterminism", "two calls on identical inputs gave different results (a race?)",
                          f"max difference {worst:.3g} (output rms {scale:.3g})")
        elif kind == "cand_ready":
            # Each challenge seed is handed out once: a second request for the same trial means someone else
            # asked first (to learn which elements will be looked at before computing them).
            i = msg[1]
            if not isinstance(i, int) or i in self.challenged or not wants_sample(i) or not 0 <= i < self.opt.trials:
                raise TamperedMessage(f"a second or unexpected challenge request for trial {i!r}")
            self.challenged.add(i)
            self.wconn.send(("challenge", i, self.trial_seeds[i]))
        elif kind == "round_ready":
            # One seed per round, in order, just before the round: the worker never holds a later round's.
            if not self.time_sent or msg[1] != self.next_round or self.timing is not None:
                raise TamperedMessage(f"an out-of-order request for timed round {msg[1]!r}")
            self.wconn.send(("round_seed", msg[1], round_seed(self.refresh_seed, msg[1])))
            self.next_round += 1
        elif kind == "timed_ready":
            if msg[1] in self.set_seeds or not self.time_sent or msg[1] not in range(N_TIMING_SETS):
                raise TamperedMessage(f"a second or unexpected challenge request for timed set {msg[1]!r}")
            self.set_seeds[msg[1]] = secrets.randbits(62)
            self.wconn.send(("challenge_set", msg[1], self.set_seeds[msg[1]]))
        elif kind == "timed_out":
            self.drift_pending[msg[1]] = unview(msg[2])
            if self.jconn is not None:
                self.jconn.send(("sets", [(msg[1], self.set_seeds[msg[1]], self._timed_input_seed(msg[1]))]))
        elif kind == "stage":
            # Stages only move forward: a stage sent again from inside a call (for the compile stage's
            # longer deadline, say) is not the harness's.
            if _STAGE_ORDER.get(msg[1], -1) < _STAGE_ORDER.get(self.stage, 0):
                raise TamperedMessage(f"stage {msg[1]!r} after {self.stage!r}")
            self.stage = msg[1]
            self.phase_at.setdefault(msg[1], time.time() - self.t_start)
        elif kind == "compiled":
            self.compile_seconds, self.compile_cached = msg[1], msg[2]
        elif kind == "cand_out":
            i = msg[1]
            if not isinstance(i, int) or i in self.cand_outs or i in self.compared or not 0 <= i < self.opt.trials:
                raise TamperedMessage(f"a second or unexpected output for trial {i!r}")
            self.cand_outs[i] = unview(msg[2])
        elif kind == "finding":
            self._add_reported(msg[1])
        elif kind == "timing_ready":
            if not self.time_sent or self.timing_key is not None:
                raise TamperedMessage("a second or unrequested timing report")
            self.timing_key = secrets.token_bytes(32)
            self.wconn.send(("key", self.timing_key))
        elif kind == "timing":
            payload, mac = msg[1], msg[2]
            if self.timing is not None or self.timing_key is None or not hmac.compare_digest(str(mac), timing_mac(self.timing_key, payload)):
                raise TamperedMessage("a timing report the harness did not sign")
            self.timing = payload
            self._after_timing_report()
        elif kind == "note":
            self.notes.append(msg[1])
        elif kind == "guard_seconds":
            self.guard_seconds = msg[1]
            self.guard_parts = dict(msg[2]) if len(msg) > 2 else {}
        elif kind == "precision":
            self.precision = dict(msg[1])
        elif kind == "device_name":
            self.device_name = msg[1]
        elif kind == "kernels":
            self.kernels = msg[1]
        elif kind not in _WORKER_KINDS:
            raise TamperedMessage(f"unknown message kind {kind!r}")
        elif kind == "fail":
            status, message, error = msg[1], msg[2], msg[3]
            if status not in ("compile_error", "runtime_error", "timeout", "incorrect", "rejected"):
                raise TamperedMessage(f"a failure report with status {status!r}")
            rej = self.policy.rejects(self.findings)
            if rej and status != "compile_error":
                f = rej[0]
                return self._result("rejected", f"{f.category}: {f.message}", error)
            return self._result(status, message, error)
        return None

    def _tampered(self, e: Exception) -> EvalResult:
        """Something other than the harness wrote to the worker's pipe: the worker's reports are void."""
        why = str(e) if isinstance(e, TamperedMessage) else f"malformed message ({type(e).__name__}: {e})"
        self._add("timer_tamper", "the worker's channel to the harness carried a message the harness did not send", why[:200],
                  blocking=True)
        self.timing = None
        return self._result("rejected", f"timer_tamper: the worker's channel carried a forged or malformed message ({why[:120]})")

    def _compare_trial(self, i: int) -> None:
        if i in self.compared:
            return
        ref, cand = self.ref_outs.pop(i), self.cand_outs.pop(i)
        cmp = self._cmp(ref, cand)
        self.compared[i] = cmp
        self.max_abs = max(self.max_abs, cmp.max_abs)
        self.max_rel = max(self.max_rel, cmp.max_rel)
        if not cmp.ok:
            if cmp.nan_where_finite and self.opt.device.startswith("cuda"):
                self._add("uninitialised_output", "output holds the harness's NaN poison where the reference has values: parts were never written", f"trial {i}")
            if cmp.constant_output:
                self._add("degenerate_output", "output is constant where the reference varies", f"trial {i}")
            elif cmp.tiny_output:
                self._add("degenerate_output", "output is orders of magnitude smaller than the reference's", f"trial {i}: {cmp.reason}")
            if "shape" in cmp.reason:
                self._add("problem_changed", "output shape differs from the reference (a changed problem size?)", cmp.reason)
            prev = self.ref_by_trial.get(i - 1)
            if prev is not None and self._cmp(prev, cand).ok:
                self._add("result_cache", "output equals the previous trial's answer: results are cached across calls", f"trial {i}")
        self.ref_by_trial = {i: ref}  # only the latest is kept: outputs can be large

    def _classify_failures(self, bad: list[int]) -> None:
        """Name the pattern of the failures: which kinds of trial fail, and which pass."""
        from cudaopt.evaluate.inputs import trial_plan

        plans = {i: trial_plan(i, self.opt.seed) for i in self.compared}
        fresh_ok = all(self.compared[i].ok for i, p in plans.items() if not p.reuse_buffers)
        plain_ok = all(self.compared[i].ok for i, p in plans.items() if p.transform == "plain")
        # Every trial of the failing input kinds fails, and the task's own kind passes: the kind explains it,
        # even when (with few trials) the failing ones all happen to reuse buffers.
        bad_kinds = {plans[i].transform for i in bad}
        kind_explains = plain_ok and all(not self.compared[i].ok for i, p in plans.items() if p.transform in bad_kinds)
        if fresh_ok and all(plans[i].reuse_buffers for i in bad) and not kind_explains:
            self._add("result_cache", "wrong only when the inputs reuse earlier buffers: results keyed on address or object",
                      f"trials {bad[:5]}")
        elif plain_ok:
            kinds = sorted({plans[i].transform for i in bad})
            self._add("input_exploit", f"correct on the task's own input distribution, wrong under {', '.join(kinds)} inputs",
                      f"trial {bad[0]}: {self.compared[bad[0]].reason}")

    def _correctness_verdict(self) -> EvalResult | None:
        bad = [(i, c) for i, c in sorted(self.compared.items()) if not c.ok]
        if bad:
            self._classify_failures([i for i, _ in bad])
        rej = self.policy.rejects(self.findings)
        if rej:
            f = rej[0]
            return self._result("rejected", f"{f.category}: {f.message}")
        if bad:
            i, c = bad[0]
            return self._result("incorrect", f"{len(bad)} of {len(self.compared)} trials wrong; first: trial {i}: {c.reason}")
        return None

    def _final(self) -> EvalResult:
        rej = self.policy.rejects(self.findings)
        if rej:
            f = rej[0]
            return self._result("rejected", f"{f.category}: {f.message}", correct=not self.skip_correctness)
        if self.opt.timing and self.timing is None:
            return self._result("runtime_error", "the worker ended without a timing result")
        if self.timing is not None:
            # Every kept slot's timed output must have come back for the drift check, no fewer.
            if self.timing.get("fresh_inputs") and int(self.timing.get("calls_per_side", -1)) != self.next_round:
                return self._tampered(TamperedMessage(f"a timing over {self.timing.get('calls_per_side')!r} rounds, "
                                                      f"with seeds handed out for {self.next_round}"))
            expected = set(range(min(int(self.timing.get("calls_per_side", N_TIMING_SETS)), N_TIMING_SETS)))
            if set(self.set_seeds) != expected:
                return self._tampered(TamperedMessage(f"timed outputs came back for slots {sorted(self.set_seeds)}, not {sorted(expected)}"))
        msg = ""
        if self.timing is not None and not self.timing["stable"]:
            msg = f"timing unstable: inter-bucket variance {self.timing['bucket_variance']:.4f} above the gate {self.opt.variance_gate}"
        self.stage = "timed" if self.timing is not None else "correct"
        return self._result("ok", msg, correct=True)


def task_tolerance(task: Task) -> dict:
    """A task's TOLERANCE constant, read from its source without importing it."""
    import ast

    try:
        tree = ast.parse(task.source)
    except SyntaxError:
        return {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TOLERANCE" for t in node.targets):
            try:
                return dict(ast.literal_eval(node.value))
            except ValueError:
                return {}
    return {}


def _death_message(code: int) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"the candidate's process died with signal {name}"
    return f"the candidate's process exited with code {code} before finishing"
