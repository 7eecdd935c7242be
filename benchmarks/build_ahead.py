"""Wall time to build N candidates' extensions one at a time (as the evaluator meets them) vs side by side
(`build_ahead`, as the search loop and the GRPO reward now do before a batch's evaluations).

    python benchmarks/build_ahead.py --kind cpu -n 4      # C++ extensions (any machine)
    python benchmarks/build_ahead.py --kind cuda -n 8     # the seed corpus' CUDA candidates (CUDA torch + nvcc)

Each side builds into a fresh cache of its own; nothing is asserted. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from cudaopt.evaluate.prebuild import build_ahead, prebuild

CPP = (Path(__file__).resolve().parents[1] / "tests" / "redteam" / "honest" / "scale_shift_cpu_cpp_extension.py").read_text()


def sources(kind: str, n: int) -> list[str]:
    if kind == "cpu":  # distinct sources (own extension names) of one honest C++ candidate
        return [CPP.replace("redteam_honest_cpp_scale_shift", f"bench_build_ahead_{i}") for i in range(n)]
    from cudaopt.tasks.seed_corpus import corpus_entries

    return [e.source for e in corpus_entries() if e.device == "cuda"][:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("-n", type=int, default=4)
    a = ap.parse_args()
    srcs = sources(a.kind, a.n)
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as side:
        t0 = time.perf_counter()
        serial = prebuild(srcs, jobs=1, cache_dir=one, sandboxed=True)
        serial_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        ahead = build_ahead(srcs, device=a.kind, cache_dir=side)
        ahead_s = time.perf_counter() - t0
    print(json.dumps({"kind": a.kind, "sources": len(srcs), "cores": os.cpu_count(),
                      "one_at_a_time_s": round(serial_s, 1), "ok_one_at_a_time": sum(b.ok for b in serial),
                      "side_by_side_s": round(ahead_s, 1), "ok_side_by_side": sum(b.ok for b in ahead),
                      "speedup": round(serial_s / ahead_s, 2) if ahead_s else None}))


if __name__ == "__main__":
    main()
