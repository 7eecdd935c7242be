# cudaopt-corpus: kind=honest device=cuda note=one thread per element, scalar loads, the four steps fused in one kernel
"""Simple fused scale, bias, erf-GELU and clamp: one thread per element."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor scale_bias_gelu_clamp_forward(torch::Tensor x, torch::Tensor bias, double scale, double lo, double hi);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void sbgc_kernel(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y, int64_t n, int64_t cols, float scale, float lo, float hi) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int64_t c = i % cols;
    float v = x[i] * scale + bias[c];
    float g = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    y[i] = fminf(fmaxf(g, lo), hi);
}

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
                what, " must be a contiguous float32 CUDA tensor");
}

torch::Tensor scale_bias_gelu_clamp_forward(torch::Tensor x, torch::Tensor bias, double scale, double lo, double hi) {
    check_input(x, "x");
    check_input(bias, "bias");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) == bias.numel(), "the last dimension of x must equal the length of bias");
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    const int64_t cols = bias.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    sbgc_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), n, cols, (float)scale, (float)lo, (float)hi);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_scale_bias_gelu_clamp_honest_one_thread_per_element",
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
