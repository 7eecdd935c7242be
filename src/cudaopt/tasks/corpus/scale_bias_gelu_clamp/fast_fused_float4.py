# cudaopt-corpus: kind=fast device=cuda note=one fused pass; float4 loads of x and the bias row when the row length is a multiple of 4, scalar path otherwise
"""Fused scale, per-feature bias, erf-GELU and clamp: reads x once, writes y once."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor scale_bias_gelu_clamp_forward(torch::Tensor x, torch::Tensor bias, double scale, double lo, double hi);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>
#include <cstdint>

struct Params { float scale, lo, hi; };

__device__ __forceinline__ float apply(float x, float b, Params p) {
    float v = x * p.scale + b;
    float g = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));  // exact GELU, as F.gelu
    return fminf(fmaxf(g, p.lo), p.hi);
}

// One float4 of x never straddles two rows because the row length is a multiple of 4 on this path.
__global__ void sbgc_vec4_kernel(const float4* __restrict__ x, const float4* __restrict__ bias, float4* __restrict__ y,
                                 int64_t n4, int64_t cols4, Params p) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        float4 b = __ldg(&bias[i % cols4]);
        v.x = apply(v.x, b.x, p);
        v.y = apply(v.y, b.y, p);
        v.z = apply(v.z, b.z, p);
        v.w = apply(v.w, b.w, p);
        y[i] = v;
    }
}

__global__ void sbgc_scalar_kernel(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y,
                                   int64_t n, int64_t cols, Params p) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = apply(x[i], bias[i % cols], p);
    }
}

torch::Tensor scale_bias_gelu_clamp_forward(torch::Tensor x, torch::Tensor bias, double scale, double lo, double hi) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    TORCH_CHECK(bias.is_cuda() && bias.scalar_type() == torch::kFloat32 && bias.is_contiguous(),
                "bias must be a contiguous float32 CUDA tensor");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) == bias.numel(), "the last dimension of x must equal the bias length");
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    const int64_t cols = bias.numel();
    if (n == 0) return y;
    Params p{(float)scale, (float)lo, (float)hi};
    const float* xp = x.data_ptr<float>();
    const float* bp = bias.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const int threads = 256;
    const int64_t max_blocks = (int64_t)at::cuda::getCurrentDeviceProperties()->multiProcessorCount * 8;
    const bool aligned = ((reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(bp) |
                           reinterpret_cast<uintptr_t>(yp)) % 16) == 0;
    if (aligned && cols % 4 == 0) {
        const int64_t n4 = n / 4;
        const int64_t blocks = std::min((n4 + threads - 1) / threads, max_blocks);
        sbgc_vec4_kernel<<<(unsigned)blocks, threads, 0, stream>>>(
            reinterpret_cast<const float4*>(xp), reinterpret_cast<const float4*>(bp), reinterpret_cast<float4*>(yp),
            n4, cols / 4, p);
    } else {
        const int64_t blocks = std::min((n + threads - 1) / threads, max_blocks);
        sbgc_scalar_kernel<<<(unsigned)blocks, threads, 0, stream>>>(xp, bp, yp, n, cols, p);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_scale_bias_gelu_clamp_fast_fused_float4",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["scale_bias_gelu_clamp_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int, scale: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max
        self.bias = nn.Parameter(0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.scale_bias_gelu_clamp_forward(x, self.bias, self.scale, self.clamp_min, self.clamp_max)
