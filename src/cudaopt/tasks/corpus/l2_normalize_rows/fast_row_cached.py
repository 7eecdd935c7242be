# cudaopt-corpus: kind=fast device=cuda note=one block per row, one float4 read into shared memory, warp-shuffle sum of squares, float4 writes
"""Fused row L2 normalisation: reads x once, writes once."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor l2_normalize_forward(torch::Tensor x, double eps_d);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cmath>
#include <cstdint>

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Block-wide reductions for blockDim.x a multiple of 32. The leading __syncthreads lets one `red`
// buffer serve several reductions in a row; the trailing one publishes the result to every thread.
__device__ float block_sum(float v, float* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? red[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) red[0] = v;
    }
    __syncthreads();
    return red[0];
}

__device__ float block_max(float v, float* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? red[lane] : -INFINITY;
        v = warp_max(v);
        if (lane == 0) red[0] = v;
    }
    __syncthreads();
    return red[0];
}

#define OUT(v, c) ((v) / norm)

// One block per row. Pass 1 reads the row from global memory once (float4 when `vec`) and, when kCache,
// keeps it in shared memory; the later passes read that copy, so x is read from DRAM once.
template <bool kCache>
__global__ void l2_normalize_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols, bool vec, float eps) {
    extern __shared__ float4 cache4[];
    float* cache = reinterpret_cast<float*>(cache4);
    __shared__ float red[32];
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    const int64_t cols4 = vec ? cols / 4 : 0;
    const float4* src4 = kCache ? cache4 : reinterpret_cast<const float4*>(xr);
    const float* src = kCache ? cache : xr;

    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < cols4; i += blockDim.x) {
        float4 v = reinterpret_cast<const float4*>(xr)[i];
        if (kCache) cache4[i] = v;
        ss += v.x * v.x;
        ss += v.y * v.y;
        ss += v.z * v.z;
        ss += v.w * v.w;
    }
    for (int64_t i = cols4 * 4 + threadIdx.x; i < cols; i += blockDim.x) {
        float v = xr[i];
        if (kCache) cache[i] = v;
        ss += v * v;
    }
    ss = block_sum(ss, red);
    const float norm = fmaxf(sqrtf(ss), eps);

    for (int64_t i = threadIdx.x; i < cols4; i += blockDim.x) {
        float4 v = src4[i];
        const int64_t c = i * 4;
        float4 res;
        res.x = OUT(v.x, c + 0);
        res.y = OUT(v.y, c + 1);
        res.z = OUT(v.z, c + 2);
        res.w = OUT(v.w, c + 3);
        reinterpret_cast<float4*>(yr)[i] = res;
    }
    for (int64_t i = cols4 * 4 + threadIdx.x; i < cols; i += blockDim.x) {
        yr[i] = OUT(src[i], i);
    }
}

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
                what, " must be a contiguous float32 CUDA tensor");
}

static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

torch::Tensor l2_normalize_forward(torch::Tensor x, double eps_d) {
    check_input(x, "x");
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");

    auto y = torch::empty_like(x);
    const int64_t cols = x.size(-1);
    if (x.numel() == 0) return y;
    const int64_t rows = x.numel() / cols;
    TORCH_CHECK(rows <= 2147483647LL, "too many rows for one grid");
    const bool vec = cols % 4 == 0 && aligned16(x.data_ptr<float>()) && aligned16(y.data_ptr<float>());
    const int threads = cols >= 2048 ? 512 : 256;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    // Cache the row in shared memory up to 96 KB (two blocks per SM still fit); longer rows are re-read
    // from global memory, where they mostly hit L2.
    const int64_t cache_bytes = cols * (int64_t)sizeof(float);
    if (cache_bytes <= 96 * 1024) {
        if (cache_bytes > 48 * 1024) {
            C10_CUDA_CHECK(cudaFuncSetAttribute(l2_normalize_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)cache_bytes));
        }
        l2_normalize_kernel<true><<<(unsigned)rows, threads, (size_t)cache_bytes, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols, vec, (float)eps_d);
    } else {
        l2_normalize_kernel<false><<<(unsigned)rows, threads, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols, vec, (float)eps_d);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_l2_normalize_rows_fast_row_cached",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["l2_normalize_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-12):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.l2_normalize_forward(x, self.eps)
