"""Two tuned tables head to head on the shapes where their choices differ (GPU).

A retune is judged across runs otherwise, and runs on different machines read the same kernels a few
percent apart (session 15: every baseline 2% faster on one H200 than on another). Here, per shape, the
old table's choice of ours, the new table's, and cuBLASLt (the fastest of its returned algorithms, NN
and TN) are timed interleaved in one process (cudaopt.gemm.timing.time_gpu), so the ratio new / old
is paired. Shapes: those whose (config, splits) differ between the tables, a seeded sample of at most
--count of them. Prints one row per shape and the geomean of old / new, lt / old and lt / new.

    PYTHONPATH=src python benchmarks/gemm_tables.py OLD.json NEW.json [--count 60] [--rounds 12]
"""

from __future__ import annotations

import argparse
import json
import random
from statistics import geometric_mean
from pathlib import Path


def entries(path: str) -> dict[tuple[int, int, int], dict]:
    try:
        data = json.loads(Path(path).read_text())
        return {(e["m"], e["n"], e["k"]): e for e in data["entries"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"{path}: not a tuned table ({e}); give the JSON `cudaopt tune-gemm` writes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=12)
    args = ap.parse_args()
    old, new = entries(args.old), entries(args.new)
    differ = sorted(s for s in old.keys() & new.keys()
                    if (old[s]["config"], old[s]["splits"]) != (new[s]["config"], new[s]["splits"]))
    shapes = sorted(random.Random(0).sample(differ, min(args.count, len(differ))))
    print(f"{len(differ)} shapes with different choices; timing {len(shapes)}")

    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.bench import lt_auto_best, make_inputs, num_sets, ours_launch, time_with_lt_auto
    from cudaopt.gemm.configs import Choice

    rng = random.Random(1)
    ratios = []
    for m, n, k in shapes:
        a = Choice("ours", old[(m, n, k)]["config"], old[(m, n, k)]["splits"])
        b = Choice("ours", new[(m, n, k)]["config"], new[(m, n, k)]["splits"])
        sets = num_sets(m, n, k)
        x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, max(a.splits, b.splits)), True)
        cands = {"old": ours_launch(x, m, n, k, a), "new": ours_launch(x, m, n, k, b)}
        t = time_with_lt_auto(cands, x, m, n, k, sets, args.rounds, rng)
        lt = lt_auto_best(t)
        r = (t["old"] / t["new"], lt / t["old"], lt / t["new"])
        ratios.append(r)
        print(f"{f'{m}x{n}x{k}':>18} old {t['old']:9.1f} us ({a.label()})  new {t['new']:9.1f} us ({b.label()})  "
              f"lt {lt:9.1f}  old/new {r[0]:.3f}", flush=True)
        del x, cands
        torch.cuda.empty_cache()
    if ratios:
        g = [geometric_mean(r[j] for r in ratios) for j in range(3)]
        wins = [sum(r[j] > 1 for r in ratios) for j in (1, 2)]
        print(f"== geomean over {len(ratios)} shapes: old/new {g[0]:.3f}; cuBLASLt/old {g[1]:.3f} "
              f"({wins[0]} wins); cuBLASLt/new {g[2]:.3f} ({wins[1]} wins)")


if __name__ == "__main__":
    main()
