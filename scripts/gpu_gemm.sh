#!/usr/bin/env bash
# One GPU call for the HGEMM work: build, SASS check, correctness tests, tune + benchmark a sample
# of the grid, and a short table last. Full results land under $OUT (at most 8 files come back).
# Usage on the device machine, from the repo root:  bash scripts/gpu_gemm.sh [N_SHAPES] [TUNE_S] [BENCH_S]
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
N=${1:-40}; TUNE_S=${2:-70}; BENCH_S=${3:-110}
OUT=${OUT:-runs/gemm_gpu}
WORK=$OUT/work
mkdir -p "$WORK"
LOG=$OUT/log.txt
{
  echo "== $(date -u +%FT%TZ) commit ${GEMM_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv
  python3 -m cudaopt.gemm.build
  echo "== SASS instruction counts in the kernel library"
  cuobjdump --dump-sass src/cudaopt/gemm/_build/libcudaopt_hgemm.so \
    | grep -oE "HMMA\.[0-9A-Z.]+|LDSM[.A-Z0-9]*|LDGSTS[.A-Z0-9]*|HGMMA[.A-Z0-9]*" | sort | uniq -c
  echo "== GPU tests"
  python3 -m pytest -x -q -p no:cacheprovider tests/gpu/test_gemm_gpu.py 2>&1 | tail -15
  echo "== tune sample:$N (budget ${TUNE_S}s)"
  python3 -c "from cudaopt.gemm.cli import tune_gemm; tune_gemm(shapes='sample:$N', out='$WORK/tuned.json', budget_s=$TUNE_S, merge=False)"
  echo "== bench offline/gpu sample:$N (budget ${BENCH_S}s)"
  python3 -c "from cudaopt.gemm.cli import bench_gemm; bench_gemm(shapes='sample:$N', mode='offline', timing='gpu', out_dir='$WORK/offline_gpu', table='$WORK/tuned.json', budget_s=$BENCH_S)"
  echo "== bench call timing sample:12"
  python3 -c "from cudaopt.gemm.cli import bench_gemm; bench_gemm(shapes='sample:12:1', mode='offline', timing='call', out_dir='$WORK/offline_call', table='$WORK/tuned.json', check=False, budget_s=25)"
  echo "== bench server/gpu sample:12"
  python3 -c "from cudaopt.gemm.cli import bench_gemm; bench_gemm(shapes='sample:12:1', mode='server', timing='gpu', out_dir='$WORK/server_gpu', table='$WORK/tuned.json', check=False, rounds=7, budget_s=25)"
} 2>&1 | tee "$LOG"
tar czf "$OUT/results.tgz" -C "$WORK" . 2>/dev/null
cp "$WORK/tuned.json" "$OUT/" 2>/dev/null
cp "$WORK/offline_gpu/speedup.png" "$OUT/offline_speedup.png" 2>/dev/null
cat "$WORK"/*/summary.md > "$OUT/summaries.md" 2>/dev/null
echo "== SHORT TABLE (ours vs baselines, all shapes)"
grep -E "^## |\| (ours|dispatch) vs (torch|cublas_max|lt_heur_max|lt_auto_max|cublas_nn_fp16compute) \| all" "$OUT/summaries.md"
grep -E "^shapes timed" "$OUT/summaries.md"
