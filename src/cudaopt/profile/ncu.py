"""Nsight Compute for one candidate: a small driver script imports the candidate in a subprocess under
`ncu`, calls it a few times inside a profiler range, and the CSV is parsed into per-kernel metrics.

Only the calls inside `torch.cuda.profiler.start()/stop()` are profiled (`--profile-from-start off`),
so the build, the weights' initialisation and the warm-up call stay out. `--clock-control none` keeps
the GPU's own clocks, as in CUDA-L2's setup. Nothing here raises for a missing or forbidden `ncu`:
the caller gets a status and the reason.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
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
"""cudaopt profile driver: build the candidate, one warm-up call, then CALLS profiled calls."""
import sys
import torch
from cudaopt.tasks.loader import apply_size, check_candidate, check_reference, import_source, load_task

ref_path, cand_path, size, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
task = load_task(ref_path)
ref = import_source(task.source, "cudaopt_profile_ref", ref_path)
check_reference(ref, ref_path)
apply_size(ref, size)
cand = import_source(open(cand_path).read(), "cudaopt_profile_cand", cand_path)
check_candidate(cand, ref, cand_path)
dev = torch.device("cuda:0")
torch.manual_seed(0)
model = cand.ModelNew(*ref.get_init_inputs()).to(dev).eval()
inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
with torch.no_grad():
    model(*inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(calls):
        model(*inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
print("cudaopt-profile-driver: done", file=sys.stderr)
'''


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


def ncu_command(ncu: str, driver: Path, reference: Path, candidate: Path, *, size: str, calls: int, metrics: list[str]) -> list[str]:
    return [ncu, "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all", "--csv",
            "--print-units", "base", "--print-kernel-base", "function", "--metrics", ",".join(metrics),
            sys.executable, str(driver), str(reference), str(candidate), size, str(calls)]


def run_ncu(reference_source: str, candidate_source: str, *, device: str = "cuda:0", ncu_path: str | None = None,
            size: str = "full", calls: int = 3, timeout_s: float = 600.0) -> tuple[str, str, list[KernelProfile]]:
    """(status, reason, kernels): status ok | missing | not_permitted | failed | skipped."""
    if not device.startswith("cuda"):
        return "skipped", "Nsight Compute profiles CUDA devices; this candidate ran on the CPU", []
    ncu = find_ncu(ncu_path)
    if ncu is None:
        return "missing", "ncu (Nsight Compute) not found on PATH or in CUDA_HOME/bin; install it or pass ncu_path", []
    env = dict(os.environ)
    index = device.split(":", 1)[1] if ":" in device else "0"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:  # the driver always uses cuda:0, so make the asked-for device the only visible one
        env["CUDA_VISIBLE_DEVICES"] = visible.split(",")[int(index)] if visible else index
    except (IndexError, ValueError):
        return "failed", f"device {device} is not among CUDA_VISIBLE_DEVICES={visible}", []
    metrics = list(NCU_METRICS)
    own = defined_kernels(candidate_source)
    with tempfile.TemporaryDirectory(prefix="cudaopt-ncu-") as tmp:
        driver, ref, cand = Path(tmp) / "driver.py", Path(tmp) / "reference.py", Path(tmp) / "candidate.py"
        driver.write_text(DRIVER)
        ref.write_text(reference_source)
        cand.write_text(candidate_source)
        for _attempt in range(2):  # a second try without metrics this ncu version does not know
            cmd = ncu_command(ncu, driver, ref, cand, size=size, calls=calls, metrics=metrics)
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=tmp)
            except subprocess.TimeoutExpired:
                return "failed", f"ncu took longer than {timeout_s:.0f} s", []
            except OSError as e:
                return "failed", f"ncu could not start: {e}", []
            output = proc.stdout + "\n" + proc.stderr
            kernels = parse_ncu_csv(proc.stdout, own)
            if kernels:
                reason = "" if proc.returncode == 0 else f"ncu exited {proc.returncode} after writing metrics"
                return "ok", reason, kernels
            unknown = [m for m in metrics if m in output and re.search(rf"(?i)(fail|invalid|unknown|not found)[^\n]*{re.escape(m)}", output)]
            if not unknown:
                break
            metrics = [m for m in metrics if m not in unknown]
    return (*_diagnose(output, proc.returncode), [])
