# cudaopt-corpus: kind=slow device=cuda note=one thread per row walking its row, so neighbouring threads touch addresses a row apart (no coalescing)
"""Correct but slow hard-swish: one thread walks a whole row."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor hardswish_forward(torch::Tensor x);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void hardswish_row_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
        float v = xr[c];
        yr[c] = v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    }
}

torch::Tensor hardswish_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    auto y = torch::empty_like(x);
    if (x.numel() == 0) return y;
    const int64_t cols = x.dim() > 0 ? x.size(-1) : 1;
    const int64_t rows = x.numel() / cols;
    const int threads = 128;
    const int64_t blocks = (rows + threads - 1) / threads;
    hardswish_row_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_hardswish_explicit_slow_thread_per_row",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["hardswish_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.hardswish_forward(x)
