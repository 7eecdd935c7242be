// fp16 GEMM family on mma.sync m16n8k16 (fp16 in, fp32 accumulate) for sm_80+ / sm_90a.
//
// C[M,N] = A[M,K] @ B[K,N], all row-major fp16. One template, parameterised on the block tile
// (BM, BN, BK), the warp grid (WARPS_M x WARPS_N) and the cp.async pipeline depth (STAGES).
// Shared memory rows are padded by 16 bytes so that ldmatrix's eight 16-byte row reads of a warp
// fall in distinct banks. Tails in M, N and K are predicated in 8-element (16-byte) chunks, so the
// only requirement is K % 8 == 0, N % 8 == 0 and 16-byte aligned base pointers (checked by the
// caller). Split-K: with splits > 1, blockIdx.z takes a slice of the K tiles and writes fp32
// partials to a caller-owned workspace[splits][M][N]; a second kernel sums them into C.
// No allocation, no synchronisation and no state inside a launch: everything runs on `stream`.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>

namespace {

constexpr int kPadHalves = 8;  // 16 bytes of padding per shared-memory row
constexpr int kGroupM = 8;     // block swizzle: walk 8 tile-rows per column sweep for L2 reuse

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy; src_bytes = 0 fills the destination with zeros (out-of-bounds chunk).
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(src_bytes));
}
// Programmatic dependent launch (as in hgemm_wgmma.cu): launched with programmatic stream
// serialisation, a kernel may be scheduled under its predecessor's tail; it waits for that grid to
// complete (and its memory to be visible) before any global access, then lets its own successor be
// scheduled. Without a programmatic launch the wait returns at once.
__device__ __forceinline__ void pdl_wait_then_release() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}
__device__ __forceinline__ void pdl_reduce_wait_then_release() { pdl_wait_then_release(); }

#include "splitk_reduce.cuh"  // the split-K reduce kernels, shared with hgemm_wgmma.cu

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES>
struct Tile {
  static constexpr int kThreads = WARPS_M * WARPS_N * 32;
  static constexpr int kWarpM = BM / WARPS_M;
  static constexpr int kWarpN = BN / WARPS_N;
  static constexpr int kMI = kWarpM / 16;
  static constexpr int kNI = kWarpN / 8;
  static constexpr int kLdA = BK + kPadHalves;  // halves per A row in shared memory
  static constexpr int kLdB = BN + kPadHalves;  // halves per B row in shared memory
  static constexpr int kStageA = BM * kLdA;
  static constexpr int kStageB = BK * kLdB;
  static constexpr int kSmemBytes = STAGES * (kStageA + kStageB) * 2;
  static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0, "warp tile must be a multiple of 16x16");
  static_assert(BK % 16 == 0, "BK must be a multiple of 16");
  static_assert((BM * BK / 8) % kThreads == 0 && (BK * BN / 8) % kThreads == 0,
                "tile loads must divide evenly among threads");
};

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32)
    hgemm_mma_kernel(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C,
                     float* __restrict__ partials, int M, int N, int K, int lda, int ldb, int ldc) {
  using T = Tile<BM, BN, BK, WARPS_M, WARPS_N, STAGES>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  half* smem_a = reinterpret_cast<half*>(smem_raw);
  half* smem_b = smem_a + STAGES * T::kStageA;
  pdl_wait_then_release();  // before any global access

  // Block swizzle: consecutive blocks share B column tiles within a group of kGroupM tile-rows.
  const int tiles_m = (M + BM - 1) / BM;
  const int tiles_n = (N + BN - 1) / BN;
  const int pid = blockIdx.x;
  const int group_size = kGroupM * tiles_n;
  const int group = pid / group_size;
  const int first_m = group * kGroupM;
  const int rows_in_group = min(tiles_m - first_m, kGroupM);
  const int tile_m = first_m + (pid % group_size) % rows_in_group;
  const int tile_n = (pid % group_size) / rows_in_group;
  const int m0 = tile_m * BM;
  const int n0 = tile_n * BN;

  // Split-K: this block's slice of K tiles.
  const int k_tiles_total = (K + BK - 1) / BK;
  const int splits = gridDim.z;
  const int tiles_per_split = (k_tiles_total + splits - 1) / splits;
  const int kt_begin = blockIdx.z * tiles_per_split;
  const int kt_end = min(k_tiles_total, kt_begin + tiles_per_split);
  const int k_tiles = max(0, kt_end - kt_begin);

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int warp_m = warp / WARPS_N;
  const int warp_n = warp % WARPS_N;

  auto load_tile = [&](int stage, int kt) {
    const int k0 = (kt_begin + kt) * BK;
    half* sa = smem_a + stage * T::kStageA;
    half* sb = smem_b + stage * T::kStageB;
#pragma unroll
    for (int i = 0; i < BM * BK / 8 / T::kThreads; ++i) {
      const int chunk = tid + i * T::kThreads;
      const int r = chunk / (BK / 8);
      const int c = (chunk % (BK / 8)) * 8;
      const int gr = m0 + r, gc = k0 + c;
      const bool ok = gr < M && gc < K;
      const half* src = ok ? A + (size_t)gr * lda + gc : A;
      cp_async_16(sa + r * T::kLdA + c, src, ok);
    }
#pragma unroll
    for (int i = 0; i < BK * BN / 8 / T::kThreads; ++i) {
      const int chunk = tid + i * T::kThreads;
      const int r = chunk / (BN / 8);
      const int c = (chunk % (BN / 8)) * 8;
      const int gr = k0 + r, gc = n0 + c;
      const bool ok = gr < K && gc < N;
      const half* src = ok ? B + (size_t)gr * ldb + gc : B;
      cp_async_16(sb + r * T::kLdB + c, src, ok);
    }
  };

  float acc[T::kMI][T::kNI][4];
#pragma unroll
  for (int i = 0; i < T::kMI; ++i)
#pragma unroll
    for (int j = 0; j < T::kNI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_tile(s, s);
    cp_async_commit();  // commit even when empty so group counting stays uniform
  }

  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt is visible, and every warp is done with the stage refilled next
    const int next = kt + STAGES - 1;
    if (next < k_tiles) load_tile(next % STAGES, next);
    cp_async_commit();

    const half* sa = smem_a + (kt % STAGES) * T::kStageA;
    const half* sb = smem_b + (kt % STAGES) * T::kStageB;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a_frag[T::kMI][4];
      uint32_t b_frag[T::kNI][2];
#pragma unroll
      for (int i = 0; i < T::kMI; ++i) {
        const int r = warp_m * T::kWarpM + i * 16 + (lane & 15);
        const int c = kk + (lane >> 4) * 8;
        ldmatrix_x4(a_frag[i], sa + r * T::kLdA + c);
      }
#pragma unroll
      for (int j = 0; j < T::kNI; j += 2) {
        const int r = kk + (lane & 7) + ((lane >> 3) & 1) * 8;
        const int c = warp_n * T::kWarpN + j * 8 + (lane >> 4) * 8;
        uint32_t t[4];
        ldmatrix_x4_trans(t, sb + r * T::kLdB + c);
        b_frag[j][0] = t[0];
        b_frag[j][1] = t[1];
        b_frag[j + 1][0] = t[2];
        b_frag[j + 1][1] = t[3];
      }
#pragma unroll
      for (int i = 0; i < T::kMI; ++i)
#pragma unroll
        for (int j = 0; j < T::kNI; ++j) mma_16816(acc[i][j], a_frag[i], b_frag[j][0], b_frag[j][1]);
    }
  }
  cp_async_wait<0>();

  // Epilogue: each thread owns pairs of adjacent columns; N % 8 == 0 keeps pairs in bounds together.
  const int row_base = m0 + warp_m * T::kWarpM + (lane >> 2);
  const int col_base = n0 + warp_n * T::kWarpN + (lane & 3) * 2;
  float* part = partials ? partials + (size_t)blockIdx.z * M * N : nullptr;
#pragma unroll
  for (int i = 0; i < T::kMI; ++i) {
#pragma unroll
    for (int j = 0; j < T::kNI; ++j) {
      const int col = col_base + j * 8;
      if (col >= N) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row_base + i * 16 + h * 8;
        if (row >= M) continue;
        const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
        if (part) {
          *reinterpret_cast<float2*>(part + (size_t)row * N + col) = make_float2(v0, v1);
        } else {
          *reinterpret_cast<half2*>(C + (size_t)row * ldc + col) = __floats2half2_rn(v0, v1);
        }
      }
    }
  }
}

// The session-3 reduce (the default until session 12; CUDAOPT_GEMM_REDUCE_CHUNKED=0 selects it): sums `splits` fp32
// partial products [splits][M][N] into fp16 C; 4 columns per thread, splits in order.
__global__ void splitk_reduce_serial_kernel(const float* __restrict__ partials, half* __restrict__ C,
                                     int M, int N, int ldc, int splits) {
  pdl_wait_then_release();  // the partials are complete and visible
  const size_t quads = (size_t)M * N / 4;
  const size_t stride = (size_t)M * N;
  for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < quads;
       q += (size_t)gridDim.x * blockDim.x) {
    float4 s = reinterpret_cast<const float4*>(partials)[q];
    for (int z = 1; z < splits; ++z) {
      const float4 p = reinterpret_cast<const float4*>(partials + z * stride)[q];
      s.x += p.x;
      s.y += p.y;
      s.z += p.z;
      s.w += p.w;
    }
    store_lane<1>(C, N, ldc, q, &s);
  }
}

struct ConfigEntry {
  int bm, bn, bk, warps_m, warps_n, stages, smem_bytes;
  void (*kernel)(const half*, const half*, half*, float*, int, int, int, int, int, int);
};

#define CUDAOPT_CFG(BM, BN, BK, WM, WN, ST)                                   \
  ConfigEntry {                                                              \
    BM, BN, BK, WM, WN, ST, Tile<BM, BN, BK, WM, WN, ST>::kSmemBytes,        \
        hgemm_mma_kernel<BM, BN, BK, WM, WN, ST>                             \
  }

// The family. Order is the config id the Python side stores in its tuned table: append only.
const ConfigEntry kConfigs[] = {
    CUDAOPT_CFG(128, 128, 32, 2, 2, 4),  // 0: 4 warps of 64x64
    CUDAOPT_CFG(128, 256, 32, 2, 4, 3),  // 1: 8 warps of 64x64
    CUDAOPT_CFG(256, 128, 32, 4, 2, 3),  // 2: 8 warps of 64x64
    CUDAOPT_CFG(128, 128, 64, 2, 2, 3),  // 3: deeper K step
    CUDAOPT_CFG(64, 128, 32, 2, 2, 4),   // 4: 4 warps of 32x64
    CUDAOPT_CFG(128, 64, 32, 2, 2, 4),   // 5: 4 warps of 64x32
    CUDAOPT_CFG(64, 64, 32, 2, 2, 4),    // 6: 4 warps of 32x32, small shapes
    CUDAOPT_CFG(64, 64, 64, 2, 2, 3),    // 7
    CUDAOPT_CFG(32, 64, 64, 2, 2, 4),    // 8: 4 warps of 16x32, tiny M
    CUDAOPT_CFG(64, 256, 32, 2, 4, 3),   // 9: 8 warps of 32x64
    CUDAOPT_CFG(256, 128, 32, 4, 2, 4),  // 10
    CUDAOPT_CFG(128, 256, 64, 2, 4, 3),  // 11: 8 warps, deep K step
    CUDAOPT_CFG(128, 128, 32, 2, 4, 4),  // 12: 8 warps of 64x32
    CUDAOPT_CFG(64, 128, 64, 2, 2, 4),   // 13
};
constexpr int kNumConfigs = sizeof(kConfigs) / sizeof(kConfigs[0]);

std::atomic<bool> g_pdl{true};
std::atomic<bool> g_reduce_chunked{true};  // see cudaopt_hgemm_set_reduce_chunked

// One launch on `s`, programmatic (PDL) when g_pdl. Returns 0 or a cudaError_t.
int launch(const void* fn, dim3 grid, int threads, int smem, cudaStream_t s, void** args) {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.gridDim = grid;
  cfg.blockDim = dim3(threads, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = g_pdl.load() ? 1 : 0;
  cudaError_t e = cudaLaunchKernelExC(&cfg, fn, args);
  if (e != cudaSuccess && cfg.numAttrs) {  // a stream or driver that refuses PDL: launch plainly
    (void)cudaGetLastError();
    cfg.numAttrs = 0;
    e = cudaLaunchKernelExC(&cfg, fn, args);
  }
  return e != cudaSuccess ? (int)e : (int)cudaGetLastError();
}

}  // namespace

extern "C" {

int cudaopt_hgemm_num_configs() { return kNumConfigs; }

// Writes bm, bn, bk, warps_m, warps_n, stages, smem_bytes into out[7]. Returns 0, or 1 for a bad id.
int cudaopt_hgemm_config_info(int config, int* out) {
  if (config < 0 || config >= kNumConfigs) return 1;
  const ConfigEntry& c = kConfigs[config];
  const int v[7] = {c.bm, c.bn, c.bk, c.warps_m, c.warps_n, c.stages, c.smem_bytes};
  for (int i = 0; i < 7; ++i) out[i] = v[i];
  return 0;
}

// Raises every kernel's dynamic shared-memory limit. Call once per process and device before use.
int cudaopt_hgemm_init() {
  for (int i = 0; i < kNumConfigs; ++i) {
    cudaError_t e = cudaFuncSetAttribute(kConfigs[i].kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         kConfigs[i].smem_bytes);
    if (e != cudaSuccess) return (int)e;
  }
  return 0;
}

size_t cudaopt_hgemm_workspace_bytes(int M, int N, int splits) {
  return splits > 1 ? (size_t)splits * M * N * sizeof(float) : 0;
}

// C = A @ B on `stream`. Returns a cudaError_t value (0 on success), or -1 for bad arguments
// (unknown config, splits < 1, too small a workspace, unaligned sizes).
int cudaopt_hgemm(const void* A, const void* B, void* C, int M, int N, int K, int lda, int ldb,
                  int ldc, int config, int splits, void* workspace, size_t workspace_bytes,
                  void* stream) {
  if (config < 0 || config >= kNumConfigs || splits < 1 || M <= 0 || N <= 0 || K <= 0) return -1;
  if (K % 8 || N % 8 || lda % 8 || ldb % 8 || ldc % 8) return -1;
  if (splits > 1 && (workspace == nullptr ||
                     workspace_bytes < cudaopt_hgemm_workspace_bytes(M, N, splits)))
    return -1;
  const ConfigEntry& c = kConfigs[config];
  const int tiles = ((M + c.bm - 1) / c.bm) * ((N + c.bn - 1) / c.bn);
  dim3 grid(tiles, 1, splits);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  float* partials = splits > 1 ? static_cast<float*>(workspace) : nullptr;
  const half* a = static_cast<const half*>(A);
  const half* b = static_cast<const half*>(B);
  half* c_half = static_cast<half*>(C);
  void* args[] = {&a, &b, &c_half, &partials, &M, &N, &K, &lda, &ldb, &ldc};
  const int e = launch(reinterpret_cast<const void*>(c.kernel), grid, c.warps_m * c.warps_n * 32,
                       c.smem_bytes, s, args);
  if (e != 0 || splits == 1) return e;
  const size_t quads = (size_t)M * N / 4;
  const float* parts = partials;
  void* rargs[] = {&parts, &c_half, &M, &N, &ldc, &splits};
  if (!g_reduce_chunked.load() || splits > 8 * kReduceChunk) {  // a block holds at most 8 chunks
    const int threads = 256;
    const int blocks = (int)((quads + threads - 1) / threads < 4096 ? (quads + threads - 1) / threads : 4096);
    return launch(reinterpret_cast<const void*>(splitk_reduce_serial_kernel), dim3(blocks, 1, 1), threads, 0,
                  s, rargs);
  }
  int lanes = 0;
  const int threads = reduce_block(splits, &lanes);
  const int blocks = (int)((quads + lanes - 1) / lanes < 4096 ? (quads + lanes - 1) / lanes : 4096);
  return launch(reinterpret_cast<const void*>(splitk_reduce_chunked_kernel<1>), dim3(blocks, 1, 1), threads,
                0, s, rargs);
}

// Whether launches are programmatic (PDL); on unless switched off. Host-only.
void cudaopt_hgemm_set_pdl(int on) { g_pdl.store(on != 0); }
// Split-K reduce: 1 (default since session 12, when the grid was tuned and checked with it) =
// splitk_reduce_chunked_kernel<1> (splitk_reduce.cuh: chunks of 8 splits), 0 = the serial kernel. Host-only.
void cudaopt_hgemm_set_reduce_chunked(int on) { g_reduce_chunked.store(on != 0); }
int cudaopt_hgemm_pdl() { return g_pdl.load() ? 1 : 0; }

}  // extern "C"
