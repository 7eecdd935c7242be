# cudaopt-corpus: kind=honest device=cuda note=one thread per element, scalar loads, add/relu/scale fused in one kernel
"""Simple fused residual add, ReLU and per-feature scale: one thread per element."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor residual_add_relu_scale_forward(torch::Tensor x, torch::Tensor residual, torch::Tensor scale);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void rars_kernel(const float* __restrict__ x, const float* __restrict__ residual, const float* __restrict__ scale, float* __restrict__ y, int64_t n, int64_t cols) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int64_t c = i % cols;
    float v = x[i] + residual[i];
    y[i] = fmaxf(v, 0.0f) * scale[c];
}

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
                what, " must be a contiguous float32 CUDA tensor");
}

torch::Tensor residual_add_relu_scale_forward(torch::Tensor x, torch::Tensor residual, torch::Tensor scale) {
    check_input(x, "x");
    check_input(residual, "residual");
    check_input(scale, "scale");
    TORCH_CHECK(residual.sizes() == x.sizes(), "residual must have the shape of x");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) == scale.numel(), "the last dimension of x must equal the length of scale");
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    const int64_t cols = scale.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    rars_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), residual.data_ptr<float>(), scale.data_ptr<float>(), y.data_ptr<float>(), n, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_residual_add_relu_scale_honest_one_thread_per_element",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["residual_add_relu_scale_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(1.0 + 0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return _ext.residual_add_relu_scale_forward(x, residual, self.scale)
