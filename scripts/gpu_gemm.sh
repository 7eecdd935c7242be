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
# GEMM_WGMMA_ONLY=1: build, SASS/ptxas, smoke test, then only the wgmma comparison (no GPU tests,
# tune or bench): the quick measurement of new wgmma configs, e.g.
#   GEMM_WGMMA_ONLY=1 bash scripts/gpu_gemm.sh 8 0 0 120
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
  # alone, under a timeout, in its own process; the tuner and the comparison get only the configs
  # that passed (CUDAOPT_GEMM_WGMMA_IDS). After two hangs the remaining configs are skipped.
  echo "== wgmma smoke test (one process per config, 45 s each)"
  WG_OK=1; WG_IDS=""; HANGS=0
  for idx in $(python3 -c "from cudaopt.gemm.configs import WGMMA_CONFIGS as W; print(' '.join(str(c.id) for c in W))"); do
    if [ $HANGS -ge 2 ]; then echo "config id $idx skipped (two configs hung already)"; WG_OK=0; continue; fi
    timeout 45 python3 - "$idx" <<'PY'
import sys, torch
from cudaopt.gemm import Choice, KERNEL_CONFIGS, hgemm
cfg = KERNEL_CONFIGS[int(sys.argv[1])]
worst = 0.0
# (4104, 1032, 136): M and N tails, fewer k-blocks than stages, several tiles per persistent block.
for m, n, k in [(128, 128, 64), (200, 136, 264), (2048, 2048, 2048), (4104, 1032, 136)]:
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
    if [ $rc -eq 0 ]; then WG_IDS="$WG_IDS${WG_IDS:+,}$idx"; else WG_OK=0; fi
    if [ $rc -eq 124 ]; then HANGS=$((HANGS + 1)); echo "config id $idx hung (timeout)"; fi
  done
  export CUDAOPT_GEMM_WGMMA_IDS="$WG_IDS"
  if [ -n "$WG_IDS" ]; then export CUDAOPT_GEMM_KINDS=mma,wgmma; else export CUDAOPT_GEMM_KINDS=mma; fi
  # The GPU tests run every wgmma config: deselect them unless all passed.
  TEST_FILTER=""; if [ "$WG_OK" != 1 ]; then TEST_FILTER="not wgmma"; fi
  echo "wgmma smoke: $([ "$WG_OK" = 1 ] && echo passed || echo FAILED): tuner kinds = $CUDAOPT_GEMM_KINDS, wgmma ids = ${WG_IDS:-none}"

  if [ "${GEMM_WGMMA_ONLY:-0}" = 1 ]; then
    echo "== GPU tests, tune and bench skipped (GEMM_WGMMA_ONLY=1)"
  elif [ "${GEMM_TESTS:-1}" = 0 ]; then
    echo "== GPU tests skipped (GEMM_TESTS=0)"
  else
    echo "== GPU tests ${TEST_FILTER:+(-k '$TEST_FILTER')}"
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gemm_gpu.py -k "${TEST_FILTER}" 2>&1 | tail -25
  fi
  # Resumable: merges into (and skips the shapes of) a tuned.json from an earlier call; the
  # benchmarks skip the shapes in their folder's shapes.jsonl.
  if [ "${GEMM_WGMMA_ONLY:-0}" != 1 ]; then
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
  fi  # GEMM_WGMMA_ONLY

  if [ "$N" = grid ]; then
    echo "== wgmma comparison skipped (sample:N only)"
  elif [ -n "$WG_IDS" ]; then
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
from cudaopt.gemm.configs import KERNEL_CONFIGS, enabled_wgmma_configs
from cudaopt.gemm.correctness import check_gemm
from cudaopt.gemm.dispatch import heuristic_choice
from cudaopt.gemm.report import summary_markdown
from cudaopt.gemm.shapes import flops, sample_shapes
from cudaopt.gemm.stats import max_of, ratios, summarize_by_class
from cudaopt.gemm.timing import time_gpu

n_shapes, budget, out_dir = int(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3])
WGMMA_CONFIGS = enabled_wgmma_configs()  # those that passed the smoke test
rng, t0, rows = random.Random(1), time.perf_counter(), []
times = {"wgmma_best": {}, "mma": {}, "torch": {}, "lt_auto_nn": {}, "lt_auto_tn": {}, "gen1_best": {}, "gen2_best": {}}
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
    gen2_ok = None
    for gen, key in ((0, "gen1_best"), (1, "gen2_best")):  # generation 1 = schedule 0
        g = {c.label: wg[c.label] for c in WGMMA_CONFIGS if (c.schedule != 0) == bool(gen) and c.label in wg}
        if g:
            times[key][s] = min(g.values())
            if gen == 1:  # the best generation-2 config passes every check too (not only the smoke test)
                c2 = next(c for c in WGMMA_CONFIGS if c.label == min(g, key=g.get))
                gen2_ok = ok if c2.label == best else check_gemm(
                    lambda a, b, out, c=c2: hgemm(a, b, out=out, choice=Choice("ours", c.id, 1)), m, n, k).ok
    rows.append({"m": m, "n": n, "k": k, "best": best, "correct": ok, "gen2_correct": gen2_ok,
                 **{key: round(v, 3) for key, v in t.items()}})
    print(f"{m}x{n}x{k}: best {best} {wg.get(best, math.nan):.2f}us ({tf(wg.get(best)):.0f} TF/s) "
          f"mma {t['mma']:.2f}us lt_auto_max {lt:.2f}us ({tf(lt):.0f} TF/s) torch {t['torch']:.2f}us ok={ok} gen2_ok={gen2_ok}")
    print("   " + "  ".join(f"{lbl} {us:.2f}" for lbl, us in sorted(wg.items(), key=lambda kv: kv[1])))
torch.cuda.empty_cache()
times["lt_auto_max"] = max_of(times["lt_auto_nn"], times["lt_auto_tn"])
summ = []
for base in ("lt_auto_max", "torch", "mma"):
    summ += summarize_by_class(f"wgmma_best vs {base}", ratios(times[base], times["wgmma_best"]))
if times["gen1_best"] and times["gen2_best"]:  # did generation 2 help, shape by shape
    summ += summarize_by_class("wgmma_gen2 vs wgmma_gen1", ratios(times["gen1_best"], times["gen2_best"]))
    summ += summarize_by_class("wgmma_gen2 vs lt_auto_max", ratios(times["lt_auto_max"], times["gen2_best"]))
wins = {}
for r in rows:
    wins[r["best"]] = wins.get(r["best"], 0) + 1
n_ok = sum(1 for r in rows if r["correct"])
n_ok2 = sum(1 for r in rows if r["gen2_correct"])
md = [f"## wgmma configs vs cuBLASLt ({len(rows)} shapes, correct {n_ok}/{len(rows)}, "
      f"best generation-2 config correct {n_ok2}/{len(rows)}, fastest config counts {wins})", "", summary_markdown(summ, "t_ref / t_wgmma_best (GPU time)")]
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
grep -E "^## wgmma|\| wgmma_(best|gen2) vs " "$OUT/summaries.md" || echo "no wgmma benchmark (smoke test failed or budget 0)"
