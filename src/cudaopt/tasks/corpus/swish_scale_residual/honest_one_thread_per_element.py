# cudaopt-corpus: kind=honest device=cuda note=one thread per element, scalar loads, sigmoid/scale/residual fused in one kernel
"""Simple fused swish * scale + x: one thread per element."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor swish_scale_residual_forward(torch::Tensor x, double scale);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void swish_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, float scale) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float sig = 1.0f / (1.0f + expf(-v));
        y[i] = v * sig * scale + v;
    }
}

torch::Tensor swish_scale_residual_forward(torch::Tensor x, double scale) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    swish_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n, (float)scale);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_swish_scale_residual_honest_one_thread_per_element",
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
