# cudaopt-corpus: kind=honest device=cuda note=one block per row, scalar loads, two passes (max, then sum of exp)
"""Simple fused log-softmax + NLL: one block per row, two passes."""
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

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// blockDim.x a multiple of 32; the result is returned to every thread.
__device__ float block_sum(float v, float* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? red[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) red[0] = v;
    }
    __syncthreads();
    return red[0];
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ float block_max(float v, float* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? red[lane] : -INFINITY;
        v = warp_max(v);
        if (lane == 0) red[0] = v;
    }
    __syncthreads();
    return red[0];
}

// One block per row, scalar loads, two passes (max, then sum of exp(x - max)).
__global__ void log_softmax_nll_kernel(const float* __restrict__ logits, const int64_t* __restrict__ targets,
                                       float* __restrict__ out, int64_t cols) {
    __shared__ float red[32];
    const int64_t row = blockIdx.x;
    const float* xr = logits + row * cols;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, xr[i]);
    m = block_max(m, red);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) s += expf(xr[i] - m);
    s = block_sum(s, red);
    if (threadIdx.x == 0) {
        const int64_t t = targets[row];
        out[row] = (t >= 0 && t < cols) ? (m + logf(s)) - xr[t] : NAN;
    }
}

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
                what, " must be a contiguous float32 CUDA tensor");
}

static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

torch::Tensor log_softmax_nll_forward(torch::Tensor logits, torch::Tensor targets) {
    check_input(logits, "logits");
    TORCH_CHECK(targets.is_cuda() && targets.scalar_type() == torch::kInt64 && targets.is_contiguous(),
                "targets must be a contiguous int64 CUDA tensor");
    TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
                "logits must be (batch, classes) and targets (batch,)");
    const int64_t rows = logits.size(0), cols = logits.size(1);
    auto out = torch::empty({rows}, logits.options());
    if (rows == 0) return out;
    TORCH_CHECK(rows <= 2147483647LL, "too many rows for one grid");
    log_softmax_nll_kernel<<<(unsigned)rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        logits.data_ptr<float>(), targets.data_ptr<int64_t>(), out.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

"""

_ext = load_inline(
    name="co_log_softmax_nll_honest_two_pass",
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
