# cudaopt-corpus: kind=honest device=cuda note=one block per row, scalar loads, three passes over global memory (mean, variance, write)
"""Simple fused LayerNorm + GELU: one block per row."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor layernorm_gelu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps_d);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cmath>

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Block-wide reductions for blockDim.x a multiple of 32. The leading __syncthreads lets one `red`
// buffer serve several reductions in a row; the trailing one publishes the result to every thread.
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

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); }

#define OUT(v, c) gelu_erf(((v) - mean) * rstd * weight[(c)] + bias[(c)])

// One block per row, scalar loads; every pass reads the row from global memory again.
__global__ void layernorm_gelu_kernel(const float* __restrict__ x, const float* __restrict__ weight, const float* __restrict__ bias, float* __restrict__ y, int64_t cols, float eps) {
    __shared__ float red[32];
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    const float* src = xr;
    float* yr = y + row * cols;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
        float v = xr[i];
        sum += v;
    }
    const float mean = block_sum(sum, red) / (float)cols;
    float sq = 0.0f, d;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
        d = src[i] - mean; sq += d * d;
    }
    const float rstd = rsqrtf(block_sum(sq, red) / (float)cols + eps);
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
        yr[i] = OUT(xr[i], i);
    }
}

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
                what, " must be a contiguous float32 CUDA tensor");
}

torch::Tensor layernorm_gelu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps_d) {
    check_input(x, "x");
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");
    check_input(weight, "weight");
    check_input(bias, "bias");
    TORCH_CHECK(weight.numel() == x.size(-1) && bias.numel() == x.size(-1), "weight and bias lengths must equal the last dimension of x");
    auto y = torch::empty_like(x);
    const int64_t cols = x.size(-1);
    if (x.numel() == 0) return y;
    const int64_t rows = x.numel() / cols;
    TORCH_CHECK(rows <= 2147483647LL, "too many rows for one grid");
    layernorm_gelu_kernel<<<(unsigned)rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), cols, (float)eps_d);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_layernorm_gelu_honest_block_per_row",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["layernorm_gelu_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        # The same parameter creation and perturbation as the reference, so the seeded values match.
        with torch.no_grad():
            self.norm.weight.add_(0.5 * torch.randn(dim))
            self.norm.bias.add_(0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.layernorm_gelu_forward(x, self.norm.weight, self.norm.bias, self.norm.eps)
