#!/usr/bin/env bash
# The server-mode (gpu timing) and call-timing benchmarks over a whole tuned grid, after
# `gpu_gemm.sh grid` (whose results.tgz holds the table), sharded over the machine's GPUs.
# Usage: bash scripts/gpu_gemm_modes.sh RESULTS_TGZ [BUDGET_S per mode] ; results under $OUT.
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
source "$(dirname "$0")/gemm_sharded.sh"
OUT=${OUT:-runs/gemm_modes}; W=/tmp/gemm_modes; mkdir -p "$W" "$OUT"
tar xzf "$1" -C "$W"; B=${2:-200}
python3 -m cudaopt.gemm.build >/dev/null
N=$(nvidia-smi -L | wc -l)
for spec in "server gpu" "offline call"; do
  set -- $spec; D="$W/${1}_$2"
  run_sharded "$N" "$D" $((B + 90)) \
    "bench_gemm(shapes='grid', mode='$1', timing='$2', out_dir='$D', table='$W/tuned.json', check=False, budget_s=$B"
  python3 -c "from cudaopt.gemm.cli import bench_gemm; bench_gemm(shapes='grid', mode='$1', timing='$2', out_dir='$D', table='$W/tuned.json', check=False, budget_s=0)" > /dev/null 2>&1
  cp "$D/summary.md" "$OUT/${1}_$2_summary.md"; cp "$D/shapes.csv" "$OUT/${1}_$2_shapes.csv" 2>/dev/null
  cp "$D/speedup.png" "$OUT/${1}_$2_speedup.png" 2>/dev/null
  echo "== $1 / $2"; grep -E "^shapes timed|\| (ours|dispatch) vs (torch|cublas_max|lt_auto_max)( \(paired\))? \| all" "$D/summary.md"
done
