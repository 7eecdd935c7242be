"""What the profiler-based kernel check costs, and whether its start-up can be paid off the critical path.

    python scripts/profiler_probe.py [--calls 400]

Issue 3 asks for dynamic checks under 10% of an evaluation; the kernel check (torch.profiler with CUDA
activities, run for speedups above 3x) cost 3.8-4.7 s of 15-19 s evaluations on the H200 (session 4).
Each case runs in a fresh process, as an evaluation's worker does:

- cold: the first profiler session in the process (what the kernel check pays today), then a second one;
- steps: the first session split into Kineto's prepare, start, the traced work, stop and reading events;
- background: a first session started from a helper thread while the main thread keeps launching kernels
  (could a worker warm the profiler up during its correctness trials?);
- cold also lists the threads a finished session leaves running (the worker's thread checks would
  blame a thread that appears during a candidate's call on the candidate);
- after: event-timed calls of a small kernel with no profiler session before them, and after one:
  does a finished session leave per-launch overhead behind (which would bias every later timing)?

Prints one table. Needs a CUDA GPU; on a machine without one it says so and exits 2.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CASE = r"""
import json, statistics, sys, threading, time
import torch
from torch.profiler import ProfilerActivity, profile
case, calls = sys.argv[1], int(sys.argv[2])
dev = torch.device("cuda")
x = torch.randn(1 << 22, device=dev)
torch.cuda.synchronize()

def threads():
    import os
    out = set()
    for t in os.listdir("/proc/self/task"):
        try:
            out.add(open(f"/proc/self/task/{t}/comm").read().strip() + f"({t})")
        except OSError:
            pass
    return out

def session():
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.relu(x)
        torch.cuda.synchronize()
    n = sum(1 for e in prof.events() if "cuda" in str(getattr(e, "device_type", "")).lower())
    return time.perf_counter() - t0, n

def timed(n):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(n):
        torch.cuda.synchronize()
        s.record(); torch.relu(x); e.record(); e.synchronize()
        out.append(s.elapsed_time(e) * 1e3)
    return statistics.median(out)

res = {"case": case}
if case == "cold":
    before = threads()
    res["first_s"], res["first_events"] = session()
    # threads the session left running: the worker's thread checks would blame them on the candidate
    res["threads_left"] = sorted(threads() - before)
    res["second_s"], res["second_events"] = session()
elif case == "steps":
    # where the first session's time goes: Kineto's prepare (CUPTI set-up?), start, the traced work, stop
    t = time.perf_counter(); p = profile(activities=[ProfilerActivity.CUDA]); res["construct_s"] = time.perf_counter() - t
    t = time.perf_counter(); p.prepare_trace(); res["prepare_s"] = time.perf_counter() - t
    t = time.perf_counter(); p.start_trace(); res["start_s"] = time.perf_counter() - t
    t = time.perf_counter(); torch.relu(x); torch.cuda.synchronize(); res["work_s"] = time.perf_counter() - t
    t = time.perf_counter(); p.stop_trace(); res["stop_s"] = time.perf_counter() - t
    t = time.perf_counter(); res["events"] = len(list(p.events() or [])); res["events_s"] = time.perf_counter() - t
elif case == "background":
    box = {}
    th = threading.Thread(target=lambda: box.update(zip(("s", "events"), session())))
    t0 = time.perf_counter(); th.start()
    launched = 0
    while th.is_alive():
        torch.relu(x); launched += 1
        if launched % 50 == 0:
            torch.cuda.synchronize()
    th.join(); torch.cuda.synchronize()
    res.update(first_s=box.get("s"), first_events=box.get("events"), wall_s=time.perf_counter() - t0, main_launches=launched)
    res["second_s"], res["second_events"] = session()
elif case == "after":
    timed(50)
    res["before_us"] = timed(calls)
    res["session_s"], _ = session()
    timed(50)
    res["after_us"] = timed(calls)
print(json.dumps(res))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("profiler_probe: needs a CUDA GPU (the kernel check profiles device activity); none here", file=sys.stderr)
        sys.exit(2)
    rows = []
    for case in ("cold", "steps", "background", "after", "after"):
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", CASE, case, str(args.calls)], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            rows.append({"case": case, "error": (p.stderr.strip().splitlines() or ["?"])[-1][:200]})
            continue
        row = json.loads(p.stdout.strip().splitlines()[-1])
        row["process_s"] = round(time.perf_counter() - t0, 2)
        rows.append(row)
        print(json.dumps(row), flush=True)  # as each case ends: a call cut short keeps what it measured
    print(f"{'case':12} {'first s':>8} {'second s':>9} {'events':>7} {'other':40}")
    for r in rows:
        if "error" in r:
            print(f"{r['case']:12} error: {r['error']}")
            continue
        other = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()
                 if k not in ("case", "first_s", "second_s", "first_events", "second_events")}
        fs, ss = r.get("first_s", r.get("session_s")), r.get("second_s")
        fs, ss = ("-" if v is None else f"{v:.2f}" for v in (fs, ss))  # 'after' rows have no second session
        print(f"{r['case']:12} {fs:>8} {ss:>9} "
              f"{str(r.get('first_events', '-')):>7} {json.dumps(other)[:60]}")
    ratios = [r["after_us"] / r["before_us"] for r in rows if "after_us" in r]
    if ratios:
        print(f"timed small kernel after / before a profiler session: {', '.join(f'{x:.3f}' for x in ratios)} "
              f"(median {statistics.median(ratios):.3f}; 1.000 = the session leaves nothing behind)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
