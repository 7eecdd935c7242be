# cudaopt-corpus: kind=slow device=cuda note=one thread per row walking both rows sequentially (uncoalesced loads, 64 threads a block)
"""Correct but slow per-row MSE: one thread a row."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor mse_rows_forward(torch::Tensor predictions, torch::Tensor targets);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cmath>
#include <cstdint>

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
                what, " must be a contiguous float32 CUDA tensor");
}

static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// One thread per row: neighbouring threads read addresses a whole row apart, so no load is coalesced.
__global__ void mse_rows_kernel(const float* __restrict__ p, const float* __restrict__ t, float* __restrict__ out,
                                int64_t rows, int64_t cols) {
    int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float acc = 0.0f;
    for (int64_t i = 0; i < cols; ++i) {
        float d = p[row * cols + i] - t[row * cols + i];
        acc += d * d;
    }
    out[row] = acc / (float)cols;
}

torch::Tensor mse_rows_forward(torch::Tensor predictions, torch::Tensor targets) {
    check_input(predictions, "predictions");
    check_input(targets, "targets");
    TORCH_CHECK(predictions.dim() == 2 && targets.sizes() == predictions.sizes(),
                "predictions and targets must be 2-D tensors of one shape");
    const int64_t rows = predictions.size(0), cols = predictions.size(1);
    auto out = torch::empty({rows}, predictions.options());
    if (rows == 0) return out;
    const int threads = 64;
    mse_rows_kernel<<<(unsigned)((rows + threads - 1) / threads), threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        predictions.data_ptr<float>(), targets.data_ptr<float>(), out.data_ptr<float>(), rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

"""

_ext = load_inline(
    name="co_mse_loss_slow_thread_per_row",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["mse_rows_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return _ext.mse_rows_forward(predictions, targets)
