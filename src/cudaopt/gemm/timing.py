"""GPU and host timing of several candidates on one shape, interleaved in random order.

`gpu` timing captures each candidate's calls (rotating over input sets, so L2 does not keep them)
in a CUDA graph and times graph replays with CUDA events: back-to-back kernels with no host launch
gaps, the primary number. `server` timing inserts a random idle gap (host sleep, untimed) before
each timed replay. `call` timing measures host wall time per Python call of n back-to-back calls
followed by one synchronize: what a Python caller pays, reported separately.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable

# fn(i) launches one call on the current stream using input set i.
Launch = Callable[[int], None]


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def estimate_us(fn: Launch, sets: int, reps: int = 3) -> float:
    """Rough per-call GPU time from events around a few back-to-back calls (after a warm-up)."""
    import torch

    fn(0)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for i in range(reps):
        fn(i % sets)
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) * 1e3 / reps


def graph_calls(fastest_us: float, target_us: float = 200.0) -> int:
    """Calls per captured graph so that the fastest candidate's replay lasts about target_us (1-256)."""
    return max(1, min(256, math.ceil(target_us / max(fastest_us, 0.5))))


def capture(fn: Launch, calls: int, sets: int):
    import torch

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for j in range(calls):
            fn(j % sets)
    return graph


ROUND_HEAD_START_CYCLES = 100_000  # ~50 us at 1980 MHz, ~70 us at the power cap's 1400 MHz

L2_FLUSH_ENV = "CUDAOPT_GEMM_L2_FLUSH"  # gpu timing writes twice the L2 before every timed replay; "0" turns it off
# summary.md's words for a run's timing (bench.protocol_line writes them, grid_choice.grid_flush reads them back)
PROTOCOL_LINE = "timing protocol:"
L2_FLUSHED = "L2 flushed before every timed replay"
# Why: a grid rotates at most 8 input sets, so on mid-size shapes one B layout's sets fit in L2 and a replay that
# follows a candidate reading the same buffers starts warm, one that follows a reader of the other layout cold; the
# per-shape round orders are seeded, so the same slot is lucky in every grid (H100: one kernel in two slots 8-10%
# apart on 64x8192x128 in four grids). Written over before each replay, every candidate starts cold alike.
# Session 53 made it the default: on an H100 it took that A/A offset from 1.6-2.0% (up to 14%) to 0.3-0.4% (at most
# 1.5%) on those shapes and 0.5% on the rest, and the offsets of two grids stopped correlating (docs/gpu-runs.md).
_flush_buffers: dict[int, object] = {}


def l2_flush_on(explicit: bool | None = None) -> bool:
    """Whether gpu timing flushes L2 before each timed replay: `explicit` where given, else CUDAOPT_GEMM_L2_FLUSH
    (on unless it is "0")."""
    import os

    return explicit if explicit is not None else os.environ.get(L2_FLUSH_ENV, "1") != "0"


def _flush_buffer():
    """A byte buffer twice the current GPU's L2 (made once a device): zeroing it leaves no candidate's data in L2."""
    import torch

    dev = torch.cuda.current_device()
    buf = _flush_buffers.get(dev)
    if buf is None:
        l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or (60 << 20)
        buf = _flush_buffers[dev] = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    return buf


def time_gpu(cands: dict[str, Launch], sets: int, rounds: int = 15, target_us: float = 200.0,
             server: bool = False, rng: random.Random | None = None,
             gap_ms: tuple[float, float] = (0.2, 3.0),
             per_round: dict[str, list[float]] | None = None, l2_flush: bool | None = None) -> dict[str, float]:
    """Median microseconds per call for each candidate; NaN for one that failed to run or capture.
    `per_round`, when given, receives every candidate's per-round times in round order (all of one
    round's replays run back to back, so a ratio taken within a round shares the clock state).
    l2_flush (default: on unless CUDAOPT_GEMM_L2_FLUSH=0): gpu timing zeroes a buffer twice the L2 before each timed replay,
    untimed, so no replay starts on what the one before it left in L2."""
    import torch

    rng = rng or random.Random(0)
    flush = _flush_buffer() if l2_flush_on(l2_flush) and not server else None
    ests: dict[str, float] = {}
    for name, fn in cands.items():
        try:
            ests[name] = estimate_us(fn, sets)
        except Exception:  # noqa: BLE001  (a failing candidate is recorded as NaN, not fatal)
            torch.cuda.synchronize()
    # One call count for every candidate of the shape. A replay carries a fixed launch cost that is
    # spread over its calls; counts taken from each candidate's own (host-bound, for small shapes)
    # estimate charged candidates different shares of it: session 10 read the same torch.matmul
    # 2.3% slower (median, up to 25% on the smallest shapes) when reached through hgemm's Python.
    calls = 1 if server or not ests else graph_calls(min(ests.values()), target_us)
    graphs: dict[str, tuple[object, int]] = {}
    for name in ests:
        try:
            graphs[name] = (capture(cands[name], calls, sets), calls)
        except Exception:  # noqa: BLE001
            torch.cuda.synchronize()
    samples: dict[str, list[float]] = {n: [] for n in graphs}
    for name, (g, _) in graphs.items():
        g.replay()  # warm the graph's first launch
    torch.cuda.synchronize()
    for _ in range(rounds):
        order = list(graphs)
        rng.shuffle(order)
        events = []
        if not server:
            # After the round's synchronize the stream is idle: the first start event would fire at once and the
            # first replay's host-side launch (several us) would count in its time, a penalty on whichever candidate
            # a round puts first (up to a few % of a 200 us replay; session 38 found the fallback pass's screens,
            # two candidates over three rounds, off two whole grids by 4.2% per shape and leaning against ours,
            # which this would explain). A GPU spin first: the round's replays are queued before its start event.
            torch.cuda._sleep(ROUND_HEAD_START_CYCLES)
        for name in order:
            g, calls = graphs[name]
            if server:
                torch.cuda.synchronize()
                time.sleep(rng.uniform(*gap_ms) / 1e3)
                torch.cuda._sleep(20_000)  # ~10 us of GPU spin so the timed launch is already queued
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if flush is not None:
                flush.zero_()  # (queued before the start event: not timed)
            e0.record()
            g.replay()
            e1.record()
            events.append((name, e0, e1, calls))
        torch.cuda.synchronize()
        for name, e0, e1, calls in events:
            samples[name].append(e0.elapsed_time(e1) * 1e3 / calls)
    del graphs
    if per_round is not None:
        per_round.update(samples)
    return {n: _median(samples.get(n, [])) for n in cands}


def call_count(fastest_us: float, most: int = 20, target_us: float = 2000.0) -> int:
    """Calls per call-timing sample: enough that the fastest candidate's sample lasts about target_us,
    at most `most`. A large shape's call is all GPU time (13 ms at 16384^3), where 20 calls x 7 rounds
    x a dozen candidates took 20 s a shape and left the largest shapes out of session 11's budget; one
    synchronize in a sample that long costs nothing worth counting."""
    return max(1, min(most, math.ceil(target_us / max(fastest_us, 1.0))))


def time_call(cands: dict[str, Launch], sets: int, rounds: int = 7, calls: int = 20,
              rng: random.Random | None = None, target_us: float = 2000.0) -> dict[str, float]:
    """Host microseconds per Python call (n calls back to back, then one synchronize), interleaved;
    n = call_count of the fastest candidate's warm-up call, the same n for every candidate."""
    import torch

    rng = rng or random.Random(0)
    samples: dict[str, list[float]] = {n: [] for n in cands}
    ok = {}
    warm: dict[str, float] = {}
    for name, fn in cands.items():
        try:
            fn(0)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(0)
            torch.cuda.synchronize()
            warm[name] = (time.perf_counter() - t0) * 1e6
            ok[name] = fn
        except Exception:  # noqa: BLE001
            torch.cuda.synchronize()
    calls = call_count(min(warm.values()), calls, target_us) if warm else calls
    for _ in range(rounds):
        order = list(ok)
        rng.shuffle(order)
        for name in order:
            fn = ok[name]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for j in range(calls):
                fn(j % sets)
            torch.cuda.synchronize()
            samples[name].append((time.perf_counter() - t0) * 1e6 / calls)
    return {n: _median(samples[n]) for n in cands}
