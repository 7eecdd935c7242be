"""Compile many candidates in parallel ahead of evaluation, into the evaluator's per-source cache.

Building a CUDA extension costs tens of seconds of one CPU core (mostly parsing torch's headers) and
little GPU; evaluating costs seconds of GPU. Building everything first, many at a time, keeps the GPU
from waiting on compilers. A candidate that fails to build here is simply left for the evaluator,
which reports the compile error as its result.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cudaopt.evaluate.runner import default_cache_dir, source_hash

_BUILD = """
import os, sys, tempfile
from cudaopt.tasks.loader import import_source
src = sys.stdin.read()
ext = os.environ["TORCH_EXTENSIONS_DIR"]
os.chdir(ext)
if os.environ.get("CUDAOPT_PREBUILD_SANDBOX") == "1":
    # untrusted code (a model's answer): imported under the worker's own sandbox, which may write only into
    # its build folder and the cache, and start only the build tools
    from cudaopt.evaluate.sandbox import Sandbox
    box = Sandbox(tempfile.mkdtemp(prefix="cudaopt-prebuild-"), [os.environ["CUDAOPT_CACHE_ROOT"], ext])
    try:
        with box:
            import_source(src, "cudaopt_prebuild", "candidate.py")
    finally:
        if box.events:
            sys.stderr.write("refused while building: " + "; ".join(f"{c}: {m}" for c, m, _ in box.events) + "\\n")
    sys.exit(3 if box.events else 0)
import_source(src, "cudaopt_prebuild", "candidate.py")
"""


@dataclass(frozen=True)
class BuildOutcome:
    source_hash: str
    ok: bool
    seconds: float
    message: str


def _build_one(source: str, cache: str, timeout_s: float, sandboxed: bool = False, max_jobs: int = 1) -> BuildOutcome:
    import time

    h = source_hash(source)
    ext = extension_dir(source, cache)
    os.makedirs(ext, exist_ok=True)
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=ext, MAX_JOBS=str(max_jobs), CUDAOPT_CACHE_ROOT=cache,
               CUDAOPT_PREBUILD_SANDBOX="1" if sandboxed else "0")
    t0 = time.time()
    # A session of its own, so a timeout ends the compilers it started too, not only the Python process.
    p = subprocess.Popen([sys.executable, "-c", _BUILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        _, err = p.communicate(source, timeout=timeout_s)
        ok = p.returncode == 0
        msg = "" if ok else (err.strip().splitlines() or ["failed"])[-1][:200]
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        ok, msg = False, f"build did not finish within {timeout_s:.0f} s"
    return BuildOutcome(h, ok, time.time() - t0, msg)


def needs_build(source: str) -> bool:
    return "load_inline" in source or "cpp_extension" in source


def extension_dir(source: str, cache_dir: str | None = None) -> str:
    """The evaluator's build folder for this source (`TORCH_EXTENSIONS_DIR` of its worker and of prebuild)."""
    return os.path.join(cache_dir or default_cache_dir(), "extensions", source_hash(source))


def is_built(source: str, cache_dir: str | None = None) -> bool:
    """Whether the evaluator's cache already holds a built extension for this source."""
    from cudaopt.evaluate.child import extension_built

    return extension_built(extension_dir(source, cache_dir))


def prebuild(sources: list[str], jobs: int | None = None, cache_dir: str | None = None, timeout_s: float = 600,
             sandboxed: bool = False, max_jobs: int = 1) -> list[BuildOutcome]:
    """Build each distinct source that uses load_inline; `jobs` builds at a time (default: CPU count).
    `sandboxed` imports each under the evaluator's sandbox (for sources nobody has read: a model's)."""
    cache = cache_dir or default_cache_dir()
    todo = list({source_hash(s): s for s in sources if needs_build(s)}.values())
    jobs = jobs or max(1, (os.cpu_count() or 2) - 1)
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(lambda s: _build_one(s, cache, timeout_s, sandboxed, max_jobs), todo))


def build_ahead(sources: list[str], device: str = "cuda", reference: str | list[str | None] | None = None,
                timeout_s: float = 300, cache_dir: str | None = None) -> list[BuildOutcome]:
    """Before a batch of new candidates is evaluated one after another, build their extensions side by side
    on the machine's cores, sandboxed. Each evaluation then finds its build in the cache: a batch pays about
    one build's wall time instead of one per candidate (~60 s each on the H200's host for a .cu that
    includes torch's headers). Sources the static guards reject, sources already built and a batch of one
    are left to the evaluator, which builds (or rejects) them as before; a failed build here is simply built
    again, and reported, by the evaluator. `reference`: the task's source for the static scan, or one per
    source."""
    from cudaopt.guards.findings import GuardPolicy
    from cudaopt.guards.static import scan

    kind = "cuda" if device.startswith("cuda") else "cpu"
    refs = reference if isinstance(reference, list) else [reference] * len(sources)  # one per source, or one for all
    todo = {source_hash(s): s for s, ref in zip(sources, refs)
            if needs_build(s) and not is_built(s, cache_dir)
            and not GuardPolicy().rejects(list(scan(s, device=kind, reference=ref)))}
    if len(todo) < 2:
        return []
    cores = os.cpu_count() or 2  # nothing is timed meanwhile: every core builds
    jobs = min(len(todo), cores)
    return prebuild(list(todo.values()), jobs=jobs, cache_dir=cache_dir, timeout_s=timeout_s, sandboxed=True,
                    max_jobs=2 if jobs * 2 <= cores else 1)
