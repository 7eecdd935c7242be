# Sourced by gpu_gemm.sh and gpu_gemm_modes.sh (needs PYTHONPATH=src).
# run_sharded SHARDS LOG_PREFIX LIMIT_S CALL: runs the Python call CALL (a cudaopt.gemm.cli function with
# its argument list left open, e.g. "tune_gemm(shapes='grid', budget_s=60") once per GPU at once, GPU i
# adding shard='i/SHARDS' (one plain run on the current GPU when SHARDS is 1), each under a timeout of
# LIMIT_S with its output in LOG_PREFIX_i.txt. Returns the last non-zero exit status, else 0.
run_sharded() {
  local shards=$1 prefix=$2 limit=$3 call=$4 rc=0 pids="" i dev arg p
  for ((i = 0; i < shards; i++)); do
    dev=${CUDA_VISIBLE_DEVICES:-0}; arg=""
    if [ "$shards" -gt 1 ]; then dev=$i; arg=", shard='$i/$shards'"; fi
    CUDA_VISIBLE_DEVICES=$dev timeout "$limit" python3 -c "from cudaopt.gemm.cli import bench_gemm, tune_gemm; $call$arg)" \
      > "${prefix}_$i.txt" 2>&1 &
    pids="$pids $!"
  done
  for p in $pids; do wait "$p" || rc=$?; done
  return $rc
}
