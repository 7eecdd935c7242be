# cudaopt-corpus: kind=fast device=cuda note=(outer, reduce, inner) view; 32x8 blocks, each thread sums float4 columns over a strided slice of the reduced axis, shared-memory combine; warp-per-row path when inner == 1
"""Sum over one dimension: coalesced float4 column sums (or warp-per-row sums when the last dim is reduced)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>
#include <cstdint>

constexpr int TX = 32;  // threads along the kept inner axis (one warp: coalesced)
constexpr int TY = 8;   // threads splitting the reduced axis

// Block = TX x TY threads covering TX*VEC inner columns of one outer slice. Thread (tx, ty) sums rows
// ty, ty+TY, ... of its VEC columns; the TY partial sums are combined in shared memory.
template <int VEC>
__global__ void sum_columns_kernel(const float* __restrict__ x, float* __restrict__ y,
                                   int64_t reduce, int64_t inner, int64_t col_tiles) {
    __shared__ float part[TY][TX * VEC + 1];
    const int64_t outer_idx = blockIdx.x / col_tiles;
    const int64_t tile = blockIdx.x % col_tiles;
    const int64_t col0 = (tile * TX + threadIdx.x) * VEC;
    const float* base = x + outer_idx * reduce * inner;
    float acc[VEC];
#pragma unroll
    for (int k = 0; k < VEC; ++k) acc[k] = 0.0f;
    if (col0 < inner) {
        if constexpr (VEC == 4) {
#pragma unroll 4
            for (int64_t r = threadIdx.y; r < reduce; r += TY) {
                float4 v = *reinterpret_cast<const float4*>(base + r * inner + col0);
                acc[0] += v.x;
                acc[1] += v.y;
                acc[2] += v.z;
                acc[3] += v.w;
            }
        } else {
#pragma unroll 4
            for (int64_t r = threadIdx.y; r < reduce; r += TY) acc[0] += base[r * inner + col0];
        }
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) part[threadIdx.y][threadIdx.x * VEC + k] = acc[k];
    __syncthreads();
    if (threadIdx.y == 0) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
            float s = 0.0f;
#pragma unroll
            for (int j = 0; j < TY; ++j) s += part[j][threadIdx.x * VEC + k];
            if (col0 + k < inner) y[outer_idx * inner + col0 + k] = s;
        }
    }
}

// inner == 1 (the last dimension is reduced): one warp per row, warp-shuffle sum.
__global__ void sum_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t reduce) {
    const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float* xr = x + row * reduce;
    float acc = 0.0f;
    for (int64_t i = lane; i < reduce; i += 32) acc += xr[i];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc;
}

torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");
    if (dim < 0) dim += x.dim();
    TORCH_CHECK(dim >= 0 && dim < x.dim(), "dim out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
    for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
    const int64_t reduce = x.size(dim);
    auto out_sizes = x.sizes().vec();
    out_sizes[dim] = 1;
    if (reduce == 0) return torch::zeros(out_sizes, x.options());  // an empty sum is 0
    auto y = torch::empty(out_sizes, x.options());
    if (y.numel() == 0) return y;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    if (inner == 1) {
        const int warps = 8;
        const int64_t blocks = (outer + warps - 1) / warps;
        sum_rows_kernel<<<(unsigned)blocks, warps * 32, 0, stream>>>(xp, yp, outer, reduce);
    } else {
        const bool vec = inner % 4 == 0 && reinterpret_cast<uintptr_t>(xp) % 16 == 0;
        const int v = vec ? 4 : 1;
        const int64_t col_tiles = (inner + TX * v - 1) / (TX * v);
        const int64_t blocks = outer * col_tiles;
        TORCH_CHECK(blocks <= 2147483647LL, "input too large for one grid");
        dim3 block(TX, TY);
        if (vec) sum_columns_kernel<4><<<(unsigned)blocks, block, 0, stream>>>(xp, yp, reduce, inner, col_tiles);
        else sum_columns_kernel<1><<<(unsigned)blocks, block, 0, stream>>>(xp, yp, reduce, inner, col_tiles);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_sum_reduce_rows_fast_tiled_columns",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["sum_dim_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.sum_dim_forward(x, self.dim)
