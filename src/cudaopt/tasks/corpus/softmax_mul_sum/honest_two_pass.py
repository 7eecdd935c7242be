# cudaopt-corpus: kind=honest device=cuda note=one block per row, scalar loads, two passes (max, then both sums)
"""Simple fused softmax * values summed per row: one block per row, two passes."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor softmax_mul_sum_forward(torch::Tensor x, torch::Tensor values);"

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

// One block per row, scalar loads, two passes: the row max, then the sums of exp(x - max) and exp(x - max) * v.
__global__ void softmax_mul_sum_kernel(const float* __restrict__ x, const float* __restrict__ v, float* __restrict__ out,
                                       int64_t cols) {
    __shared__ float red[32];
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    const float* vr = v + row * cols;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, xr[i]);
    m = block_max(m, red);
    float s = 0.0f, w = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
        float e = expf(xr[i] - m);
        s += e;
        w += e * vr[i];
    }
    s = block_sum(s, red);
    w = block_sum(w, red);
    if (threadIdx.x == 0) out[row] = w / s;
}

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
                what, " must be a contiguous float32 CUDA tensor");
}

static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

torch::Tensor softmax_mul_sum_forward(torch::Tensor x, torch::Tensor values) {
    check_input(x, "x");
    check_input(values, "values");
    TORCH_CHECK(x.dim() >= 1 && values.sizes() == x.sizes(), "x and values must have one shape");
    auto out_sizes = x.sizes().vec();
    out_sizes.pop_back();
    auto out = torch::empty(out_sizes, x.options());
    const int64_t cols = x.size(-1);
    if (out.numel() == 0) return out;
    const int64_t rows = out.numel();
    TORCH_CHECK(rows <= 2147483647LL, "too many rows for one grid");
    softmax_mul_sum_kernel<<<(unsigned)rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), values.data_ptr<float>(), out.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

"""

_ext = load_inline(
    name="co_softmax_mul_sum_honest_two_pass",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["softmax_mul_sum_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_mul_sum_forward(x, values)
