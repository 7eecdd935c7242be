"""The timing window, with clocks captured before any candidate code is imported.

Candidate Python can rebind `torch.cuda.Event`, `torch.cuda.synchronize` or `time.perf_counter`, but not
the C-level objects captured here at import of this module (the worker imports it before loading the
candidate). Device windows use raw `_CudaEventBase` events, whose methods live in an immutable C type.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass

import torch

_perf_counter_ns = time.perf_counter_ns  # captured: later rebinding of time.* does not reach us
_gc_isenabled, _gc_disable, _gc_enable = gc.isenabled, gc.disable, gc.enable


@contextmanager
def _no_collection():
    """Python's automatic collection is off inside every window (as timeit does), on again after it. A full
    collection costs tens of ms; where it falls is decided by allocation counts the candidate can steer
    (pending objects, generation counts), so it could be made to land in the reference's window. Off in both
    windows, it falls in the harness's code between them, for either side. The state is restored to what it
    was before the window, whatever the call did to it (a change outside windows is the settings check's)."""
    was = _gc_isenabled()
    _gc_disable()
    try:
        yield
    finally:
        (_gc_enable if was else _gc_disable)()


@dataclass
class CallTime:
    event_us: float  # start -> end on the caller's stream (the primary number on a GPU)
    device_us: float  # start -> after a device-wide synchronisation: includes work on any stream
    check: object = None  # what the in-window check of the output returned


class HostClock:
    """CPU timing: host wall time around the call (CPU ops are synchronous)."""

    def __init__(self) -> None:
        self.flush = lambda: None

    def time(self, fn, check) -> tuple[object, CallTime]:
        with _no_collection():
            t0 = _perf_counter_ns()
            out = fn()
            verdict = check(out)
            t1 = _perf_counter_ns()
        us = (t1 - t0) / 1e3
        return out, CallTime(us, us, verdict)


class DeviceClock:
    """GPU timing with stream events; a second end point after a device-wide sync sees side streams."""

    def __init__(self, device: torch.device, flush_l2: bool = True, head_start_us: float = 0.0) -> None:
        self.device = device
        self._event_cls = torch._C._CudaEventBase
        self._sync = torch._C._cuda_synchronize
        self._spin = torch._C._cuda_sleep  # a busy-wait kernel of N clock cycles on the current stream
        self._spin_cycles = int(head_start_us * 2000)  # at ~2 GHz; at lower clocks the head start is longer
        self.stream = torch.cuda.current_stream(device)
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 * 2**20) or 50 * 2**20
        # Writing twice the L2 size evicts what the previous call left there (cache_state).
        self._flush_buf = torch.empty(2 * l2 // 4, dtype=torch.float32, device=device) if flush_l2 else None

    def flush(self) -> None:
        if self._flush_buf is not None:
            self._flush_buf.zero_()

    def time(self, fn, check) -> tuple[object, CallTime]:
        ev = self._event_cls
        start, end, end_dev = ev(enable_timing=True), ev(enable_timing=True), ev(enable_timing=True)
        self._sync()
        if self._spin_cycles:  # the start event fires when the spin ends, with the call's kernels queued
            self._spin(self._spin_cycles)
        with _no_collection():
            start.record(self.stream)
            out = fn()
            verdict = check(out)
            end.record(self.stream)
            self._sync()  # waits for every stream of the device, whoever launched the work
            end_dev.record(self.stream)
        end_dev.synchronize()
        return out, CallTime(start.elapsed_time(end) * 1e3, start.elapsed_time(end_dev) * 1e3, verdict)

    def synchronize(self) -> None:
        self._sync()
