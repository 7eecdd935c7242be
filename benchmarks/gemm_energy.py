"""Energy per FLOP of ours, cuBLASLt autotuned and torch.matmul under sustained load (GPU).

Above 1e10 FLOP our kernels trail cuBLASLt autotuned by 1.4-2.5% and the card sits at its power cap
(~600 W, SM clock down from 1980 to ~1440 MHz), so a kernel that spends less energy per FLOP runs at a
higher clock (docs/gemm.md, session 16). This runs each candidate alone for --seconds of back-to-back
calls (input sets rotated), twice, interleaved (ours, lt, torch, ours, lt, torch), and reads NVML's energy
counter and the SM clock around each stretch: microseconds a call at the sustained clock, joules a call,
picojoules a FLOP, mean power and SM clock. Ours runs without PDL here (a stretch of one kernel back to
back is PDL's best case, which this is not about).

    PYTHONPATH=src python benchmarks/gemm_energy.py [--shapes 16384x16384x16384,...] [--seconds 2.5]
    PYTHONPATH=src python benchmarks/gemm_energy.py --shapes 12288x4096x8192 --configs 107,109   # more of ours

--configs (session 27): config ids measured beside the table's choice, each in the same interleaved rotation
(one split; a pair against its one-CTA twin: does multicast's lower L2 traffic buy clock at the power cap?).
"""

from __future__ import annotations

import argparse
import ctypes
import random
import statistics
import time

SHAPES = "16384x16384x16384,8192x8192x8192,16384x16384x512,12288x4096x2048"


class Nvml:
    """The three NVML readings this needs, through ctypes (no pynvml on the GPU machine)."""

    def __init__(self, index: int = 0):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise SystemExit("NVML did not initialise; gemm_energy.py needs the NVIDIA driver's libnvidia-ml")
        self.h = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.h)) != 0:
            raise SystemExit(f"NVML has no device {index}")

    def energy_mj(self) -> int:
        v = ctypes.c_ulonglong()
        if self.lib.nvmlDeviceGetTotalEnergyConsumption(self.h, ctypes.byref(v)) != 0:
            raise SystemExit("this GPU does not report its energy counter (NVML)")
        return v.value

    def sm_mhz(self) -> int:
        v = ctypes.c_uint()
        self.lib.nvmlDeviceGetClockInfo(self.h, 1, ctypes.byref(v))  # 1: NVML_CLOCK_SM
        return v.value


def parse_config_ids(text: str) -> list[int]:
    """--configs: comma-separated ids of configs that take one split; a clear SystemExit otherwise."""
    from cudaopt.gemm.configs import KERNEL_CONFIGS

    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
        if any(not 0 <= i < len(KERNEL_CONFIGS) for i in ids):
            raise ValueError
    except ValueError:
        raise SystemExit(f"--configs {text!r}: give config ids 0..{len(KERNEL_CONFIGS) - 1}, comma-separated") from None
    return ids


def sustained(fn, sets: int, seconds: float, nvml: Nvml, call_us: float) -> dict[str, float]:
    """Calls of fn back to back for `seconds` (after a 0.5 s warm-up), synchronising every ~20 ms of work
    so the queue stays short; the energy counter is read at two synchronised points."""
    import torch

    batch = max(1, int(20000 / max(call_us, 1.0)))
    end = time.perf_counter() + 0.5
    i = 0
    while time.perf_counter() < end:
        for _ in range(batch):
            fn(i % sets)
            i += 1
        torch.cuda.synchronize()
    clocks, calls = [], 0
    e0, t0 = nvml.energy_mj(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(batch):
            fn(i % sets)
            i += 1
        calls += batch
        clocks.append(nvml.sm_mhz())  # sampled while the batch runs
        torch.cuda.synchronize()
    t1, e1 = time.perf_counter(), nvml.energy_mj()
    joules = (e1 - e0) / 1000.0
    return {"us": (t1 - t0) / calls * 1e6, "j": joules / calls, "w": joules / (t1 - t0),
            "mhz": statistics.mean(clocks)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=SHAPES, help="MxNxK comma-separated")
    ap.add_argument("--seconds", type=float, default=2.5, help="length of one measured stretch")
    ap.add_argument("--configs", default="", help="config ids measured beside the table's choice, comma-separated")
    args = ap.parse_args()
    extra = parse_config_ids(args.configs)
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("gemm_energy.py needs a CUDA GPU")
    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import lt_launch, lt_plans, make_inputs, num_sets, ours_launch, torch_launch
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.dispatch import choose
    from cudaopt.gemm.shapes import parse_shapes
    from cudaopt.gemm.timing import time_gpu

    nvml = Nvml(torch.cuda.current_device())
    rng = random.Random(0)
    print("shape             cand    us/call  J/call   pJ/FLOP  W      SM MHz   (2 stretches each, interleaved)")
    for m, n, k in parse_shapes(args.shapes):
        ours = choose(m, n, k).as_ours()
        sets = num_sets(m, n, k)
        x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, ours.splits), True)
        plans = lt_plans(x, m, n, k, sets, rng)
        try:
            lts = {f"lt_{'nt'[layout]}": lt_launch(x, plans[layout], plans[f"best{layout}"], layout)
                   for layout in (0, 1) if layout in plans}
            quick = time_gpu(lts, sets, rounds=5, rng=rng)
            lt_name = min(quick, key=quick.get)
            cands = {"ours": ours_launch(x, m, n, k, ours, pdl=False), "lt": lts[lt_name], "torch": torch_launch(x)}
            labels = {"ours": f"ours ({ours.label()})", "lt": f"lt ({lt_name})", "torch": "torch"}
            for cid in extra:
                pick = Choice("ours", cid, 1)
                cands[f"cfg {cid}"] = ours_launch(x, m, n, k, pick, pdl=False)
                labels[f"cfg {cid}"] = f"cfg {cid} ({pick.label()})"
            t = time_gpu(cands, sets, rounds=3, rng=rng)
            res: dict[str, list[dict]] = {name: [] for name in cands}
            for _ in range(2):
                for name, fn in cands.items():
                    res[name].append(sustained(fn, sets, args.seconds, nvml, t[name]))
        finally:
            for key, plan in plans.items():
                if isinstance(key, int):
                    plan.close()
        flop = 2.0 * m * n * k
        for name, runs in res.items():
            avg = {f: statistics.mean(r[f] for r in runs) for f in runs[0]}
            print(f"{m}x{n}x{k:<8} {labels[name]:<40} {avg['us']:9.1f} {avg['j']:8.4f} {avg['j'] / flop * 1e12:8.3f} "
                  f"{avg['w']:6.0f} {avg['mhz']:7.0f}", flush=True)
        del x, cands
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
