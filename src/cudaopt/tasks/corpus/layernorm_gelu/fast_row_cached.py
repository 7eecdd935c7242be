# cudaopt-corpus: kind=fast device=cuda note=one block per row cached in shared memory, two-pass mean/variance by warp shuffles, affine + erf-GELU fused into the write
"""Fused LayerNorm + GELU: reads x once, writes once."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor layernorm_gelu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps_d);"

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

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); }

#define OUT(v, c) gelu_erf(((v) - mean) * rstd * weight[(c)] + bias[(c)])

// One block per row. Pass 1 reads the row from global memory once (float4 when `vec`) and, when kCache,
// keeps it in shared memory; the later passes read that copy, so x is read from DRAM once.
template <bool kCache>
__global__ void layernorm_gelu_kernel(const float* __restrict__ x, const float* __restrict__ weight, const float* __restrict__ bias, float* __restrict__ y, int64_t cols, bool vec, float eps) {
    extern __shared__ float4 cache4[];
    float* cache = reinterpret_cast<float*>(cache4);
    __shared__ float red[32];
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    const int64_t cols4 = vec ? cols / 4 : 0;
    const float4* src4 = kCache ? cache4 : reinterpret_cast<const float4*>(xr);
    const float* src = kCache ? cache : xr;

    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < cols4; i += blockDim.x) {
        float4 v = reinterpret_cast<const float4*>(xr)[i];
        if (kCache) cache4[i] = v;
        sum += v.x;
        sum += v.y;
        sum += v.z;
        sum += v.w;
    }
    for (int64_t i = cols4 * 4 + threadIdx.x; i < cols; i += blockDim.x) {
        float v = xr[i];
        if (kCache) cache[i] = v;
        sum += v;
    }
    const float mean = block_sum(sum, red) / (float)cols;
    float sq = 0.0f, d;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
        d = src[i] - mean; sq += d * d;
    }
    const float rstd = rsqrtf(block_sum(sq, red) / (float)cols + eps);
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

torch::Tensor layernorm_gelu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps_d) {
    check_input(x, "x");
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");
    check_input(weight, "weight");
    check_input(bias, "bias");
    TORCH_CHECK(weight.numel() == x.size(-1) && bias.numel() == x.size(-1), "weight and bias lengths must equal the last dimension of x");
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
            C10_CUDA_CHECK(cudaFuncSetAttribute(layernorm_gelu_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)cache_bytes));
        }
        layernorm_gelu_kernel<true><<<(unsigned)rows, threads, (size_t)cache_bytes, stream>>>(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), cols, vec, (float)eps_d);
    } else {
        layernorm_gelu_kernel<false><<<(unsigned)rows, threads, 0, stream>>>(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), cols, vec, (float)eps_d);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_layernorm_gelu_fast_row_cached",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["layernorm_gelu_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        # The same parameter creation and perturbation as the reference, so the seeded values match.
        with torch.no_grad():
            self.norm.weight.add_(0.5 * torch.randn(dim))
            self.norm.bias.add_(0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.layernorm_gelu_forward(x, self.norm.weight, self.norm.bias, self.norm.eps)
