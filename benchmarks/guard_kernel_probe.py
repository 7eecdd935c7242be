"""What the evaluator's per-trial guard operations cost in a fresh process: first, second and third call.

    python benchmarks/guard_kernel_probe.py [--device cuda] [--numel 1048576]

Each evaluation runs in a new worker process, so a kernel's one-time cost (CUDA loads each kernel's
module on its first launch) is paid by every evaluation. This separates that from the steady cost.
"""

from __future__ import annotations

import argparse
import time

import torch

from cudaopt.evaluate.child import _driver_memset, memset_blocks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--numel", type=int, default=1 << 20)
    args = ap.parse_args()
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    x = torch.randn(args.numel, device=dev)
    c = x.clone()
    sync()
    memset = _driver_memset() if dev.type == "cuda" else None
    flag = x[:1].to(torch.bool).reshape(())  # a 0-dim bool from the copy kernel clone() loaded already

    ops = {
        "clone": lambda: x.clone(),
        "ne_int32_any (queued compare)": lambda: torch.ne(x.view(torch.int32), c.view(torch.int32)).any(),
        "stack_tolist (old flag read)": lambda: torch.stack([flag, flag]).tolist(),
        "two bool() reads (flag read)": lambda: (bool(flag), bool(flag)),
        "torch.equal (old compare)": lambda: torch.equal(x, c),
        "driver memset (poison)": lambda: memset_blocks([torch.empty(4096, dtype=torch.uint8, device=dev)],
                                                        torch.cuda.current_stream(dev).cuda_stream, memset) if memset else None,
        "fill_uint8 (old poison)": lambda: torch.empty(4096, dtype=torch.uint8, device=dev).fill_(255),
        "memory_snapshot (poison)": lambda: torch.cuda.memory_snapshot() if dev.type == "cuda" else None,
        "double diff (old rerun)": lambda: float((x.double() - c.double()).abs().nan_to_num(0.0).max()),
    }
    print(f"{'operation':32s} {'1st ms':>8s} {'2nd ms':>8s} {'3rd ms':>8s}")
    for name, fn in ops.items():
        ms = []
        for _ in range(3):
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            ms.append(1e3 * (time.perf_counter() - t0))
        print(f"{name:32s} {ms[0]:8.2f} {ms[1]:8.2f} {ms[2]:8.2f}")


if __name__ == "__main__":
    main()
