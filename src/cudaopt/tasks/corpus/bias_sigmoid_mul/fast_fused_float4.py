# cudaopt-corpus: kind=fast device=cuda note=one fused pass over both inputs; float4 loads of x, values and the bias row (row length a multiple of 4), scalar path otherwise
"""Fused sigmoid(x + bias) * values: reads each input once, writes once."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor bias_sigmoid_mul_forward(torch::Tensor x, torch::Tensor values, torch::Tensor bias);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>
#include <cstdint>

__device__ __forceinline__ float apply(float a, float b, float p) {
    // a = x, b = values, p = bias; expf without fast-math stays within a few ulp of torch.sigmoid.
    return b / (1.0f + expf(-(a + p)));
}

// On this path the row length is a multiple of 4, so one float4 never straddles two rows.
__global__ void bsm_vec4_kernel(const float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ vec,
                                  float4* __restrict__ y, int64_t n4, int64_t cols4) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 va = a[i];
        float4 vb = b[i];
        float4 p = __ldg(&vec[i % cols4]);
        float4 r;
        r.x = apply(va.x, vb.x, p.x);
        r.y = apply(va.y, vb.y, p.y);
        r.z = apply(va.z, vb.z, p.z);
        r.w = apply(va.w, vb.w, p.w);
        y[i] = r;
    }
}

__global__ void bsm_scalar_kernel(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ vec,
                                    float* __restrict__ y, int64_t n, int64_t cols) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = apply(a[i], b[i], vec[i % cols]);
    }
}

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
                what, " must be a contiguous float32 CUDA tensor");
}

torch::Tensor bias_sigmoid_mul_forward(torch::Tensor x, torch::Tensor values, torch::Tensor bias) {
    check_input(x, "x");
    check_input(values, "values");
    check_input(bias, "bias");
    TORCH_CHECK(values.sizes() == x.sizes(), "values must have the shape of x");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) == bias.numel(), "the last dimension of x must equal the length of bias");
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    const int64_t cols = bias.numel();
    if (n == 0) return y;
    const float* ap = x.data_ptr<float>();
    const float* bp = values.data_ptr<float>();
    const float* vp = bias.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const int threads = 256;
    const int64_t max_blocks = (int64_t)at::cuda::getCurrentDeviceProperties()->multiProcessorCount * 8;
    const bool aligned = ((reinterpret_cast<uintptr_t>(ap) | reinterpret_cast<uintptr_t>(bp) |
                           reinterpret_cast<uintptr_t>(vp) | reinterpret_cast<uintptr_t>(yp)) % 16) == 0;
    if (aligned && cols % 4 == 0) {
        const int64_t n4 = n / 4;
        const int64_t blocks = std::min((n4 + threads - 1) / threads, max_blocks);
        bsm_vec4_kernel<<<(unsigned)blocks, threads, 0, stream>>>(
            reinterpret_cast<const float4*>(ap), reinterpret_cast<const float4*>(bp), reinterpret_cast<const float4*>(vp),
            reinterpret_cast<float4*>(yp), n4, cols / 4);
    } else {
        const int64_t blocks = std::min((n + threads - 1) / threads, max_blocks);
        bsm_scalar_kernel<<<(unsigned)blocks, threads, 0, stream>>>(ap, bp, vp, yp, n, cols);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_bias_sigmoid_mul_fast_fused_float4",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["bias_sigmoid_mul_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        return _ext.bias_sigmoid_mul_forward(x, values, self.bias)
