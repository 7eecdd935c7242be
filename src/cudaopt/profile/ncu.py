"""Nsight Compute for one candidate: a small driver script imports the candidate in a subprocess under
`ncu`, calls it a few times inside a profiler range, and the CSV is parsed into per-kernel metrics.

What is profiled: only the candidate's forward calls inside `torch.cuda.profiler.start()/stop()`
(`--profile-from-start off`); the build, the weights' initialisation, the input generation and the
warm-up call stay out, and the reference model is never built. Every kernel launched inside those
calls is measured (library kernels the candidate calls too; `own` marks the candidate's), at most
`launch_count` launches. Only the metrics of `NCU_METRICS` are collected (`--metrics`, no sections),
with kernel replay. `--clock-control none` keeps the GPU's own clocks, as in CUDA-L2's setup.

The driver loads the candidate's extension from the evaluator's per-source cache
(`<cache>/extensions/<source hash>`, the folder `cudaopt.evaluate.prebuild` builds into), so a
candidate that was evaluated or prebuilt is not compiled again under ncu; a cold one is built there
once (and stays cached) outside the profiled range. The driver reports its phases (torch import,
build/load, set-up, profiled calls) on stderr; `run_ncu_detailed` returns them with the wall time.

Nothing here raises for a missing or forbidden `ncu`: the caller gets a status and the reason.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from cudaopt.profile.report import KernelProfile

# ncu metric -> the short name stored and shown. Values are read in base units (--print-units base).
NCU_METRICS = {
    "gpu__time_duration.sum": "time_ns",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "l1tex__t_sector_hit_rate.pct": "l1_hit_rate_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_rate_pct",
    "launch__registers_per_thread": "registers_per_thread",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum": "local_load_bytes",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum": "local_store_bytes",
    "launch__grid_size": "grid_size",
    "launch__block_size": "block_size",
}
_TIME_SCALE_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
_BYTE_SCALE = {"byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "kibyte": 1024.0, "mibyte": 1024.0**2, "gibyte": 1024.0**3}

DRIVER = '''\
"""cudaopt profile driver: load the candidate, one warm-up call, then CALLS profiled calls."""
import time
t0 = time.perf_counter()
import json
import sys
import torch
from cudaopt.tasks.loader import apply_size, check_candidate, check_reference, import_source, load_task

phases = {"import_torch_s": time.perf_counter() - t0}
ref_path, cand_path, size, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
task = load_task(ref_path)
ref = import_source(task.source, "cudaopt_profile_ref", ref_path)
check_reference(ref, ref_path)
apply_size(ref, size)
t = time.perf_counter()
cand = import_source(open(cand_path).read(), "cudaopt_profile_cand", cand_path)  # builds or loads the extension
phases["load_candidate_s"] = time.perf_counter() - t
check_candidate(cand, ref, cand_path)
t = time.perf_counter()
dev = torch.device("cuda:0")
torch.manual_seed(0)
model = cand.ModelNew(*ref.get_init_inputs()).to(dev).eval()
inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
with torch.no_grad():
    model(*inputs)
    torch.cuda.synchronize()
    phases["setup_s"] = time.perf_counter() - t
    t = time.perf_counter()
    torch.cuda.profiler.start()
    for _ in range(calls):
        model(*inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    phases["profiled_s"] = time.perf_counter() - t
print("cudaopt-profile-driver: phases " + json.dumps(phases), file=sys.stderr)
print("cudaopt-profile-driver: done", file=sys.stderr)
'''
_PHASES = re.compile(r"cudaopt-profile-driver: phases (\{[^\n]*\})")
DEFAULT_LAUNCH_COUNT = 100  # profiled launches at most: 3 calls of a few kernels are far below it; a candidate
# launching a kernel per row would otherwise pay ncu's multi-pass replay thousands of times


@dataclass(frozen=True)
class NcuRun:
    """One `run_ncu_detailed`: the outcome, and where the time went."""

    status: str  # ok | missing | not_permitted | failed | skipped
    reason: str
    kernels: list[KernelProfile] = field(default_factory=list)
    seconds: float = 0.0  # wall time of the ncu process(es), build included when the cache was cold
    phases: dict = field(default_factory=dict)  # the driver's own split: import_torch_s, load_candidate_s, setup_s, profiled_s
    extension_cached: bool | None = None  # a built extension was in the cache before ncu started (None: not looked)
    extension_dir: str = ""
    command: list[str] = field(default_factory=list)


def find_ncu(ncu_path: str | None = None) -> str | None:
    if ncu_path:
        return ncu_path if Path(ncu_path).exists() or shutil.which(ncu_path) else None
    for cand in (shutil.which("ncu"), os.environ.get("CUDA_HOME") and str(Path(os.environ["CUDA_HOME"]) / "bin" / "ncu"),
                 "/usr/local/cuda/bin/ncu"):
        if cand and Path(cand).exists():
            return cand
    return None


def _number(value: str, unit: str) -> float | None:
    v = value.strip().replace(",", "")  # ncu may print thousands separators
    if v in ("", "n/a", "N/A"):
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    u = unit.strip().lower()
    if u in _TIME_SCALE_NS:
        return x * _TIME_SCALE_NS[u]
    return x * _BYTE_SCALE.get(u, 1.0)


def parse_ncu_csv(text: str, own_names: set[str] | frozenset[str] = frozenset()) -> list[KernelProfile]:
    """Kernels from `ncu --csv` output (one row per launch and metric), launches of one kernel averaged,
    in first-launch order. Lines before the CSV header (the program's and ncu's messages) are skipped."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    reader = csv.DictReader(io.StringIO("\n".join(ln for ln in lines[start:] if ln.startswith('"'))))
    launches: dict[str, dict] = {}  # launch id -> {"kernel", metrics}
    for row in reader:
        if not row.get("Metric Name") or not row.get("Kernel Name"):
            continue
        short = NCU_METRICS.get(row["Metric Name"], row["Metric Name"])
        launch = launches.setdefault(row.get("ID", ""), {"kernel": row["Kernel Name"], "metrics": {}})
        value = _number(row.get("Metric Value", ""), row.get("Metric Unit", ""))
        if value is not None:
            launch["metrics"][short] = value
    per_kernel: dict[str, list[dict]] = defaultdict(list)
    for launch in launches.values():
        per_kernel[launch["kernel"]].append(launch["metrics"])
    out = []
    for name, runs in per_kernel.items():
        keys = sorted({k for m in runs for k in m})
        mean = {k: sum(m[k] for m in runs if k in m) / sum(k in m for m in runs) for k in keys}
        time_ns = mean.pop("time_ns", None)
        base = re.split(r"[(<]", name, maxsplit=1)[0].split("::")[-1].strip()
        out.append(KernelProfile(name=name, calls=len(runs), time_us=time_ns / 1e3 if time_ns is not None else None,
                                 metrics=mean, own=base in own_names))
    return out


def defined_kernels(candidate_source: str) -> set[str]:
    from cudaopt.guards.static import kernel_names

    return kernel_names(candidate_source)


def _diagnose(output: str, returncode: int) -> tuple[str, str]:
    """(status, reason) for an ncu run that produced no metrics."""
    if "ERR_NVGPUCTRPERM" in output:
        return "not_permitted", ("ncu may not read the GPU performance counters here (ERR_NVGPUCTRPERM); run as root or "
                                 "have an administrator set NVreg_RestrictProfilingToAdminUsers=0")
    errors = [ln.strip() for ln in output.splitlines() if "==ERROR==" in ln or "Error" in ln or "error:" in ln]
    if errors:
        return "failed", f"ncu exited {returncode}: {errors[0][:300]}"
    if "No kernels were profiled" in output or "==WARNING== No kernels" in output:
        return "failed", "ncu profiled no kernels: the candidate launched none inside the profiled calls"
    tail = output.strip().splitlines()[-1][:300] if output.strip() else "no output"
    return "failed", f"ncu exited {returncode} without metrics: {tail}"


def ncu_command(ncu: str, driver: Path, reference: Path, candidate: Path, *, size: str, calls: int, metrics: list[str],
                launch_count: int | None = None, target_processes: str = "all") -> list[str]:
    """The ncu command line; `launch_count` caps the profiled launches (None: no cap). `target_processes`
    stays `all`: `application-only` would spare the compiler processes of a cold build ncu's injection,
    but would profile nothing where `sys.executable` is a wrapper that starts the real interpreter."""
    cap = ["--launch-count", str(launch_count)] if launch_count else []
    return [ncu, "--clock-control", "none", "--profile-from-start", "off", "--target-processes", target_processes,
            "--replay-mode", "kernel", *cap, "--csv", "--print-units", "base", "--print-kernel-base", "function",
            "--metrics", ",".join(metrics), sys.executable, str(driver), str(reference), str(candidate), size, str(calls)]


def extension_dir(candidate_source: str, cache_dir: str | None = None) -> str:
    """The evaluator's build folder for this source (cudaopt.evaluate.prebuild's; imported on use, as torch is)."""
    from cudaopt.evaluate.prebuild import extension_dir as evaluator_extension_dir

    return evaluator_extension_dir(candidate_source, cache_dir)


def extension_built(ext_dir: str) -> bool:
    """Whether that folder holds a built extension (the worker's own test for `compile_cached`)."""
    from cudaopt.evaluate.child import extension_built as worker_extension_built

    return worker_extension_built(ext_dir)


def driver_phases(output: str) -> dict:
    m = _PHASES.search(output)
    if not m:
        return {}
    try:
        d = json.loads(m.group(1))
    except ValueError:
        return {}
    return {k: round(float(v), 3) for k, v in d.items() if isinstance(v, (int, float))}


def run_ncu(reference_source: str, candidate_source: str, *, device: str = "cuda:0", ncu_path: str | None = None,
            size: str = "full", calls: int = 3, timeout_s: float = 600.0, cache_dir: str | None = None,
            launch_count: int | None = DEFAULT_LAUNCH_COUNT) -> tuple[str, str, list[KernelProfile]]:
    """(status, reason, kernels): status ok | missing | not_permitted | failed | skipped."""
    r = run_ncu_detailed(reference_source, candidate_source, device=device, ncu_path=ncu_path, size=size, calls=calls,
                         timeout_s=timeout_s, cache_dir=cache_dir, launch_count=launch_count)
    return r.status, r.reason, r.kernels


def run_ncu_detailed(reference_source: str, candidate_source: str, *, device: str = "cuda:0", ncu_path: str | None = None,
                     size: str = "full", calls: int = 3, timeout_s: float = 600.0, cache_dir: str | None = None,
                     launch_count: int | None = DEFAULT_LAUNCH_COUNT) -> NcuRun:
    """`run_ncu` with its timings. `cache_dir`: the evaluator's cache (default `default_cache_dir()`), whose
    `extensions/<source hash>` folder the driver builds into or loads from."""
    if not device.startswith("cuda"):
        return NcuRun("skipped", "Nsight Compute profiles CUDA devices; this candidate ran on the CPU")
    ncu = find_ncu(ncu_path)
    if ncu is None:
        return NcuRun("missing", "ncu (Nsight Compute) not found on PATH or in CUDA_HOME/bin; install it or pass ncu_path")
    env = dict(os.environ)
    index = device.split(":", 1)[1] if ":" in device else "0"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:  # the driver always uses cuda:0, so make the asked-for device the only visible one
        env["CUDA_VISIBLE_DEVICES"] = visible.split(",")[int(index)] if visible else index
    except (IndexError, ValueError):
        return NcuRun("failed", f"device {device} is not among CUDA_VISIBLE_DEVICES={visible}")
    ext_dir = extension_dir(candidate_source, cache_dir)
    env["TORCH_EXTENSIONS_DIR"] = ext_dir  # the evaluator's cache: built once, for the evaluator and for us
    cached = extension_built(ext_dir)
    metrics = list(NCU_METRICS)
    own = defined_kernels(candidate_source)
    t0 = time.perf_counter()
    cmd: list[str] = []

    def done(status: str, reason: str, kernels: list[KernelProfile], output: str = "") -> NcuRun:
        return NcuRun(status, reason, kernels, round(time.perf_counter() - t0, 3), driver_phases(output), cached, ext_dir, cmd)

    with tempfile.TemporaryDirectory(prefix="cudaopt-ncu-") as tmp:
        driver, ref, cand = Path(tmp) / "driver.py", Path(tmp) / "reference.py", Path(tmp) / "candidate.py"
        driver.write_text(DRIVER)
        ref.write_text(reference_source)
        cand.write_text(candidate_source)
        for _attempt in range(2):  # a second try without metrics this ncu version does not know
            cmd = ncu_command(ncu, driver, ref, cand, size=size, calls=calls, metrics=metrics, launch_count=launch_count)
            try:
                proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=tmp)
            except subprocess.TimeoutExpired as e:
                partial = "\n".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (e.stdout, e.stderr))
                return done("failed", f"ncu took longer than {timeout_s:.0f} s", [], partial)
            except OSError as e:
                return done("failed", f"ncu could not start: {e}", [])
            output = proc.stdout + "\n" + proc.stderr
            kernels = parse_ncu_csv(proc.stdout, own)
            if kernels:
                notes = []
                if proc.returncode != 0:
                    notes.append(f"ncu exited {proc.returncode} after writing metrics")
                if launch_count and sum(k.calls for k in kernels) >= launch_count:
                    notes.append(f"ncu stopped at its cap of {launch_count} profiled launches: call counts cover only part "
                                 f"of the {calls} calls")
                return done("ok", "; ".join(notes), kernels, output)
            unknown = [m for m in metrics if m in output and re.search(rf"(?i)(fail|invalid|unknown|not found)[^\n]*{re.escape(m)}", output)]
            if not unknown:
                break
            metrics = [m for m in metrics if m not in unknown]
    return done(*_diagnose(output, proc.returncode), [], output)
