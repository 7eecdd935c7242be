"""Profile reports as a few plain lines for a prompt, beside the exemplar they describe."""

from __future__ import annotations

from cudaopt.profile.report import KernelProfile, KernelResources, ProfileReport

# (short metric name, label, unit suffix) in the order shown.
_SHOWN = (
    ("memory_throughput_pct", "memory throughput", "%"),
    ("dram_throughput_pct", "DRAM throughput", "%"),
    ("sm_throughput_pct", "compute (SM) throughput", "%"),
    ("achieved_occupancy_pct", "achieved occupancy", "%"),
    ("l1_hit_rate_pct", "L1 hit rate", "%"),
    ("l2_hit_rate_pct", "L2 hit rate", "%"),
)


def _bytes(n: float) -> str:
    for unit, size in (("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _kernel_line(k: KernelProfile) -> str:
    m = k.metrics
    parts = [f"{label} {m[key]:.1f}{unit}" for key, label, unit in _SHOWN if key in m]
    if "registers_per_thread" in m:
        parts.append(f"{m['registers_per_thread']:.0f} registers/thread")
    local = m.get("local_load_bytes", 0.0) + m.get("local_store_bytes", 0.0)
    if "local_load_bytes" in m or "local_store_bytes" in m:
        parts.append(f"local-memory traffic {_bytes(local)}" + (" (register spills)" if local else ""))
    if "grid_size" in m and "block_size" in m:
        parts.append(f"grid {m['grid_size']:.0f} x block {m['block_size']:.0f}")
    when = f"{k.time_us:.1f} us/launch x {k.calls}" if k.time_us is not None else f"{k.calls} launches"
    return f"- {k.name}{' (own kernel)' if k.own else ''}: {when}; " + ", ".join(parts)


def _resource_line(r: KernelResources) -> str:
    spills = f"spills {r.spill_store_bytes} B stored / {r.spill_load_bytes} B loaded" if (r.spill_store_bytes or r.spill_load_bytes) else "no spills"
    return (f"- {r.display_name}: {r.registers} registers/thread, {_bytes(r.shared_bytes)} static shared memory, "
            f"{spills}, {r.stack_frame_bytes} B stack frame")


def format_profile(report: ProfileReport | None, max_kernels: int = 4) -> str:
    """A short block: Nsight Compute metrics per kernel (own kernels first, then the slowest), the
    compiler's resource report, and why either is missing. Empty for None."""
    if report is None:
        return ""
    lines: list[str] = []
    if report.kernels:
        kernels = sorted(report.kernels, key=lambda k: (not k.own, -(k.time_us or 0.0)))
        lines.append(f"Nsight Compute ({report.device or 'GPU'}):")
        lines += [_kernel_line(k) for k in kernels[:max_kernels]]
        if len(kernels) > max_kernels:
            lines.append(f"- ... {len(kernels) - max_kernels} more kernels")
    elif report.ncu_status not in ("skipped", "ok") and report.ncu_reason:
        lines.append(f"No Nsight Compute metrics: {report.ncu_reason}")
    if report.resources:
        arch = report.resources[0].arch
        lines.append(f"Compiler resource report (ptxas{', ' + arch if arch else ''}):")
        lines += [_resource_line(r) for r in report.resources[:max_kernels]]
    elif report.ptxas_status not in ("skipped", "ok", "no_cuda_source") and report.ptxas_reason:
        lines.append(f"No compiler resource report: {report.ptxas_reason}")
    return "\n".join(lines)
