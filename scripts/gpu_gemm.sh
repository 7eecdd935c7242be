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
# tune or bench): the quick measurement of new wgmma configs and split-K, e.g.
#   GEMM_WGMMA_ONLY=1 bash scripts/gpu_gemm.sh 64 0 0 280
# GEMM_SHARDS=2 tunes on two GPUs at once; GEMM_SMOKE_PASSED skips the smoke test (see there).
# GEMM_BENCH_ROUNDS: interleaved rounds per shape of the offline benchmark (default 15; more rounds,
# less noise from clock changes under the power cap, proportionally more time).
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
source "$(dirname "$0")/gemm_sharded.sh"
# The benchmark also times ours without programmatic dependent launch ("ours vs ours_nopdl"); 0 skips it.
export CUDAOPT_GEMM_PDL_AB=${GEMM_PDL_AB:-1}
# Split-K reduce kernels: the chunked ones (the package default since session 12) unless GEMM_REDUCE_CHUNKED=0.
export CUDAOPT_GEMM_REDUCE_CHUNKED=${GEMM_REDUCE_CHUNKED:-1}
# ... and for 2..8 splits the fixed-split one, one lane a thread (the default since session 13; 0 = chunked).
export CUDAOPT_GEMM_REDUCE_FIXED=${GEMM_REDUCE_FIXED:-1}
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
    | grep -oE "HMMA\.[0-9A-Z.]+|LDSM[.A-Z0-9]*|LDGSTS[.A-Z0-9]*|HGMMA\.[0-9x]+\.F32|UTMALDG[.A-Z0-9]*|USETMAXREG[.A-Z]*|UCGABAR_[A-Z]+" | sort | uniq -c
  echo "== ptxas resources of the wgmma kernels"
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -c src/cudaopt/gemm/csrc/hgemm_wgmma.cu \
    -o "$WORK/wgmma.o" 2>&1 | grep -E "spill|Used [0-9]+ registers|C7508|serializ" | sort | uniq -c

  # A hung or faulting wgmma kernel must not take the rest of the run with it: each config runs
  # alone, under a timeout, in its own process; the tuner and the comparison get only the configs
  # that passed (CUDAOPT_GEMM_WGMMA_IDS). After two hangs the remaining configs are skipped.
  # Generation-2 configs then run split-K (splits 2..64, odd ones give items of unequal k-block
  # counts, and one k-block per split): only those that pass time split-K candidates
  # (CUDAOPT_GEMM_WGMMA_SPLITK_IDS); a split-K failure or hang keeps the config's plain kernel, and
  # after one split-K hang the remaining configs skip their split-K part. The 2x1 cluster configs
  # (ids 23-24, never run on a GPU yet) are ordinary entries here: a failing or hanging one is
  # dropped like any other (and counts toward the two-hang limit, which is why they come last).
  echo "== wgmma smoke test (one process per config, 45 s each)"
  WG_OK=1; WG_IDS=""; HANGS=0; SK_OK=1; SK_IDS=""; SK_MODE=split
  SMOKE_IDS=$(python3 -c "from cudaopt.gemm.configs import WGMMA_CONFIGS as W, RETIRED_WGMMA_IDS as R; print(' '.join(str(c.id) for c in W if c.id not in R))")
  # GEMM_SMOKE_PASSED="WG_IDS;SK_IDS" (the ids an earlier call's smoke test passed, same commit) skips it,
  # so a call that continues the grid spends its minute tuning.
  # GEMM_SMOKE_PASSED=auto: every tuned config and every one with split-K, for a call whose GPU tests (every
  # config) ran just before in the same call (gpu_check.sh gemm_adopt).
  if [ "${GEMM_SMOKE_PASSED:-}" = auto ]; then
    GEMM_SMOKE_PASSED="$(echo $SMOKE_IDS | tr ' ' ,);$(python3 -c "
from cudaopt.gemm.configs import KERNEL_CONFIGS as K
print(','.join(i for i in '$SMOKE_IDS'.split() if K[int(i)].max_splits > 1))")"
  fi
  if [ -n "${GEMM_SMOKE_PASSED:-}" ]; then
    WG_IDS=${GEMM_SMOKE_PASSED%%;*}; SK_IDS=${GEMM_SMOKE_PASSED#*;}; SMOKE_IDS=""
    echo "smoke test skipped: ids from GEMM_SMOKE_PASSED (wgmma $WG_IDS; split-K $SK_IDS)"
  fi
  for idx in $SMOKE_IDS; do
    if [ $HANGS -ge 2 ]; then echo "config id $idx skipped (two configs hung already)"; WG_OK=0; continue; fi
    SMOKE_OUT=$(mktemp)
    timeout 45 python3 - "$idx" "$SK_MODE" <<'PY' 2>&1 | tee "$SMOKE_OUT"
import sys, torch
from cudaopt.gemm import Choice, KERNEL_CONFIGS, hgemm
cfg = KERNEL_CONFIGS[int(sys.argv[1])]

def worst_err(cases):
    worst = 0.0
    for m, n, k, splits in cases:
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        out = hgemm(a, b, choice=Choice("ours", cfg.id, splits))
        torch.cuda.synchronize()
        ref = a.float() @ b.float()
        err = ((out.float() - ref).norm() / ref.norm()).item()
        worst = max(worst, err if err == err else float("inf"))
    return worst

# (4104, 1032, 136): M and N tails, fewer k-blocks than stages, several tiles per persistent block.
# 2x1 cluster configs also: an odd number of tile rows with several pair units per cluster (the last
# pair-row's rank-1 CTA idles), and a K below the ring over many units.
extra = [(8200, 4096, 512, 1), (4224, 8200, 72, 1)] if cfg.cluster_m > 1 else []
worst = worst_err([(128, 128, 64, 1), (200, 136, 264, 1), (2048, 2048, 2048, 1), (4104, 1032, 136, 1), *extra])
ok = worst < 2e-3
print(f"{cfg.label}: worst rel err {worst:.2e} {'OK' if ok else 'FAIL'}")
if cfg.cluster_m > 1:  # the grid cap of the cluster launcher (session 7: cluster kernels 1.4-3.2x slower)
    from cudaopt.gemm._lib import wgmma_kernels
    lib = wgmma_kernels()
    print(f"{cfg.label}: max active clusters {lib.cudaopt_wgmma_max_active_clusters(cfg.index)}, "
          f"SMs {torch.cuda.get_device_properties(0).multi_processor_count}")
if not ok:
    sys.exit(1)
print("PLAIN_OK", flush=True)
if cfg.max_splits > 1 and sys.argv[2] == "split":
    # split counts of 2..64: equal and unequal k-block counts per item (5 splits of 5 k-blocks = one
    # each; 3 of 16 = 5, 5, 6), tails, one tile (all SMs on one tile), more items than SMs.
    # (a cluster split-K config takes at most 8 splits: its cases are the ones within that)
    cases = [(200, 136, 264, 2), (200, 136, 264, 5), (72, 200, 1000, 3), (4104, 1032, 136, 3),
             (64, 64, 2048, 16), (512, 512, 4096, 8), (1000, 520, 1032, 7),
             (64, 64, 16384, 64), (200, 136, 8192, 48), (1024, 1024, 8192, 4), (4104, 1032, 2048, 6)]
    worst = worst_err([c for c in cases if c[3] <= cfg.max_splits])
    ok = worst < 2e-3
    print(f"{cfg.label} split-K: worst rel err {worst:.2e} {'OK' if ok else 'FAIL'}")
    if ok:
        print("SPLITK_OK")
    sys.exit(0 if ok else 3)
PY
    rc=${PIPESTATUS[0]}
    if grep -q "^PLAIN_OK" "$SMOKE_OUT"; then
      WG_IDS="$WG_IDS${WG_IDS:+,}$idx"
      if grep -q "^SPLITK_OK" "$SMOKE_OUT"; then SK_IDS="$SK_IDS${SK_IDS:+,}$idx"
      elif [ $rc -ne 0 ]; then
        SK_OK=0; echo "config id $idx: split-K FAILED (rc $rc); its plain kernel stays in"
        if [ $rc -eq 124 ]; then SK_MODE=nosplit; echo "config id $idx: split-K hung: later configs skip split-K"; fi
      fi
    else
      WG_OK=0
      if [ $rc -eq 124 ]; then HANGS=$((HANGS + 1)); echo "config id $idx hung (timeout)"; fi
    fi
    rm -f "$SMOKE_OUT"
  done
  if [ "$SK_MODE" != split ]; then SK_OK=0; fi
  export CUDAOPT_GEMM_WGMMA_IDS="$WG_IDS"
  export CUDAOPT_GEMM_WGMMA_SPLITK_IDS="$SK_IDS"
  if [ -n "$WG_IDS" ]; then export CUDAOPT_GEMM_KINDS=mma,wgmma; else export CUDAOPT_GEMM_KINDS=mma; fi
  # The GPU tests run every wgmma config: deselect them unless all passed (split-K tests likewise).
  TEST_FILTER=""; if [ "$WG_OK" != 1 ]; then TEST_FILTER="not wgmma"; elif [ "$SK_OK" != 1 ]; then TEST_FILTER="not splitk"; fi
  echo "wgmma smoke: $([ "$WG_OK" = 1 ] && echo passed || echo FAILED): tuner kinds = $CUDAOPT_GEMM_KINDS, wgmma ids = ${WG_IDS:-none}"
  echo "wgmma split-K smoke: $([ "$SK_OK" = 1 ] && echo passed || echo FAILED): split-K ids = ${SK_IDS:-none}"

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
  # GEMM_SHARDS=n (a machine of n GPUs): n tuners at once, GPU i on the shapes whose index % n == i,
  # merging into one table (save_table serialises them on a lock).
  SHARDS=${GEMM_SHARDS:-1}; TUNE_RC=0
  run_sharded "$SHARDS" "$WORK/tune_step" $((TUNE_S + 120)) \
    "tune_gemm(shapes='$SHAPES', out='$WORK/tuned.json', budget_s=$TUNE_S, merge=True" || TUNE_RC=$?
  cat "$WORK"/tune_step_*.txt > "$WORK/tune_step.txt"; rm -f "$WORK"/tune_step_*.txt
  grep -E "FAILED|budget reached|stopping|already tuned" "$WORK/tune_step.txt"
  echo "tuned this call: $(grep -c '^\[tune' "$WORK/tune_step.txt") shapes over $SHARDS GPU(s) in $((SECONDS - T0)) s; table: $(python3 -c "import json; print(len(json.load(open('$WORK/tuned.json'))['entries']))" 2>/dev/null) shapes"
  python3 -c "from cudaopt.gemm.tune import runoff_summary; print(runoff_summary('$WORK/tuned.screening.jsonl'))"
  checkpoint
  RUN_BENCH=1; B_S=$BENCH_S
  if [ "$N" = grid ]; then
    LEFT=$(( TUNE_S - (SECONDS - T0) )); [ $LEFT -gt 0 ] || LEFT=0
    B_S=$(( BENCH_S + LEFT ))
    if [ $TUNE_RC -ne 0 ] || grep -qE "tune budget reached|stopping:" "$WORK/tune_step.txt"; then RUN_BENCH=0; fi
  fi
  if [ "$RUN_BENCH" = 1 ]; then
    echo "== bench offline/gpu $SHAPES (budget ${B_S}s)"
    # sharded like the tune step; then one pass writes the whole report
    run_sharded "$SHARDS" "$WORK/bench_step" $((B_S + 120)) \
      "bench_gemm(shapes='$SHAPES', mode='offline', timing='gpu', out_dir='$WORK/offline_gpu', table='$WORK/tuned.json', rounds=${GEMM_BENCH_ROUNDS:-15}, budget_s=$B_S"
    tail -n 3 "$WORK"/bench_step_*.txt
    if [ "$SHARDS" -gt 1 ]; then
      python3 -c "from cudaopt.gemm.cli import bench_gemm; bench_gemm(shapes='$SHAPES', mode='offline', timing='gpu', out_dir='$WORK/offline_gpu', table='$WORK/tuned.json', budget_s=0)" > /dev/null 2>&1
    fi
    checkpoint
    if [ "${GEMM_MODE_SAMPLES:-1}" = 1 ]; then  # 0: leave call/server timing to gpu_gemm_modes.sh (whole grid)
    echo "== bench call timing sample:12"
    python3 -c "from cudaopt.gemm.cli import bench_gemm; bench_gemm(shapes='sample:12:1', mode='offline', timing='call', out_dir='$WORK/offline_call', table='$WORK/tuned.json', check=False, budget_s=25)"
    echo "== bench server/gpu sample:12"
    python3 -c "from cudaopt.gemm.cli import bench_gemm; bench_gemm(shapes='sample:12:1', mode='server', timing='gpu', out_dir='$WORK/server_gpu', table='$WORK/tuned.json', check=False, rounds=7, budget_s=25)"
    fi
  else
    echo "== benchmarks wait: tuning of $SHAPES not finished in this call (continue with GEMM_RESUME)"
  fi
  fi  # GEMM_WGMMA_ONLY

  if [ "$N" = grid ]; then
    echo "== wgmma comparison skipped (sample:N only)"
  elif [ -n "$WG_IDS" ]; then
    echo "== wgmma configs vs cuBLASLt autotuned, sample:$N (budget ${WG_S}s)"
    mkdir -p "$WORK/wgmma"
    # Every wgmma (config, splits) candidate (split-K where tiles < SMs and each split keeps >= 2
    # k-blocks), the heuristic mma.sync choice, torch.matmul and cuBLASLt (NN/TN, fastest of the
    # heuristic's algorithms) timed interleaved per shape; every wgmma candidate's output checked
    # against fp32 on one input set; the best (config, splits), best generation-2, best without and
    # best with split-K checked by all correctness checks (cudaopt.gemm.bench.run_wgmma_compare).
    timeout $((WG_S + 90)) python3 -c "
from pathlib import Path
from cudaopt.gemm.bench import run_wgmma_compare
from cudaopt.gemm.configs import enabled_wgmma_configs
from cudaopt.gemm.shapes import sample_shapes
run_wgmma_compare(sample_shapes($N, seed=0), $WG_S, Path('$WORK/wgmma'), configs=enabled_wgmma_configs())
"
  fi
} 2>&1 | tee "$LOG"
tar czf "$OUT/results.tgz" -C "$WORK" . 2>/dev/null
cp "$WORK/tuned.json" "$OUT/" 2>/dev/null
cp "$WORK/offline_gpu/speedup.png" "$OUT/offline_speedup.png" 2>/dev/null
cat "$WORK"/*/summary.md > "$OUT/summaries.md" 2>/dev/null
echo "== SHORT TABLE (ours vs baselines, all shapes)"
grep -E "^## |\| (ours|ours_nopdl|dispatch) vs (torch|cublas_max|lt_heur_max|lt_auto_max|cublas_nn_fp16compute|ours_nopdl)( \(paired\))? \| all" "$OUT/summaries.md"
grep -E "^\| (ours_bt vs (lt_auto_tn|lt_auto_max|ours)|dispatch_bt vs (torch_bt|lt_auto_tn))( \(paired\))? \| all" \
  "$OUT/summaries.md"  # (CUDAOPT_GEMM_BENCH_BT=1)
grep -E "^shapes timed|^kernel library: a diagnostic" "$OUT/summaries.md"
# The run's own per-shape noise (bench-gemm's A/A: torch.matmul timed as dispatch and as torch), all and the noisiest class;
# from session 39 a second pair of rows, the same shapes paired within rounds; from session 40 the same for our kernel
# timed as dispatch and as ours (the shapes the table runs ours on).
awk '/^### A\/A: torch/ {t = "A/A noise (torch)"} /^### A\/A: our/ {t = "A/A noise (ours)"}
     /^### / && !/^### A\/A/ {t = ""} /^Paired within rounds/ && t != "" {t = t " paired"}
     t != "" && /^\| (all|1e10-1e11) \|/ {print t " " $0}' "$OUT/summaries.md"
# The dispatcher's 0.98x floor (session 36): shapes under it per baseline, and how many only cuBLAS's TN layout reaches.
grep -A14 "^### Dispatcher floor" "$OUT/summaries.md" | grep -E "^\| (lt_auto_(max|nn)( \(paired\))?|lt_auto_max \(paired hi95\)|torch) \|" \
  | sed 's/^/floor /'
grep -E "wgmma smoke:|wgmma split-K smoke:|passed|failed" "$LOG" | tail -4
echo "== SHORT TABLE (best wgmma (config, splits) per shape vs cuBLASLt autotuned max / torch / mma.sync, per class)"
grep -E "^## wgmma|^split-K: |\| wgmma_(best|gen2|nosplit) vs " "$OUT/summaries.md" || echo "no wgmma benchmark (smoke test failed or budget 0)"
