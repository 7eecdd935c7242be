"""Compile many candidates in parallel ahead of evaluation, into the evaluator's per-source cache.

Building a CUDA extension costs tens of seconds of one CPU core (mostly parsing torch's headers) and
little GPU; evaluating costs seconds of GPU. Building everything first, many at a time, keeps the GPU
from waiting on compilers. A candidate that fails to build here is simply left for the evaluator,
which reports the compile error as its result.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cudaopt.evaluate.runner import default_cache_dir, source_hash

_BUILD = """
import os, sys
from cudaopt.tasks.loader import import_source
src = sys.stdin.read()
os.chdir(os.environ["TORCH_EXTENSIONS_DIR"])
import_source(src, "cudaopt_prebuild", "candidate.py")
"""


@dataclass(frozen=True)
class BuildOutcome:
    source_hash: str
    ok: bool
    seconds: float
    message: str


def _build_one(source: str, cache: str, timeout_s: float) -> BuildOutcome:
    import time

    h = source_hash(source)
    ext = os.path.join(cache, "extensions", h)
    os.makedirs(ext, exist_ok=True)
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=ext, MAX_JOBS="1")
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, "-c", _BUILD], input=source, text=True, capture_output=True, env=env,
                           timeout=timeout_s, start_new_session=True)
        ok = p.returncode == 0
        msg = "" if ok else (p.stderr.strip().splitlines() or ["failed"])[-1][:200]
    except subprocess.TimeoutExpired:
        ok, msg = False, f"build did not finish within {timeout_s:.0f} s"
    return BuildOutcome(h, ok, time.time() - t0, msg)


def prebuild(sources: list[str], jobs: int | None = None, cache_dir: str | None = None, timeout_s: float = 600) -> list[BuildOutcome]:
    """Build each distinct source that uses load_inline; `jobs` builds at a time (default: CPU count)."""
    cache = cache_dir or default_cache_dir()
    todo = list({source_hash(s): s for s in sources if "load_inline" in s or "cpp_extension" in s}.values())
    jobs = jobs or max(1, (os.cpu_count() or 2) - 1)
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(lambda s: _build_one(s, cache, timeout_s), todo))
