"""A cheap stand-in for `evaluate()` that still runs each candidate for real, for load tests and benchmarks.

The candidate source is run as a plain Python script in a subprocess of its own session, under a memory
limit and a hard timeout that kills the whole process group; only the last few KB of its output are kept,
so a candidate that prints gigabytes costs time, not memory. A script that exits 0 is `ok`, with the
speedup it prints as `SPEEDUP=<x>` (1.0 if it prints none). The reference is ignored.

Its deadline is `options.exec_floor_s`, so a load test chooses how long a hanging candidate costs.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from cudaopt.evaluate.result import EvalOptions, EvalResult, Timing

MEMORY_LIMIT_BYTES = 256 << 20  # address space per snippet: enough for Python, small enough to hit fast
OUTPUT_TAIL_BYTES = 4096


def _source_of(candidate: Any) -> str:
    return candidate.source if hasattr(candidate, "source") else str(candidate)


def _prelude(limit: int) -> str:
    # Set inside the child rather than with preexec_fn, which is unsafe in a threaded parent.
    return f"import resource as _r; _r.setrlimit(_r.RLIMIT_AS, ({limit}, {limit})); del _r\n"


def _drain(stream, tail: bytearray) -> None:
    fd = stream.fileno()
    while chunk := os.read(fd, 1 << 16):
        tail.extend(chunk)
        del tail[:-OUTPUT_TAIL_BYTES]


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def fake_timing(speedup: float, seconds: float) -> Timing:
    return Timing(speedup_raw=speedup, speedup=speedup, ci_low=speedup * 0.99, ci_high=speedup * 1.01,
                  bucket_means=(speedup,) * 7, bucket_variance=0.0, stable=True, rounds=70,
                  ref_time_us=100.0, cand_time_us=100.0 / speedup if speedup else 0.0, seconds=seconds)


def snippet_evaluate(reference: Any, candidate: Any, options: EvalOptions,
                     memory_limit: int = MEMORY_LIMIT_BYTES) -> EvalResult:
    start = time.monotonic()
    base = {"baseline": options.baseline, "device": options.device}
    proc = subprocess.Popen([sys.executable, "-I", "-c", _prelude(memory_limit) + _source_of(candidate)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    tail = bytearray()
    reader = threading.Thread(target=_drain, args=(proc.stdout, tail), daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=options.exec_floor_s)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        _kill_group(proc)  # also ends anything the snippet started in its session
        proc.wait()
        reader.join(timeout=5)
        proc.stdout.close()
    seconds = time.monotonic() - start
    out = bytes(tail).decode(errors="replace")
    if code is None:
        return EvalResult(status="timeout", stage_reached="executable", seconds=seconds, error=out[-1000:],
                          message=f"killed after {options.exec_floor_s:g} s", **base)
    if code != 0:
        why = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        if "MemoryError" in out:
            why = "out of memory (MemoryError)"
        return EvalResult(status="runtime_error", stage_reached="executable", message=why, error=out[-1000:],
                          seconds=seconds, **base)
    found = re.findall(r"SPEEDUP=([0-9.]+)", out)
    speedup = float(found[-1]) if found else 1.0
    return EvalResult(status="ok", stage_reached="timed", correct=True, timing=fake_timing(speedup, seconds),
                      seconds=seconds, **base)


# Candidates that misbehave in every way a real one can on a CPU, and the statuses each may end in
# (memory and output floods may hit the deadline first on a slow machine).
MISBEHAVING = {
    "ok": "print('SPEEDUP=1.25')",
    "raise": "raise RuntimeError('illegal memory access (pretend)')",
    "exit": "import os; os._exit(139)",
    "hang": "import time; time.sleep(600)",
    "oom": "chunks = []\nwhile True: chunks.append(bytearray(50 * 2**20))",
    "flood": "import sys\nwhile True: sys.stdout.write('x' * 65536)",
    "chatty": "import sys\nfor _ in range(1600): sys.stdout.write('y' * 65536)\nprint('SPEEDUP=2.0')",
    "orphan": "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              "time.sleep(600)",
}
EXPECTED_STATUS = {"ok": {"ok"}, "raise": {"runtime_error"}, "exit": {"runtime_error"}, "hang": {"timeout"},
                   "oom": {"runtime_error", "timeout"}, "flood": {"timeout"}, "chatty": {"ok", "timeout"},
                   "orphan": {"timeout"}}


def load_mix(total: int, seed: int = 0) -> list[str]:
    """`total` kinds of candidate, three quarters well-behaved and the rest spread over the others, shuffled."""
    import random

    bad = [k for k in MISBEHAVING if k != "ok"]
    n_bad = max(len(bad), total // 4)
    kinds = ["ok"] * (total - n_bad) + [bad[i % len(bad)] for i in range(n_bad)]
    random.Random(seed).shuffle(kinds)
    return kinds
