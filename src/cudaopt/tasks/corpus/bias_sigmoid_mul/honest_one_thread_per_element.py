# cudaopt-corpus: kind=honest device=cuda note=one thread per element, scalar loads, bias/sigmoid/multiply fused in one kernel
"""Simple fused sigmoid(x + bias) * values: one thread per element."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor bias_sigmoid_mul_forward(torch::Tensor x, torch::Tensor values, torch::Tensor bias);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void bsm_kernel(const float* __restrict__ x, const float* __restrict__ values, const float* __restrict__ bias, float* __restrict__ y, int64_t n, int64_t cols) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int64_t c = i % cols;
    float gate = 1.0f / (1.0f + expf(-(x[i] + bias[c])));
    y[i] = gate * values[i];
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
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    bsm_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), values.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), n, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_bias_sigmoid_mul_honest_one_thread_per_element",
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
