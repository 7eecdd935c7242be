"""Process-level guards for the candidate's worker: scratch folder, audit hook, tamper snapshot.

The audit hook sees what candidate Python does (open for writing, subprocess, sockets, gc scans, loading
libraries). It is armed only while candidate code runs (import, construction, calls), so the harness's
own compilation of baselines is not mistaken for the candidate's.
"""

from __future__ import annotations

import gc
import importlib.util
import operator
import os
import re
import subprocess
import sys
import sysconfig
import threading
import time

import torch

# Executables the C++/CUDA build may start on the candidate's behalf (torch.utils.cpp_extension).
BUILD_TOOLS = {"ninja", "c++", "g++", "gcc", "cc", "nvcc", "clang", "clang++", "ld", "which", "cicc", "ptxas"}


_HARMLESS_WRITES = {"/dev/null"}
# A peek is a read of some process's state: /proc/<pid>/ (which /proc/self and /proc/thread-self resolve
# to) or shared memory. System-wide facts are not: Inductor's vector-ISA probe reads /proc/cpuinfo, and a
# torch.compile candidate on the H200 read /proc/sys/kernel/random/boot_id.
_PROCESS_STATE = re.compile(r"^/proc/(\d+|self|thread-self)(/|$)|^/dev/shm(/|$)")


def _package_dir(name: str) -> str | None:
    spec = importlib.util.find_spec(name)  # without importing it: Triton is heavy, and may be absent
    locs = list(spec.submodule_search_locations or []) if spec else []
    return os.path.realpath(locs[0]) + os.sep if locs else None


# torch.compile and Triton start short helper processes while they compile (Inductor's vector-ISA probe
# in a Python child, `openssl sha512` over a precompiled header, Triton's `ldconfig -p`, ptxas). A process
# started from their own code is allowed; one started from any other code, the candidate's, is not.
# (Native code can start processes without Python seeing it at all: the hook is a tripwire, see hacking.md.)
_COMPILER_DIRS = tuple(d for d in (_package_dir("torch._inductor"), _package_dir("triton")) if d)
# Dynamo formats the traceback of an error it recovers from (traceback.format_exc() in convert_frame), and
# the standard library reads tb_frame to do it: torch.compile of the GRU and LSTM tasks was rejected as
# reference_peek on the H200 (session 8). Frame attributes read from these packages' own code are theirs.
_FRAME_READER_DIRS = _COMPILER_DIRS + tuple(d for d in (_package_dir("torch._dynamo"),) if d)
_SKIP_FRAMES = {os.path.realpath(subprocess.__file__), os.path.realpath(__file__)}
# The standard library's own frames are looked through too (pathlib, shutil, multiprocessing): what counts
# is the first frame outside it. Skipping only ever reaches an outer frame, so a frame forged under a
# standard-library file name leads back to the candidate's own.
_STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep


def _skipped(path: str) -> bool:
    return path in _SKIP_FRAMES or (path.startswith(_STDLIB) and "-packages" + os.sep not in path)


def _started_by_compiler(dirs: tuple[str, ...] = _COMPILER_DIRS) -> bool:
    """Whether the first frame outside the standard library (and this file) is the own code of a package
    under `dirs` (by default torch._inductor and Triton)."""
    if not dirs:
        return False
    f = sys._getframe(1)
    while f is not None and _skipped(os.path.realpath(f.f_code.co_filename)):
        f = f.f_back
    path = os.path.realpath(f.f_code.co_filename) if f is not None else ""
    if not path.startswith(dirs):
        return False
    # The frame must run in the namespace of the imported module its file belongs to: code compiled by
    # the candidate under a borrowed file name, into a dict of its own, does not.
    mod = sys.modules.get(f.f_globals.get("__name__", ""))
    return mod is not None and mod.__dict__ is f.f_globals and os.path.realpath(getattr(mod, "__file__", "") or "") == path


class Sandbox:
    def __init__(self, scratch: str, allowed_write_roots: list[str], enforce: bool = True) -> None:
        # enforce=False: the reference's twin. It runs the same checks around the reference's calls and
        # refuses nothing, so the two sides of a timed round pay the same hook costs.
        self.enforce = enforce
        self.scratch = scratch
        self.allowed = [os.path.realpath(p) for p in [scratch, *allowed_write_roots]]
        self.armed = False
        self.events: list[tuple[str, str, str]] = []  # (category, message, evidence)
        self._seen: set = set()
        sys.addaudithook(self._hook)

    def _record(self, category: str, message: str, evidence: str) -> None:
        key = (category, evidence[:200])
        if key not in self._seen:
            self._seen.add(key)
            self.events.append((category, message, evidence[:300]))

    def _hook(self, event: str, args) -> None:  # noqa: C901 - one dispatch over audit events
        if not self.armed:
            return
        try:
            if event == "open":
                path, mode, flags = args[0], args[1], args[2] if len(args) > 2 else 0
                if isinstance(path, int):
                    return
                writes = any(c in str(mode) for c in "wax+") if mode is not None else bool(
                    (flags or 0) & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC))
                if writes:
                    real = os.path.realpath(os.fsdecode(path))
                    if real in _HARMLESS_WRITES:
                        return
                    if not any(real == r or real.startswith(r + os.sep) for r in self.allowed):
                        self._record("process_escape", "candidate opened a file for writing outside its scratch folder", f"{real} ({mode})")
                        raise PermissionError(f"cudaopt sandbox: writing {real} is not allowed")
                elif _PROCESS_STATE.match(os.path.realpath(os.fsdecode(path))) and not _started_by_compiler():
                    self._record("reference_peek", "candidate read process or shared-memory files", str(path))
            elif event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.fork", "os.forkpty", "pty.spawn"):
                exe = args[0] if args else ""
                # subprocess raises "subprocess.Popen" and then, where it spawns with posix_spawn (Triton's
                # ptxas call passes close_fds=False), "os.posix_spawn" too: both carry (executable, argv, ...)
                # and both get the same rules, or the second refuses what the first allowed.
                if event in ("subprocess.Popen", "os.posix_spawn"):
                    argv = args[1] if len(args) > 1 else None
                    name = os.path.basename(os.fsdecode(exe)) if exe else os.path.basename(str((argv or [""])[0]))
                    if name in BUILD_TOOLS:
                        return
                    # `ldconfig -p` only lists the linker cache: Triton's driver and ctypes.util.find_library
                    # run it to find libcuda, and every Triton or torch.compile candidate failed on the GPU
                    # without it. Any other ldconfig call (which rewrites the cache) stays refused.
                    if name == "ldconfig" and [os.fsdecode(a) for a in (argv or [])[1:]] == ["-p"]:
                        return
                    if _started_by_compiler():
                        return
                self._record("process_escape", f"candidate started a process ({event})", str(args)[:200])
                raise PermissionError("cudaopt sandbox: starting processes is not allowed")
            elif event in ("socket.connect", "socket.bind", "socket.getaddrinfo", "socket.sendto"):
                self._record("process_escape", f"candidate used the network ({event})", str(args)[:200])
                raise PermissionError("cudaopt sandbox: network access is not allowed")
            elif event in ("gc.get_objects", "gc.get_referrers", "gc.get_referents"):
                self._record("reference_peek", f"candidate scanned the garbage collector ({event})", event)
            elif event == "object.__getattr__" and len(args) > 1 and args[1] in ("tb_frame", "gi_frame", "cr_frame", "ag_frame"):
                # The way to the harness's frames (and whatever they hold) without sys._getframe.
                if _started_by_compiler(_FRAME_READER_DIRS):
                    return
                self._record("reference_peek", f"candidate reached interpreter frames through {args[1]}", str(args[1]))
            elif event == "sys.settrace" or event == "sys.setprofile":
                self._record("timer_tamper", f"candidate installed a {event.split('.')[-1]} hook", event)
            elif event == "ctypes.dlopen":
                name = str(args[0]) if args else ""
                if name in ("None", "") or "libc." in name or "libcuda" in name or "libcudart" in name:
                    self._record("process_escape", "candidate loaded a system library through ctypes", name)
        except PermissionError:
            if self.enforce:
                raise
        except Exception:  # noqa: BLE001 - a hook must never break the harness itself
            return

    def __enter__(self):
        self.armed = True
        return self

    def __exit__(self, *exc):
        self.armed = False
        return False


# ---------------------------------------------------------------------------------------------------------
# Tamper snapshot: identities of everything the timing and checking rely on.


def _tamper_targets() -> dict[str, object]:
    import cudaopt.evaluate.clock as clock
    import cudaopt.evaluate.compare as compare
    import cudaopt.evaluate.stats as stats

    targets = {
        "time.perf_counter": time.perf_counter,
        "time.perf_counter_ns": time.perf_counter_ns,
        "time.time": time.time,
        "time.monotonic": time.monotonic,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.current_stream": torch.cuda.current_stream,
        "torch.allclose": torch.allclose,
        "torch.equal": torch.equal,
        "torch.Tensor.__eq__": torch.Tensor.__eq__,
        "torch.Tensor.cpu": torch.Tensor.cpu,
        "torch.Tensor.clone": torch.Tensor.clone,
        "torch.Tensor.copy_": torch.Tensor.copy_,
        "torch.nn.Module.__call__": torch.nn.Module.__call__,
        "torch.no_grad": torch.no_grad,
    }
    for name in ("record", "elapsed_time", "synchronize", "query"):
        if hasattr(torch.cuda.Event, name):
            targets[f"torch.cuda.Event.{name}"] = getattr(torch.cuda.Event, name)
    for mod in (clock, compare, stats):
        for k, v in vars(mod).items():
            if callable(v) and not k.startswith("__"):
                targets[f"{mod.__name__}.{k}"] = v
    return targets


class TamperWatch:
    def __init__(self) -> None:
        self.snapshot = _tamper_targets()

    def changed(self) -> list[str]:
        now = _tamper_targets()
        return [k for k, v in self.snapshot.items() if now.get(k) is not v]


# ---------------------------------------------------------------------------------------------------------
# API watch: the Python functions and classes both sides run through. The reference is timed in the
# candidate's process, so a candidate that replaces one (nn.Linear.forward, F.linear, torch.relu) with a
# slower version makes the reference slower without touching any clock: on a 2-core CPU a replaced
# nn.Linear.forward that ran three extra times read ok, 3.94x for an honest addmm, and so did F.linear
# (session 62, set through type.__setattr__, which the static layer does not read).

# Replaced by torch itself at run time, on nothing the timed calls run: Dynamo, on its first compile, wraps
# Module.__init__ and __setstate__ (to tag modules made inside a forward) and torch.manual_seed.
_API_REPLACED_BY_TORCH = {("torch.nn.Module", "__init__"), ("torch.nn.Module", "__setstate__"), ("torch", "manual_seed")}
# Written into a class's own namespace by Python itself (type.__annotations__ on first read, copyreg's
# __slotnames__ on the first copy): never a replacement of what a call runs.
_API_BOOKKEEPING = frozenset({"__annotations__", "__slotnames__", "__doc__", "__abstractmethods__", "_abc_impl"})


def _api_spaces() -> list[tuple[str, object, bool]]:
    """(label, owner, shadows): the namespaces watched. `shadows`: a name added there would hide one a call
    finds now (a class's inherited attribute; torch._VF's __getattr__-served functions)."""
    mods = ["torch", "torch._C", "torch._C._nn", "torch._C._linalg", "torch._C._fft", "torch._C._special",
            "torch.nn.functional", "torch.functional", "torch._tensor", "torch.linalg", "torch.fft", "torch.special",
            "torch.overrides", "torch.nn.parameter", "torch.autograd.function", "builtins"]
    mods += sorted(n for n in sys.modules if n.startswith("torch.nn.modules."))
    spaces = [(n, sys.modules[n], False) for n in mods if n in sys.modules]
    if "torch._VF" in sys.modules:
        spaces.append(("torch._VF", sys.modules["torch._VF"], True))
    classes = {"torch.Tensor": torch.Tensor, "torch._C.TensorBase": torch._C.TensorBase,
               "torch.nn.Parameter": torch.nn.Parameter, "torch.autograd.Function": torch.autograd.Function}
    classes |= {f"torch.nn.{name}": c for name, c in vars(torch.nn).items() if isinstance(c, type) and issubclass(c, torch.nn.Module)}
    return spaces + [(label, c, True) for label, c in sorted(classes.items())]


class ApiWatch:
    """The callables of the watched namespaces, taken before the candidate's import.

    changed() is cheap when nothing moved (each namespace's values compared by identity, about 0.3 ms in all
    on a 2-core CPU) and names what did otherwise: a callable replaced or removed, or a name added that hides
    one a call found before. Lazily imported submodules and new helper names are not changes."""

    def __init__(self) -> None:
        self.spaces = _api_spaces()
        self.namespaces = [vars(o) for _, o, _ in self.spaces]  # live views: read once, compared at every check
        self.snapshot = [{k: v for k, v in ns.items() if _api_callable(v)} for ns in self.namespaces]
        # what a lookup finds now (torch._VF serves its functions through __getattr__ from .vf)
        self.found = [frozenset(dir(o)) | frozenset(dir(getattr(o, "vf", None))) if shadows else frozenset()
                      for _, o, shadows in self.spaces]
        self._quick_baseline()

    def _quick_baseline(self) -> None:
        self.values = [tuple(ns.values()) for ns in self.namespaces]

    def _unmoved(self) -> bool:
        # identity, never ==: an object whose __eq__ says True to everything must not pass for the original
        return all(len(v) == len(ns) and all(map(operator.is_, v, ns.values())) for ns, v in zip(self.namespaces, self.values))

    def changed(self) -> list[str]:
        if self._unmoved():
            return []
        out = []
        for (label, _, shadows), now, snap, found in zip(self.spaces, self.namespaces, self.snapshot, self.found):
            out += [f"{label}.{k}" for k, v in snap.items()
                    if now.get(k) is not v and (label, k) not in _API_REPLACED_BY_TORCH]
            if shadows:
                out += [f"{label}.{k}" for k in now.keys() - snap.keys()
                        if k in found and k not in _API_BOOKKEEPING and _api_callable(now[k])]
        if not out:
            self._quick_baseline()  # a benign change (a submodule imported, a flag flipped): the new fast baseline
        return out


def _api_callable(v) -> bool:
    # a module too: `F` in torch.nn.modules.linear, swapped for an object whose `linear` is slower
    return callable(v) or isinstance(v, (staticmethod, classmethod, property, type(sys)))


def precision_flags() -> dict:
    flags = {
        "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda.matmul.allow_fp16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "cuda.matmul.allow_bf16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "cudnn.deterministic": torch.backends.cudnn.deterministic,
    }
    return flags


# The process-wide settings (torch's, the collector's, the CPU affinity) that decide how fast the reference
# runs. The reference is timed in the candidate's process, so a candidate that changes one (a call such as
# set_num_threads, which no assignment shows) makes the reference slower without touching any clock: on a
# 2-core CPU, one intra-op thread outside the candidate's own calls read 1.72x for an honest addmm
# (session 61). Precision flags are precision_flags' business.
_GLOBAL_HOOKS = ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_pre_hooks", "_global_backward_hooks",
                 "_global_module_registration_hooks", "_global_parameter_registration_hooks",
                 "_global_buffer_registration_hooks")
_SHARED_SETTINGS = {
    "num_threads": lambda: torch.get_num_threads(),
    "num_interop_threads": lambda: torch.get_num_interop_threads(),
    "grad_enabled": lambda: torch.is_grad_enabled(),
    "inference_mode": lambda: torch.is_inference_mode_enabled(),
    "anomaly_detection": lambda: torch.is_anomaly_enabled(),
    "deterministic_algorithms": lambda: (torch.are_deterministic_algorithms_enabled(),
                                         torch.is_deterministic_algorithms_warn_only_enabled()),
    "default_dtype": lambda: torch.get_default_dtype(),
    "autocast": lambda: (torch.is_autocast_enabled("cpu"), torch.is_autocast_enabled("cuda")),
    "cudnn.enabled": lambda: torch.backends.cudnn.enabled,
    "cudnn.benchmark": lambda: (torch.backends.cudnn.benchmark, torch.backends.cudnn.benchmark_limit),
    "mkldnn.enabled": lambda: torch.backends.mkldnn.enabled,
    "nnpack.enabled": lambda: torch._C._get_nnpack_enabled(),
    "opt_einsum": lambda: (torch.backends.opt_einsum.enabled, torch.backends.opt_einsum.strategy),
    "sdp_backends": lambda: (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.mem_efficient_sdp_enabled(),
                             torch.backends.cuda.math_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled()),
    "preferred_blas_library": lambda: str(torch.backends.cuda.preferred_blas_library()),
    "preferred_linalg_library": lambda: str(torch.backends.cuda.preferred_linalg_library()),
    "cuda.matmul.allow_fp16_accumulation": lambda: torch.backends.cuda.matmul.allow_fp16_accumulation,
    "mha_fastpath": lambda: torch.backends.mha.get_fastpath_enabled(),
    "default_device": lambda: str(torch.get_default_device()),
    # Per-op overhead on every torch call: a profiler left recording, a torch-function or dispatch mode left
    # on the stack (torch's own FlopCounterMode needs no __torch_function__ in the candidate's source).
    "profiler": lambda: torch._C._autograd._profiler_enabled(),
    "torch_function_modes": lambda: torch._C._len_torch_function_stack(),
    "torch_dispatch_modes": lambda: torch._C._len_torch_dispatch_stack(),
    # hooks every nn.Module runs, the reference's included (one that redid their work read 3.96x, session 61)
    "module_global_hooks": lambda: tuple(len(getattr(torch.nn.modules.module, name)) for name in _GLOBAL_HOOKS),
    # Python's collector (a threshold of 1 collects on nearly every allocation; the side that makes more
    # Python objects pays more) and the CPUs the process may run on.
    "gc": lambda: (gc.isenabled(), gc.get_threshold()),
    # a callback Python runs at every collection, the reference's included (session 62; not measured: the
    # same move as a global module hook, one level down)
    "gc_callbacks": lambda: len(gc.callbacks),
    "cpu_affinity": lambda: tuple(sorted(os.sched_getaffinity(0))),
    # CUDA's, read only once CUDA is up (the defaults otherwise, so that a candidate's first CUDA call is no change)
    "cuda_sync_debug_mode": lambda: torch.cuda.get_sync_debug_mode() if torch.cuda.is_initialized() else 0,
    "cuda_current_stream": lambda: torch.cuda.current_stream().cuda_stream if torch.cuda.is_initialized() else 0,
}
# What a `with torch.no_grad()` in the harness itself changes: compared only between readings taken in
# the same context (before and after calls inside one block), never against the setup reading.
CONTEXT_SETTINGS = frozenset({"grad_enabled", "inference_mode"})


def shared_settings() -> dict:
    """The current value of each shared setting this torch can report (one it cannot is left out)."""
    out = {}
    for name, read in _SHARED_SETTINGS.items():
        try:
            out[name] = read()
        except (AttributeError, RuntimeError, TypeError, OSError):  # not in this torch build, or this OS
            continue
    return out


def settings_changed(before: dict, now: dict, skip: frozenset = frozenset()) -> dict:
    """{name: (before, now)} for each shared setting that differs, `skip` left out."""
    return {k: (before.get(k), now.get(k)) for k in sorted(set(before) | set(now))
            if k not in skip and before.get(k) != now.get(k)}


def describe_settings(diff: dict) -> str:
    return ", ".join(f"{k} {a} -> {b}" for k, (a, b) in diff.items())


def set_precision(allow_tf32: bool) -> dict:
    """Fix the global precision flags for both sides; returns what was set (reported in the result)."""
    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.backends.cudnn.allow_tf32 = allow_tf32
    torch.set_float32_matmul_precision("high" if allow_tf32 else "highest")
    return precision_flags()


def thread_ids() -> frozenset:
    """The ids of this process's live threads (OS threads: native ones started from C++ count too)."""
    try:
        return frozenset(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:
        return frozenset(t.ident for t in threading.enumerate())


def new_threads(before: frozenset) -> list[str]:
    """Threads alive now that were not alive at `before`, as 'name(tid)' (names help tell a library's own
    lazily started helper from a candidate's worker in a finding's evidence).

    Known false positive, left alone: Python's join returns before the OS thread has left /proc (9 in 3,000
    joins on a 2-core machine), so a candidate that starts and joins a thread inside its call can, rarely,
    be listed. Waiting for such threads to leave is not safe: a thread that did deferred work after the
    call returned and then ended quickly would be excused too (the red team's
    side_stream_cpu_thread_via_module_attr is caught only because it is still listed). Telling the two
    apart needs each thread's end time against the call's end."""
    return _named(thread_ids() - before)


def _named(tids) -> list[str]:
    out = []
    for tid in sorted(tids):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue  # listed a moment ago, gone now: a joined thread the kernel had not yet reaped
        out.append(f"{name}({tid})")
    return out


def child_pids() -> list[int]:
    pids = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return pids
