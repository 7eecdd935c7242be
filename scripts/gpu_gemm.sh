#!/usr/bin/env bash
# One GPU call for the HGEMM work: build, SASS check, wgmma smoke test, correctness tests, tune +
# benchmark a sample of the grid, the wgmma configs against cuBLASLt, and short tables last.
# Full results land under $OUT (at most 8 files come back).
# Usage on the device machine, from the repo root:
#   bash scripts/gpu_gemm.sh [N_SHAPES|grid] [TUNE_S] [BENCH_S] [WGMMA_BENCH_S]
# Resumable across calls: tuning merges into work/tuned.json (rewritten after every shape, tuned
# shapes skipped) and each benchmark logs every shape to its folder's shapes.jsonl (logged shapes
# skipped). results.tgz (all of the work folder) is refreshed after the tune and bench steps; to
# continue an earlier call, hand its results.tgz back (carried into the repo), e.g.
#   GEMM_WORK=/tmp/gemm_work GEMM_RESUME=runs/gemm_grid/results.tgz bash scripts/gpu_gemm.sh grid 300 0 0
# GEMM_WORK puts the work folder outside $OUT, so that only the few files named below land there
# (the device returns at most 8). With N=grid the benchmarks wait until a call's tune step got
# through all its shapes (so every shape is timed with the final table), the tune step's unused
# seconds go to the offline benchmark, and the wgmma comparison (sample:N only) is skipped.
# GEMM_TESTS=0 skips the GPU tests (not the wgmma smoke test, which decides the tuner's kinds).
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
N=${1:-40}; TUNE_S=${2:-70}; BENCH_S=${3:-100}; WG_S=${4:-110}
if [ "$N" = grid ]; then SHAPES=grid; else SHAPES="sample:$N"; fi
OUT=${OUT:-runs/gemm_gpu}
WORK=${GEMM_WORK:-$OUT/work}
mkdir -p "$WORK" "$OUT"
LOG=$OUT/log.txt
checkpoint() { tar czf "$OUT/results.tgz.tmp" -C "$WORK" . 2>/dev/null && mv "$OUT/results.tgz.tmp" "$OUT/results.tgz"; }
{
  if [ -n "${GEMM_RESUME:-}" ]; then
    if [ -f "$GEMM_RESUME" ]; then tar xzf "$GEMM_RESUME" -C "$WORK"; else cp -r "$GEMM_RESUME"/. "$WORK"/; fi \
      && echo "== resuming from $GEMM_RESUME: $(python3 -c "import json; print(len(json.load(open('$WORK/tuned.json'))['entries']))" 2>/dev/null || echo 0) shapes tuned, $(cat "$WORK/offline_gpu/shapes.jsonl" 2>/dev/null | wc -l) benchmarked" \
      || echo "== GEMM_RESUME=$GEMM_RESUME unreadable: starting afresh"
  fi
  echo "== $(date -u +%FT%TZ) commit ${GEMM_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv
  python3 -m cudaopt.gemm.build
  echo "== SASS instruction counts in the kernel library"
  cuobjdump --dump-sass src/cudaopt/gemm/_build/libcudaopt_hgemm.so \
    | grep -oE "HMMA\.[0-9A-Z.]+|LDSM[.A-Z0-9]*|LDGSTS[.A-Z0-9]*|HGMMA\.[0-9x]+\.F32|UTMALDG[.A-Z0-9]*|USETMAXREG[.A-Z]*" | sort | uniq -c
  echo "== ptxas resources of the wgmma kernels"
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -c src/cudaopt/gemm/csrc/hgemm_wgmma.cu \
    -o "$WORK/wgmma.o" 2>&1 | grep -E "spill|Used [0-9]+ registers|C7508|serializ" | sort | uniq -c

  # A hung or faulting wgmma kernel must not take the rest of the run with it: each config runs
  # alone, under a timeout, in its own process; the tuner skips the kind unless all pass.
  echo "== wgmma smoke test (one process per config, 60 s each)"
  WG_OK=1
  for idx in $(python3 -c "from cudaopt.gemm.configs import WGMMA_CONFIGS as W; print(' '.join(str(c.id) for c in W))"); do
    timeout 60 python3 - "$idx" <<'PY'
import sys, torch
from cudaopt.gemm import Choice, KERNEL_CONFIGS, hgemm
cfg = KERNEL_CONFIGS[int(sys.argv[1])]
worst = 0.0
for m, n, k in [(128, 128, 64), (200, 136, 264), (2048, 2048, 2048)]:
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    out = hgemm(a, b, choice=Choice("ours", cfg.id, 1))
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    err = ((out.float() - ref).norm() / ref.norm()).item()
    worst = max(worst, err if err == err else float("inf"))
ok = worst < 2e-3
print(f"{cfg.label}: worst rel err {worst:.2e} {'OK' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
    rc=$?
    if [ $rc -ne 0 ]; then WG_OK=0; fi
    if [ $rc -eq 124 ]; then echo "config id $idx hung (timeout): skipping the other wgmma configs"; break; fi
  done
  if [ "$WG_OK" = 1 ]; then export CUDAOPT_GEMM_KINDS=mma,wgmma; else export CUDAOPT_GEMM_KINDS=mma; fi
  TEST_FILTER=""; if [ "$WG_OK" != 1 ]; then TEST_FILTER="not wgmma"; fi
  echo "wgmma smoke: $([ "$WG_OK" = 1 ] && echo passed || echo FAILED): tuner kinds = $CUDAOPT_GEMM_KINDS"

  if [ "${GEMM_TESTS:-1}" = 0 ]; then
    echo "== GPU tests skipped (GEMM_TESTS=0)"
  else
    echo "== GPU tests ${TEST_FILTER:+(-k '$TEST_FILTER')}"
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gemm_gpu.py -k "${TEST_FILTER}" 2>&1 | tail -25
  fi
  # Resumable: merges into (and skips the shapes of) a tuned.json from an earlier call; the
  # benchmarks skip the shapes in their folder's shapes.jsonl.
  echo "== tune $SHAPES (budget ${TUNE_S}s)"
  T0=$SECONDS
  timeout $((TUNE_S + 120)) python3 -c "from cudaopt.gemm.cli import tune_gemm; tune_gemm(shapes='$SHAPES', out='$WORK/tuned.json', budget_s=$TUNE_S, merge=True)" 2>&1 | tee "$WORK/tune_step.txt"
  TUNE_RC=$?
  checkpoint
  RUN_BENCH=1; B_S=$BENCH_S
  if [ "$N" = grid ]; then
    LEFT=$(( TUNE_S - (SECONDS - T0) )); [ $LEFT -gt 0 ] || LEFT=0
    B_S=$(( BENCH_S + LEFT ))
    if [ $TUNE_RC -ne 0 ] || grep -qE "tune budget reached|stopping:" "$WORK/tune_step.txt"; then RUN_BENCH=0; fi
  fi
  if [ "$RUN_BENCH" = 1 ]; then
    echo "== bench offline/gpu $SHAPES (budget ${B_S}s)"
    timeout $((B_S + 120)) python3 -c "from cudaopt.gemm.cli import bench_gemm; bench_gemm(shapes='$SHAPES', mode='offline', timing='gpu', out_dir='$WORK/offline_gpu', table='$WORK/tuned.json', budget_s=$B_S)"
    checkpoint
    echo "== bench call timing sample:12"
    python3 -c "from cudaopt.gemm.cli import bench_gemm; bench_gemm(shapes='sample:12:1', mode='offline', timing='call', out_dir='$WORK/offline_call', table='$WORK/tuned.json', check=False, budget_s=25)"
    echo "== bench server/gpu sample:12"
    python3 -c "from cudaopt.gemm.cli import bench_gemm; bench_gemm(shapes='sample:12:1', mode='server', timing='gpu', out_dir='$WORK/server_gpu', table='$WORK/tuned.json', check=False, rounds=7, budget_s=25)"
  else
    echo "== benchmarks wait: tuning of $SHAPES not finished in this call (continue with GEMM_RESUME)"
  fi

  if [ "$N" = grid ]; then
    echo "== wgmma comparison skipped (sample:N only)"
  elif [ "$WG_OK" = 1 ]; then
    echo "== wgmma configs vs cuBLASLt autotuned, sample:$N (budget ${WG_S}s)"
    mkdir -p "$WORK/wgmma"
    timeout $((WG_S + 90)) python3 - "$N" "$WG_S" "$WORK/wgmma" <<'PY'
# Every wgmma config, the heuristic mma.sync choice, torch.matmul and cuBLASLt (NN/TN, fastest of
# the heuristic's algorithms) timed interleaved per shape (graph replay, rotated inputs); the best
# wgmma config per shape is checked by all correctness checks.
import json, math, random, sys, time
from pathlib import Path
import torch
from cudaopt.gemm import Choice, _lib, hgemm
from cudaopt.gemm.bench import blas_launches, lt_plans, make_inputs, num_sets, ours_launch
from cudaopt.gemm.configs import KERNEL_CONFIGS, WGMMA_CONFIGS
from cudaopt.gemm.correctness import check_gemm
from cudaopt.gemm.dispatch import heuristic_choice
from cudaopt.gemm.report import summary_markdown
from cudaopt.gemm.shapes import flops, sample_shapes
from cudaopt.gemm.stats import max_of, ratios, summarize_by_class
from cudaopt.gemm.timing import time_gpu

n_shapes, budget, out_dir = int(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3])
rng, t0, rows = random.Random(1), time.perf_counter(), []
times = {"wgmma_best": {}, "mma": {}, "torch": {}, "lt_auto_nn": {}, "lt_auto_tn": {}}
for m, n, k in sample_shapes(n_shapes, seed=0):
    if time.perf_counter() - t0 > budget:
        print("budget reached"); break
    mma = heuristic_choice(m, n, k)
    sets = num_sets(m, n, k)
    x = make_inputs(m, n, k, sets, _lib.workspace_bytes(m, n, mma.splits), with_blas=True)
    cands = {c.label: ours_launch(x, m, n, k, Choice("ours", c.id, 1)) for c in WGMMA_CONFIGS}
    cands["mma"] = ours_launch(x, m, n, k, mma)
    cands["torch"] = lambda i, x=x: torch.matmul(x.a[i], x.b[i], out=x.c[i])
    plans = lt_plans(x, m, n, k, sets, rng)
    cands.update({key: f for key, f in blas_launches(x, m, n, k, plans).items() if key.startswith("lt_auto")})
    t = time_gpu(cands, sets, rounds=7, rng=rng)
    for layout in (0, 1):
        if layout in plans:
            plans[layout].close()
    del x
    wg = {c.label: t[c.label] for c in WGMMA_CONFIGS if math.isfinite(t[c.label])}
    best = min(wg, key=wg.get) if wg else None
    s = (m, n, k)
    for key in ("mma", "torch", "lt_auto_nn", "lt_auto_tn"):
        if key in t:
            times[key][s] = t[key]
    ok = None
    if best:
        times["wgmma_best"][s] = wg[best]
        cfg = next(c for c in WGMMA_CONFIGS if c.label == best)
        ok = check_gemm(lambda a, b, out, c=cfg: hgemm(a, b, out=out, choice=Choice("ours", c.id, 1)), m, n, k).ok
    lt = min(t.get("lt_auto_nn", math.inf), t.get("lt_auto_tn", math.inf))
    tf = lambda us: flops(s) / us / 1e6 if us and math.isfinite(us) else float("nan")
    rows.append({"m": m, "n": n, "k": k, "best": best, "correct": ok, **{key: round(v, 3) for key, v in t.items()}})
    print(f"{m}x{n}x{k}: best {best} {wg.get(best, math.nan):.2f}us ({tf(wg.get(best)):.0f} TF/s) "
          f"mma {t['mma']:.2f}us lt_auto_max {lt:.2f}us ({tf(lt):.0f} TF/s) torch {t['torch']:.2f}us ok={ok}")
torch.cuda.empty_cache()
times["lt_auto_max"] = max_of(times["lt_auto_nn"], times["lt_auto_tn"])
summ = []
for base in ("lt_auto_max", "torch", "mma"):
    summ += summarize_by_class(f"wgmma_best vs {base}", ratios(times[base], times["wgmma_best"]))
wins = {}
for r in rows:
    wins[r["best"]] = wins.get(r["best"], 0) + 1
n_ok = sum(1 for r in rows if r["correct"])
md = [f"## wgmma configs vs cuBLASLt ({len(rows)} shapes, correct {n_ok}/{len(rows)}, "
      f"fastest config counts {wins})", "", summary_markdown(summ, "t_ref / t_wgmma_best (GPU time)")]
(out_dir / "summary.md").write_text("\n".join(md))
(out_dir / "shapes.json").write_text(json.dumps(rows, indent=1))
print("\n".join(md))
PY
  fi
} 2>&1 | tee "$LOG"
tar czf "$OUT/results.tgz" -C "$WORK" . 2>/dev/null
cp "$WORK/tuned.json" "$OUT/" 2>/dev/null
cp "$WORK/offline_gpu/speedup.png" "$OUT/offline_speedup.png" 2>/dev/null
cat "$WORK"/*/summary.md > "$OUT/summaries.md" 2>/dev/null
echo "== SHORT TABLE (ours vs baselines, all shapes)"
grep -E "^## |\| (ours|dispatch) vs (torch|cublas_max|lt_heur_max|lt_auto_max|cublas_nn_fp16compute) \| all" "$OUT/summaries.md"
grep -E "^shapes timed" "$OUT/summaries.md"
grep -E "wgmma smoke:|passed|failed" "$LOG" | tail -3
echo "== SHORT TABLE (best wgmma config per shape vs cuBLASLt autotuned max / torch / mma.sync, per class)"
grep -E "^## wgmma|\| wgmma_best vs " "$OUT/summaries.md" || echo "no wgmma benchmark (smoke test failed or budget 0)"
