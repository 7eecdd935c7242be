"""The tuner: time every candidate configuration of our kernels per shape, keep the fastest that
passes the correctness checks, and write the dispatcher's JSON table.

Each entry also records torch.matmul's time on the same shape, timed in the same interleaved
rounds, and sets backend "torch" (a labelled cuBLAS fallback) where our best is slower than 0.98x.
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path

from cudaopt.gemm.configs import candidate_choices
from cudaopt.gemm.shapes import Shape

FALLBACK_BELOW = 0.98  # hand a shape to torch.matmul when t_torch / t_ours is below this


def tune_shape(m: int, n: int, k: int, rounds: int = 5, rng: random.Random | None = None) -> dict:
    import torch

    from cudaopt.gemm import _lib, hgemm
    from cudaopt.gemm.bench import make_inputs, num_sets, ours_launch
    from cudaopt.gemm.correctness import check_gemm
    from cudaopt.gemm.timing import time_gpu

    rng = rng or random.Random(0)
    choices = candidate_choices(m, n, k)
    sets = num_sets(m, n, k)
    ws = max(_lib.workspace_bytes(m, n, c.splits) for c in choices)
    x = make_inputs(m, n, k, sets, ws, with_blas=False)
    cands = {c.label(): ours_launch(x, m, n, k, c) for c in choices}
    cands["torch"] = lambda i: torch.matmul(x.a[i], x.b[i], out=x.c[i])
    times = time_gpu(cands, sets, rounds=rounds, rng=rng)
    by_label = {c.label(): c for c in choices}
    ranked = sorted((t, lbl) for lbl, t in times.items() if lbl != "torch" and math.isfinite(t))
    best, best_t = None, math.nan
    for t, lbl in ranked[:3]:  # the fastest one that is correct
        c = by_label[lbl]
        if check_gemm(lambda a, b, out, c=c: hgemm(a, b, out=out, choice=c), m, n, k).ok:
            best, best_t = c, t
            break
    del x
    t_torch = times["torch"]
    if best is None:
        return {"m": m, "n": n, "k": k, "backend": "torch", "config": 0, "splits": 1, "ours_us": None,
                "torch_us": t_torch, "note": "no correct config among the three fastest"}
    backend = "torch" if t_torch / best_t < FALLBACK_BELOW else "ours"
    return {"m": m, "n": n, "k": k, "backend": backend, "config": best.config, "splits": best.splits,
            "label": best.label(), "ours_us": round(best_t, 3), "torch_us": round(t_torch, 3),
            "ratio_vs_torch": round(t_torch / best_t, 4)}


def run_tune(shapes: list[Shape], out: Path, rounds: int = 5, budget_s: float | None = None,
             merge: bool = True, seed: int = 0, log=print) -> dict:
    """Tune each shape (until the budget is spent) and write/merge the table at `out`."""
    import torch

    rng = random.Random(seed)
    out = Path(out)
    data = json.loads(out.read_text()) if merge and out.exists() else {}
    entries = {(e["m"], e["n"], e["k"]): e for e in data.get("entries", [])}
    t0 = time.perf_counter()
    for i, (m, n, k) in enumerate(shapes):
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            log(f"tune budget reached after {i} shapes")
            break
        e = tune_shape(m, n, k, rounds=rounds, rng=rng)
        entries[(m, n, k)] = e
        log(f"[tune {i + 1}/{len(shapes)}] {m}x{n}x{k}: {e.get('label', e['backend'])} {e['ours_us']}us "
            f"torch {e['torch_us']:.2f}us -> {e['backend']}")
    data = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "fallback_below": FALLBACK_BELOW,
            "entries": [entries[s] for s in sorted(entries)]}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1))
    return data
