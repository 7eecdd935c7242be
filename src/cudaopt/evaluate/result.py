"""What one evaluation returns, and the options that drive it.

Results are frozen dataclasses with derived numbers as properties, in the manner of
torch.utils.benchmark's Measurement, and they round-trip through JSON (`to_dict` / `from_dict`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace

from cudaopt.guards.findings import Finding

# The statuses a candidate can end in, in pipeline order. `ok` means correct and timed.
STATUSES = ("compile_error", "runtime_error", "timeout", "incorrect", "rejected", "ok")
# The stages an evaluation walks through; `stage_reached` names the last one entered.
STAGES = ("load", "static_guards", "compile", "executable", "correct", "timed")
BASELINES = ("eager", "compile", "compile-reduce-overhead", "cuda-graph")


@dataclass(frozen=True)
class EvalOptions:
    device: str = "cpu"  # "cpu", "cuda" or "cuda:N"
    trials: int = 100  # correctness trials (the seeds use 1000)
    baseline: str = "eager"  # what the speedup is measured against (BASELINES)
    budget_s: float = 10.0  # timing budget in seconds (adaptive stop inside it)
    target_rel_ci: float = 0.01  # stop timing once the 95% interval is within +-1% of the estimate
    min_rounds: int = 70  # at least 10 paired rounds per bucket
    variance_gate: float = 0.005  # inter-bucket variance above this: re-measure, then mark unstable
    compile_timeout_s: float = 300.0
    exec_floor_s: float = 10.0  # executable = first call within max(1000 x reference, this floor)
    size: str = "full"  # "full" or "small" (the task's small sizes, for CPU tests)
    atol: float | None = None  # override the per-dtype default tolerances
    rtol: float | None = None
    seed: int = 0
    strict: bool = False  # reject on every finding category
    allow_tf32: bool = False  # the harness fixes TF32 for both sides; off unless asked
    previous_best: float | None = None  # for the verification rule (>3x or >2x previous best)
    verify: bool = True  # re-measure suspicious speedups in a fresh process
    timing: bool = True  # False: stop after correctness (self-supervised stage, tests)
    profile: bool = False
    # Outputs up to this many elements are compared whole in every trial; larger ones whole in the first
    # trials and by a challenged random sample after that (see cudaopt.evaluate.views).
    compare_full_limit: int = 1 << 20
    # Which kernels ran (torch.profiler; flags exception_fallback / no_custom_kernel). Starting the profiler
    # costs 3.5-6 s on the H200, so by default ("auto") it runs only for speedups the verification rule
    # finds suspicious (> 3x, or > 2x previous_best); "always" or "never" otherwise.
    kernel_check: str = "auto"
    # Pay the profiler's start-up in a helper process beside the correctness trials; the helper runs the
    # check after timing only when it is needed (and is ended otherwise). None (the default): on exactly when
    # the check always runs (kernel_check="always"). The helper is never warm by the time timing starts
    # (H200, session 7: 0 of 12 corpus evaluations), so timing waits up to kernel_check_helper_wait_s for it;
    # with the 5 s wait it was warm in 6 of 6, and the check's cost on the critical path fell from 4.9-7.0 s
    # to 0.07-0.12 s. With kernel_check="auto" the check runs only for suspicious speedups, known after
    # timing, so the wait would be paid by every evaluation for a few: off there unless asked for. A helper
    # not warm by then is ended, and the check, if needed, runs in the worker as before.
    kernel_check_helper: bool | None = None
    kernel_check_helper_wait_s: float = 5.0  # how long timing may wait for the helper to be warm
    # Experimental, off by default: a spin kernel of this many microseconds on the stream before each timed
    # call's start event, so the call's launches queue behind it and the window holds device time only
    # (without it, the host's launch latency of the first kernel is inside the window and moves with host load).
    head_start_us: float = 0.0
    # Where a suspicious speedup is re-measured (in a fresh process): None, the same device. Another GPU
    # only when the caller owns it (the evaluator pool re-measures on another of its own devices itself).
    verify_device: str | None = None
    # Fresh inputs in every timed round (defeats answers cached by input values); False: the rounds rotate
    # through four fixed input sets, as before session 3.
    fresh_inputs: bool = True

    def __post_init__(self) -> None:
        if self.device == "cuda":  # one evaluation runs on one device: name it
            object.__setattr__(self, "device", "cuda:0")
        if not (self.device == "cpu" or self.device.startswith("cuda:")):
            raise ValueError(f"unknown device {self.device!r}; use cpu, cuda or cuda:N")
        if self.baseline not in BASELINES:
            raise ValueError(f"unknown baseline {self.baseline!r}; choose one of {', '.join(BASELINES)}")
        if self.trials < 1:
            raise ValueError("trials must be at least 1")
        if self.kernel_check not in ("auto", "always", "never"):
            raise ValueError("kernel_check must be 'auto', 'always' or 'never'")
        if self.kernel_check_helper_wait_s < 0:
            raise ValueError("kernel_check_helper_wait_s must be >= 0")
        if self.size not in ("full", "small"):
            raise ValueError("size must be 'full' or 'small'")
        if self.verify_device is not None and not (self.verify_device == "cpu" or self.verify_device.startswith("cuda")):
            raise ValueError(f"unknown verify_device {self.verify_device!r}; use cpu, cuda or cuda:N")
        if not 0 <= self.head_start_us <= 100_000:
            raise ValueError("head_start_us must be between 0 and 100000 microseconds")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "EvalOptions":
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown evaluation options: {', '.join(sorted(unknown))}")
        return cls(**d)


@dataclass(frozen=True)
class Timing:
    """The paired-round timing summary (see cudaopt.evaluate.stats)."""

    speedup_raw: float  # median of the seven bucket means, before rounding
    speedup: float  # rounded toward 1.00 at two decimals
    ci_low: float
    ci_high: float
    bucket_means: tuple[float, ...]
    bucket_variance: float
    stable: bool
    rounds: int
    ref_time_us: float  # median per-call time of the baseline
    cand_time_us: float
    seconds: float  # wall seconds spent timing
    verified: bool | None = None  # None: no verification needed; True/False: its outcome
    verify_speedup: float | None = None
    window: str = "events"  # "events" (stream events) or "device" (device-wide synchronisation)

    @property
    def rel_ci(self) -> float:
        return (self.ci_high - self.ci_low) / 2 / self.speedup_raw if self.speedup_raw else float("inf")


@dataclass(frozen=True)
class EvalResult:
    status: str
    stage_reached: str
    message: str = ""  # one line: why it ended where it did
    error: str = ""  # the compiler output or traceback, trimmed
    correct: bool = False
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    trials_passed: int = 0
    trials: int = 0
    timing: Timing | None = None
    findings: tuple[Finding, ...] = ()
    baseline: str = "eager"
    device: str = "cpu"
    device_name: str = ""
    precision: dict = field(default_factory=dict)  # the global flags the harness fixed, reported
    seconds: float = 0.0  # wall time of the whole evaluation
    gpu_seconds: float = 0.0  # device-held time (worker lifetime on a GPU)
    compile_seconds: float = 0.0
    compile_cached: bool = False
    task: str = ""
    guard_seconds: float = 0.0  # time the worker spent in dynamic guard checks (outside timing windows)
    guard_parts: dict = field(default_factory=dict)  # guard_seconds by check
    phase_seconds: dict = field(default_factory=dict)  # wall seconds by stage: start, compile, build, executable, correct, timed
    kernels: tuple[str, ...] = ()  # device kernels the candidate launched, when the profiler check ran
    notes: tuple[str, ...] = ()  # what the harness wants said that is not a finding (a check it skipped, say)

    @property
    def speedup(self) -> float | None:
        return self.timing.speedup if (self.timing and self.status == "ok") else None

    @property
    def speedup_ci(self) -> list[float] | None:
        return [self.timing.ci_low, self.timing.ci_high] if (self.timing and self.status == "ok") else None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["findings"] = [f.to_dict() for f in self.findings]
        d["speedup"] = self.speedup
        d["speedup_ci"] = self.speedup_ci
        return d

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict) -> "EvalResult":
        d = dict(d)
        d.pop("speedup", None)
        d.pop("speedup_ci", None)
        t = d.get("timing")
        if t is not None:
            t = dict(t)
            t["bucket_means"] = tuple(t["bucket_means"])
            d["timing"] = Timing(**t)
        d["findings"] = tuple(Finding.from_dict(f) for f in d.get("findings", ()))
        d["kernels"] = tuple(d.get("kernels", ()))
        d["notes"] = tuple(d.get("notes", ()))
        return cls(**d)

    def __repr__(self) -> str:  # readable in a REPL, like torch.utils.benchmark.Measurement
        s = f"EvalResult({self.task or '?'}: {self.status} at {self.stage_reached}"
        if self.speedup is not None:
            s += f", speedup {self.speedup:.2f}x [{self.timing.ci_low:.3f}, {self.timing.ci_high:.3f}]"
        if self.findings:
            s += f", findings: {', '.join(sorted({f.category for f in self.findings}))}"
        return s + ")"


def remeasurement_options(options: EvalOptions, **changes) -> EvalOptions:
    """The options of a re-measurement: the profiler's kernel check ("auto") is not run again, the first
    run listed the kernels already; "always" and "never" stand."""
    check = "never" if options.kernel_check == "auto" else options.kernel_check
    return replace(options, kernel_check=check, **changes)


def verification_failure(first: EvalResult, second: EvalResult, where: str) -> EvalResult:
    """The final result when the re-measurement of a suspicious speedup ends in a failure of the candidate:
    the second run's status and findings (merged with the first's), the first timing kept for the record,
    unverified; `speedup` is then None, as for any result that is not ok."""
    seen = {(f.category, f.message) for f in first.findings}
    findings = first.findings + tuple(f for f in second.findings if (f.category, f.message) not in seen)
    timing = replace(first.timing, verified=False, verify_speedup=None) if first.timing else None
    return replace(first, status=second.status, findings=findings, timing=timing,
                   correct=first.correct and second.status != "incorrect",
                   message=f"{where}: {second.status}" + (f": {second.message}" if second.message else ""),
                   error=second.error or first.error, gpu_seconds=first.gpu_seconds + second.gpu_seconds)

