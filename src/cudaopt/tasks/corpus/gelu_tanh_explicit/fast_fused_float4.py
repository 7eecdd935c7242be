# cudaopt-corpus: kind=fast device=cuda note=one fused pass, float4 loads and stores with a scalar tail, grid-stride over SMs x 8 blocks
"""Fused tanh-GELU: reads x once, writes y once (eager PyTorch runs eight kernels)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor gelu_tanh_forward(torch::Tensor x);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>
#include <cstdint>

__device__ __forceinline__ float gelu_tanh(float x) {
    const float k0 = 0.7978845608028654f;  // sqrt(2/pi)
    const float k1 = 0.044715f;
    float inner = k0 * (x + k1 * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
}

__global__ void gelu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        v.x = gelu_tanh(v.x);
        v.y = gelu_tanh(v.y);
        v.z = gelu_tanh(v.z);
        v.w = gelu_tanh(v.w);
        y[i] = v;
    }
}

__global__ void gelu_scalar_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t start, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = start + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = gelu_tanh(x[i]);
    }
}

torch::Tensor gelu_tanh_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
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
        gelu_vec4_kernel<<<(unsigned)blocks, threads, 0, stream>>>(
            reinterpret_cast<const float4*>(xp), reinterpret_cast<float4*>(yp), n4);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    const int64_t start = n4 * 4;
    if (start < n) {
        const int64_t blocks = std::min((n - start + threads - 1) / threads, max_blocks);
        gelu_scalar_kernel<<<(unsigned)blocks, threads, 0, stream>>>(xp, yp, start, n);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return y;
}
"""

_ext = load_inline(
    name="co_gelu_tanh_explicit_fast_fused_float4",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["gelu_tanh_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.gelu_tanh_forward(x)
