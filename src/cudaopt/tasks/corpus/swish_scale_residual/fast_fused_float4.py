# cudaopt-corpus: kind=fast device=cuda note=one fused pass, float4 loads and stores with a scalar tail, grid-stride over SMs x 8 blocks
"""Fused swish * scale + x: reads x once, writes y once (eager PyTorch runs four kernels)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor swish_scale_residual_forward(torch::Tensor x, double scale_d);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>
#include <cstdint>

__device__ __forceinline__ float swish_scale_residual(float x, float scale) {
    // expf without fast-math keeps the result within a few ulp of torch.sigmoid.
    float s = x / (1.0f + expf(-x));
    return s * scale + x;
}

__global__ void swish_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4, float scale) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        v.x = swish_scale_residual(v.x, scale);
        v.y = swish_scale_residual(v.y, scale);
        v.z = swish_scale_residual(v.z, scale);
        v.w = swish_scale_residual(v.w, scale);
        y[i] = v;
    }
}

__global__ void swish_scalar_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t start, int64_t n, float scale) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = start + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = swish_scale_residual(x[i], scale);
    }
}

torch::Tensor swish_scale_residual_forward(torch::Tensor x, double scale_d) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    const float scale = (float)scale_d;
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    if (n == 0) return y;
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const int threads = 256;
    const int64_t max_blocks = (int64_t)at::cuda::getCurrentDeviceProperties()->multiProcessorCount * 8;
    // float4 needs 16-byte aligned pointers; a view with an odd offset takes the scalar path.
    const bool aligned = (reinterpret_cast<uintptr_t>(xp) % 16 == 0) && (reinterpret_cast<uintptr_t>(yp) % 16 == 0);
    const int64_t n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        const int64_t blocks = std::min((n4 + threads - 1) / threads, max_blocks);
        swish_vec4_kernel<<<(unsigned)blocks, threads, 0, stream>>>(
            reinterpret_cast<const float4*>(xp), reinterpret_cast<float4*>(yp), n4, scale);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    const int64_t start = n4 * 4;
    if (start < n) {
        const int64_t blocks = std::min((n - start + threads - 1) / threads, max_blocks);
        swish_scalar_kernel<<<(unsigned)blocks, threads, 0, stream>>>(xp, yp, start, n, scale);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return y;
}
"""

_ext = load_inline(
    name="co_swish_scale_residual_fast_fused_float4",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["swish_scale_residual_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, scaling_factor: float):
        super().__init__()
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.swish_scale_residual_forward(x, self.scaling_factor)
