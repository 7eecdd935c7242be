"""What the parent's output comparison costs for a large output, per call.

    python benchmarks/compare_cost.py [--n 8192] [--repeat 3] [--samples 20] [--threads K]

Times compare_outputs as the evaluator's parent calls it, on an n x n output (default 8192 x 8192,
67M elements) and a candidate within tolerance:
  whole fp32 / bf16: the first trials compare the whole output;
  whole fp32, 1 wrong: one element out of tolerance near the end (the verdict is a failure);
  sampled fp32: later trials compare a 262,144-element challenged sample; both sides go through
      views.view(out, seed) and views.unview as in the evaluator (not timed: the children do that part).
The thread count is whatever compare_outputs uses inside (see compare.compare_threads where it exists);
the process's own intra-op setting is printed too. Peak RSS growth is measured around the first whole
comparison (ru_maxrss only grows, so later rows cannot be measured this way).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import torch

from cudaopt.evaluate import compare
from cudaopt.evaluate.compare import compare_outputs
from cudaopt.evaluate.views import SAMPLE_N, unview, view

FULL_TRIALS, TRIALS = 2, 100


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _time(repeat: int, *args) -> tuple[float, object]:
    times, res = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = compare_outputs(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8192, help="the output is n x n")
    ap.add_argument("--repeat", type=int, default=3, help="calls per whole-output row (median reported)")
    ap.add_argument("--samples", type=int, default=20, help="seeds for the sampled row (median reported)")
    ap.add_argument("--threads", type=int, default=None, help="set the process's intra-op threads first")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    g = torch.Generator().manual_seed(0)
    ref = torch.randn(args.n, args.n, generator=g)
    cand = ref + torch.randn(args.n, args.n, generator=g) * 1e-6  # within the fp32 tolerance
    threads_fn = getattr(compare, "compare_threads", None)
    big_threads = threads_fn(ref.numel()) if threads_fn else torch.get_num_threads()
    small_threads = threads_fn(SAMPLE_N) if threads_fn else torch.get_num_threads()
    rows = []

    rss0 = _maxrss_mb()
    t, res = _time(args.repeat, ref, cand)
    assert res.ok, res
    rows.append(("whole fp32", ref.numel(), big_threads, t, res, _maxrss_mb() - rss0))

    bad = cand.clone()
    bad.view(-1)[-5] += 1.0
    t, res = _time(args.repeat, ref, bad)
    assert not res.ok, res
    rows.append(("whole fp32, 1 wrong", ref.numel(), big_threads, t, res, None))
    del bad

    rb, cb = ref.bfloat16(), cand.bfloat16()
    t, res = _time(args.repeat, rb, cb)
    assert res.ok, res
    rows.append(("whole bf16", ref.numel(), big_threads, t, res, None))
    del rb, cb

    pairs = [(unview(view(ref, seed)), unview(view(cand, seed))) for seed in range(1000, 1000 + args.samples)]
    times = []
    for r, c in pairs:
        t0 = time.perf_counter()
        res = compare_outputs(r, c)
        times.append(time.perf_counter() - t0)
        assert res.ok, res
    rows.append(("sampled fp32", SAMPLE_N, small_threads, statistics.median(times), res, None))

    print(f"torch {torch.__version__}, process intra-op threads {torch.get_num_threads()}, "
          f"chunk {getattr(compare, 'CHUNK_ELEMENTS', 'none (whole tensor)')}")
    print(f"{'case':<22}{'elements':>12}{'threads':>9}{'ms/call':>10}{'max_abs':>11}{'max_rel':>11}{'RSS +MB':>9}")
    for name, n, th, t, res, rss in rows:
        rss_s = f"{rss:9.0f}" if rss is not None else f"{'':>9}"
        print(f"{name:<22}{n:>12,}{th:>9}{t * 1e3:>10.1f}{res.max_abs:>11.3g}{res.max_rel:>11.3g}{rss_s}")
    whole, sampled = rows[0][3], rows[-1][3]
    total = FULL_TRIALS * whole + (TRIALS - FULL_TRIALS) * sampled
    print(f"per evaluation ({FULL_TRIALS} whole + {TRIALS - FULL_TRIALS} sampled fp32 comparisons): {total:.2f} s")


if __name__ == "__main__":
    main()
