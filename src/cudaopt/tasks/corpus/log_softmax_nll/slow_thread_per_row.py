# cudaopt-corpus: kind=slow device=cuda note=one thread per row, three sequential passes over uncoalesced memory
"""Correct but slow log-softmax + NLL: one thread a row."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor log_softmax_nll_forward(torch::Tensor logits, torch::Tensor targets);"

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

// One thread per row, three sequential passes: neighbouring threads read a whole row apart (no coalescing).
__global__ void log_softmax_nll_kernel(const float* __restrict__ logits, const int64_t* __restrict__ targets,
                                       float* __restrict__ out, int64_t rows, int64_t cols) {
    int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = logits + row * cols;
    float m = -INFINITY;
    for (int64_t i = 0; i < cols; ++i) m = fmaxf(m, xr[i]);
    float s = 0.0f;
    for (int64_t i = 0; i < cols; ++i) s += expf(xr[i] - m);
    const int64_t t = targets[row];
    out[row] = (t >= 0 && t < cols) ? (m + logf(s)) - xr[t] : NAN;
}

torch::Tensor log_softmax_nll_forward(torch::Tensor logits, torch::Tensor targets) {
    check_input(logits, "logits");
    TORCH_CHECK(targets.is_cuda() && targets.scalar_type() == torch::kInt64 && targets.is_contiguous(),
                "targets must be a contiguous int64 CUDA tensor");
    TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
                "logits must be (batch, classes) and targets (batch,)");
    const int64_t rows = logits.size(0), cols = logits.size(1);
    auto out = torch::empty({rows}, logits.options());
    if (rows == 0) return out;
    const int threads = 64;
    log_softmax_nll_kernel<<<(unsigned)((rows + threads - 1) / threads), threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        logits.data_ptr<float>(), targets.data_ptr<int64_t>(), out.data_ptr<float>(), rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

"""

_ext = load_inline(
    name="co_log_softmax_nll_slow_thread_per_row",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["log_softmax_nll_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return _ext.log_softmax_nll_forward(logits, targets)
