# cudaopt-corpus: kind=wrong device=cuda note=the tanh argument drops the 0.044715*x^3 term (a missing step), off by up to ~0.02
"""Deliberately wrong tanh-GELU: the cubic term inside tanh is missing."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor gelu_tanh_forward(torch::Tensor x);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void gelu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float inner = 0.7978845608028654f * v;
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}

torch::Tensor gelu_tanh_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    gelu_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_gelu_tanh_explicit_wrong_missing_cubic",
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
