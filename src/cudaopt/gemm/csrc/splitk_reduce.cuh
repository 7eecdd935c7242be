// Split-K reduce pieces shared by hgemm_mma.cu (V = 1: 4 columns a lane) and hgemm_wgmma.cu (V = 2:
// 8 columns a lane). Included inside each file's anonymous namespace, after its includes and its
// pdl_reduce_wait_then_release.
#pragma once

constexpr int kReduceChunk = 8;  // splits one thread of the chunked reduce sums, loads in flight together

__device__ __forceinline__ void add4(float4& a, const float4& b) {
  a.x += b.x;
  a.y += b.y;
  a.z += b.z;
  a.w += b.w;
}

// Lane q's 4V sums as fp16 into C (leading dimension ldc; N % (4V) == 0). V = 2: one 16-byte store
// (C and ldc 16-byte aligned, checked on the host); V = 1: two half2 stores.
template <int V>
__device__ __forceinline__ void store_lane(half* C, int N, int ldc, size_t q, const float4* s) {
  const size_t e = q * 4 * V;
  const size_t row = e / N, col = e % N;
  if constexpr (V == 2) {
    union {
      uint4 u;
      half2 h[4];
    } out;
    out.h[0] = __floats2half2_rn(s[0].x, s[0].y);
    out.h[1] = __floats2half2_rn(s[0].z, s[0].w);
    out.h[2] = __floats2half2_rn(s[1].x, s[1].y);
    out.h[3] = __floats2half2_rn(s[1].z, s[1].w);
    *reinterpret_cast<uint4*>(C + row * ldc + col) = out.u;
  } else {
    static_assert(V == 1, "lanes of 4 or 8 columns");
    half2* dst = reinterpret_cast<half2*>(C + row * ldc + col);
    dst[0] = __floats2half2_rn(s[0].x, s[0].y);
    dst[1] = __floats2half2_rn(s[0].z, s[0].w);
  }
}

// Four fp32 sums as fp16 at dst (8-byte aligned): one 8-byte store. The in-kernel split-K
// reductions of hgemm_wgmma.cu (spread fixup, cluster split-K) store their slices with it.
__device__ __forceinline__ void store_half4(half* dst, const float4& s) {
  union {
    uint2 u;
    half2 h[2];
  } out;
  out.h[0] = __floats2half2_rn(s.x, s.y);
  out.h[1] = __floats2half2_rn(s.z, s.w);
  *reinterpret_cast<uint2*>(dst) = out.u;
}

// Sums the `splits` fp32 partials [splits][M][N] into fp16 C (leading dimension ldc). A block is
// lanes x chunks threads (reduce_block sizes it; chunks = ceil(splits / kReduceChunk)): lane x walks
// the lanes of 4V columns (V float4 per split), chunk y sums splits y*8 .. y*8+7 in order with all of
// their loads in flight together, and chunk 0's thread adds the other chunks' sums in chunk order
// through shared memory. The order is fixed, so the result is deterministic. (Until session 11 one
// thread looped over every split, about four loads in flight: a one-tile matrix split 16 ways had
// its reduction on 4 blocks, each thread 16 dependent rounds of L2 latency.)
template <int V>
__global__ void __launch_bounds__(256)
    splitk_reduce_chunked_kernel(const float* __restrict__ partials, half* __restrict__ C, int M, int N,
                                 int ldc, int splits) {
  pdl_reduce_wait_then_release();  // the split-K kernel's partials are complete and visible
  __shared__ float4 chunk_sums[256][V];
  const int chunks = (splits + kReduceChunk - 1) / kReduceChunk;
  const int lanes = blockDim.x / chunks;
  const int x = threadIdx.x % lanes, y = threadIdx.x / lanes;
  const size_t count = (size_t)M * N / (4 * V);
  const size_t stride = (size_t)M * N;
  const int z0 = y * kReduceChunk;
  const int zn = min(splits, z0 + kReduceChunk);
  for (size_t base = (size_t)blockIdx.x * lanes; base < count; base += (size_t)gridDim.x * lanes) {
    const size_t q = base + x;
    float4 s[V];
#pragma unroll
    for (int v = 0; v < V; ++v) s[v] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (q < count) {
      float4 a[kReduceChunk][V];
#pragma unroll
      for (int u = 0; u < kReduceChunk; ++u) {  // unconditional (clamped) loads: no branch between them
        const float4* p = reinterpret_cast<const float4*>(partials + (size_t)min(z0 + u, zn - 1) * stride) + V * q;
#pragma unroll
        for (int v = 0; v < V; ++v) a[u][v] = p[v];
      }
#pragma unroll
      for (int v = 0; v < V; ++v) s[v] = a[0][v];  // every chunk has at least one split
#pragma unroll
      for (int u = 1; u < kReduceChunk; ++u)
        if (z0 + u < zn)
#pragma unroll
          for (int v = 0; v < V; ++v) add4(s[v], a[u][v]);
    }
    if (chunks > 1) {  // uniform over the block: every thread reaches both barriers
#pragma unroll
      for (int v = 0; v < V; ++v) chunk_sums[threadIdx.x][v] = s[v];
      __syncthreads();
      if (y == 0)
        for (int g = 1; g < chunks; ++g)
#pragma unroll
          for (int v = 0; v < V; ++v) add4(s[v], chunk_sums[g * lanes + x][v]);
      __syncthreads();  // chunk_sums is written again in the next pass
    }
    if (y == 0 && q < count) store_lane<V>(C, N, ldc, q, s);
  }
}

// Sums S fp32 partials (S = splits, 2..8, a template argument) into fp16 C, U lanes of 4V columns a
// thread: every load of the thread's U lanes is issued before the first add, then each lane sums in
// split order 0, 1, ... (the chunked kernel's one-chunk order, so the two agree bitwise for S <= 8).
// Session 13: the chunked kernel issues 8 loads a lane whatever the split count (clamped repeats of the
// last split) and gives a thread one lane; at 2-4 splits that is 2-4x the loads and little in flight
// per thread. `splits` is unused (the launcher's argument list is shared with the chunked kernel).
template <int S, int V, int U>
__global__ void __launch_bounds__(256)
    splitk_reduce_fixed_kernel(const float* __restrict__ partials, half* __restrict__ C, int M, int N,
                               int ldc, int splits) {
  pdl_reduce_wait_then_release();  // the split-K kernel's partials are complete and visible
  const size_t count = (size_t)M * N / (4 * V);
  const size_t stride = (size_t)M * N / 4;  // one split's partial, in float4
  const size_t threads = (size_t)gridDim.x * blockDim.x;
  const float4* p = reinterpret_cast<const float4*>(partials);
  for (size_t q0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x; q0 < count; q0 += threads * U) {
    float4 a[U][S][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const size_t q = q0 + u * threads;
      if (q < count)
#pragma unroll
        for (int z = 0; z < S; ++z)
#pragma unroll
          for (int v = 0; v < V; ++v) a[u][z][v] = p[z * stride + V * q + v];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const size_t q = q0 + u * threads;
      if (q < count) {
        float4 sum[V];
#pragma unroll
        for (int v = 0; v < V; ++v) {
          sum[v] = a[u][0][v];
#pragma unroll
          for (int z = 1; z < S; ++z) add4(sum[v], a[u][z][v]);
        }
        store_lane<V>(C, N, ldc, q, sum);
      }
    }
  }
}

// The fixed-split reduce for `splits` (2..8) and U lanes a thread (1, 2 or 4); null otherwise, and null
// where splits x U > 16 (not instantiated: 8 splits x 4 lanes spilled; see reduce_fixed_lanes).
template <int S, int V, int U>
inline const void* reduce_fixed_fn() {
  if constexpr (S * U <= 16) return reinterpret_cast<const void*>(splitk_reduce_fixed_kernel<S, V, U>);
  return nullptr;
}
template <int V, int U>
inline const void* reduce_fixed_for(int splits) {
  switch (splits) {
    case 2: return reduce_fixed_fn<2, V, U>();
    case 3: return reduce_fixed_fn<3, V, U>();
    case 4: return reduce_fixed_fn<4, V, U>();
    case 5: return reduce_fixed_fn<5, V, U>();
    case 6: return reduce_fixed_fn<6, V, U>();
    case 7: return reduce_fixed_fn<7, V, U>();
    case 8: return reduce_fixed_fn<8, V, U>();
    default: return nullptr;
  }
}
// Lanes a thread for `splits`: at most the asked 1, 2 or 4, and splits x lanes <= 16 (V = 2: 32 float4
// held at once; 8 splits x 4 lanes spilled).
inline int reduce_fixed_lanes(int splits, int lanes) {
  while (lanes > 1 && splits * lanes > 16) lanes /= 2;
  return lanes;
}
template <int V>
inline const void* reduce_fixed_kernel(int splits, int lanes_per_thread) {
  switch (lanes_per_thread) {
    case 1: return reduce_fixed_for<V, 1>(splits);
    case 2: return reduce_fixed_for<V, 2>(splits);
    case 4: return reduce_fixed_for<V, 4>(splits);
    default: return nullptr;
  }
}

// Threads per block of the chunked reduce for `splits`: chunks x lanes, lanes a multiple of 32, at
// most 256 threads while splits <= 8 x kReduceChunk (the launchers run the serial kernel above that).
inline int reduce_block(int splits, int* lanes_out) {
  const int chunks = (splits + kReduceChunk - 1) / kReduceChunk;
  int lanes = 256 / chunks / 32 * 32;
  if (lanes < 32) lanes = 32;
  *lanes_out = lanes;
  return lanes * chunks;
}
