// cuBLAS and cuBLASLt baselines behind a C ABI, so the benchmark times vendor kernels through the
// same ctypes path as ours. Row-major C[M,N] = A[M,K] @ B[K,N] is computed as the column-major
// product C^T = B^T A^T.
//   layout 0 ("NN"): B is K x N row-major, as torch.matmul(a, b) gets it.
//   layout 1 ("TN"): the caller passes Bt = B^T as N x K row-major (a "Linear weight"), op T.
// compute 0: CUBLAS_COMPUTE_32F (fp32 accumulate, fp32 alpha/beta);
// compute 1: CUBLAS_COMPUTE_16F (fp16 accumulate) -- reported only under an "fp16-compute" label.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <new>

namespace {
cublasHandle_t g_handle = nullptr;  // created once by cudaopt_blas_init, used by the baselines only
cublasLtHandle_t g_lt = nullptr;
}  // namespace

extern "C" {

int cudaopt_blas_init() {
  if (!g_handle && cublasCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) return 1;
  if (!g_lt && cublasLtCreate(&g_lt) != CUBLAS_STATUS_SUCCESS) return 2;
  return 0;
}

// cublasGemmEx. Returns the cublasStatus_t value (0 on success).
int cudaopt_cublas_gemm(const void* A, const void* B, void* C, int M, int N, int K, int layout,
                        int compute, void* stream) {
  if (!g_handle) return -1;
  cublasStatus_t st = cublasSetStream(g_handle, static_cast<cudaStream_t>(stream));
  if (st != CUBLAS_STATUS_SUCCESS) return (int)st;
  const cublasOperation_t opB = layout == 0 ? CUBLAS_OP_N : CUBLAS_OP_T;
  const int ldb = layout == 0 ? N : K;
  if (compute == 0) {
    const float alpha = 1.f, beta = 0.f;
    st = cublasGemmEx(g_handle, opB, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16F, ldb, A,
                      CUDA_R_16F, K, &beta, C, CUDA_R_16F, N, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT);
  } else {
    const __half alpha = __float2half(1.f), beta = __float2half(0.f);
    st = cublasGemmEx(g_handle, opB, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16F, ldb, A,
                      CUDA_R_16F, K, &beta, C, CUDA_R_16F, N, CUBLAS_COMPUTE_16F,
                      CUBLAS_GEMM_DEFAULT);
  }
  return (int)st;
}

// A cuBLASLt plan for one shape and layout: descriptors plus the heuristic's returned algorithms,
// best first. fp32 compute with an fp32 scale type (an fp16 scale type finds no algorithm).
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  int count = 0;
  cublasLtMatmulHeuristicResult_t results[32];
};

void cudaopt_lt_plan_destroy(void* handle) {
  LtPlan* p = static_cast<LtPlan*>(handle);
  if (!p) return;
  if (p->desc) cublasLtMatmulDescDestroy(p->desc);
  if (p->a) cublasLtMatrixLayoutDestroy(p->a);
  if (p->b) cublasLtMatrixLayoutDestroy(p->b);
  if (p->c) cublasLtMatrixLayoutDestroy(p->c);
  delete p;
}

// Creates a plan; *out_count receives how many algorithms the heuristic returned (<= max_algos).
// Returns the plan, or null on failure (then *out_count holds the failing status, negated).
void* cudaopt_lt_plan_create(int M, int N, int K, int layout, size_t workspace_bytes, int max_algos,
                             int* out_count) {
  LtPlan* p = new (std::nothrow) LtPlan();
  if (!p || !g_lt) {
    *out_count = -1;
    delete p;
    return nullptr;
  }
  if (max_algos > 32) max_algos = 32;
  cublasStatus_t st = cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const cublasOperation_t opA = layout == 0 ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t opB = CUBLAS_OP_N;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB));
  // First operand is B (or Bt); stored dims before the op, column-major.
  if (st == CUBLAS_STATUS_SUCCESS)
    st = layout == 0 ? cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16F, N, K, N)
                     : cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16F, K, N, K);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16F, K, M, K);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&p->c, CUDA_R_16F, N, M, N);
  cublasLtMatmulPreference_t pref = nullptr;
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceCreate(&pref);
  const uint64_t ws = workspace_bytes;  // 64-bit: an int here overflows to 0 for large workspaces
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                              sizeof(ws));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(g_lt, p->desc, p->a, p->b, p->c, p->c, pref, max_algos,
                                        p->results, &p->count);
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || p->count <= 0) {
    *out_count = st != CUBLAS_STATUS_SUCCESS ? -(int)st : 0;
    cudaopt_lt_plan_destroy(p);
    return nullptr;
  }
  *out_count = p->count;
  return p;
}

// Runs algorithm `algo` (0 = heuristic top-1) of a plan. Returns the cublasStatus_t value.
int cudaopt_lt_run(void* handle, int algo, const void* A, const void* B, void* C, void* workspace,
                   size_t workspace_bytes, void* stream) {
  LtPlan* p = static_cast<LtPlan*>(handle);
  if (!p || algo < 0 || algo >= p->count) return -1;
  if (p->results[algo].workspaceSize > workspace_bytes) return -2;
  const float alpha = 1.f, beta = 0.f;
  return (int)cublasLtMatmul(g_lt, p->desc, &alpha, B, p->a, A, p->b, &beta, C, p->c, C, p->c,
                             &p->results[algo].algo, workspace, workspace_bytes,
                             static_cast<cudaStream_t>(stream));
}

// What algorithm `algo` of a plan is: out[0..8] = cublasLtMatmulAlgoConfigAttributes_t 0..8 (ID, TILE_ID,
// SPLITK_NUM, REDUCTION_SCHEME, CTA_SWIZZLING, CUSTOM_OPTION, STAGES_ID, INNER_SHAPE_ID, CLUSTER_SHAPE_ID;
// -1 where unreadable), out[9] = its workspace bytes, out[10] = the heuristic's waves count x 1000.
// Returns 0, or -1 for a bad plan or index. (benchmarks/gemm_lt_algos.py: which kernels cuBLASLt's
// autotuned best are, on the shapes where they beat its own heuristic by 15-20%.)
int cudaopt_lt_algo_info(void* handle, int algo, long long* out) {
  LtPlan* p = static_cast<LtPlan*>(handle);
  if (!p || algo < 0 || algo >= p->count) return -1;
  const cublasLtMatmulAlgo_t* a = &p->results[algo].algo;
  for (int attr = 0; attr <= 8; ++attr) {
    out[attr] = -1;
    const auto key = static_cast<cublasLtMatmulAlgoConfigAttributes_t>(attr);
    size_t need = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(a, key, nullptr, 0, &need) != CUBLAS_STATUS_SUCCESS || need == 0 ||
        need > sizeof(uint64_t))
      continue;
    uint64_t v = 0;  // little-endian: a narrower attribute fills the low bytes
    size_t got = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(a, key, &v, need, &got) == CUBLAS_STATUS_SUCCESS)
      out[attr] = static_cast<long long>(v);
  }
  out[9] = static_cast<long long>(p->results[algo].workspaceSize);
  out[10] = static_cast<long long>(p->results[algo].wavesCount * 1000.f);
  return 0;
}

}  // extern "C"
