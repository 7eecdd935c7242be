# cudaopt-corpus: kind=slow device=cuda note=one thread per output but consecutive threads take different outer slices, so every warp load is scattered
"""Correct but slow sum over one dimension: thread mapping defeats coalescing."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

// One thread per output element (outer_idx, col); it walks the reduced axis sequentially.
__global__ void sum_dim_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t outer, int64_t reduce, int64_t inner) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= outer * inner) return;
    // Consecutive threads take consecutive outer slices: addresses reduce*inner floats apart.
    const int64_t outer_idx = t % outer, col = t / outer;
    const float* base = x + outer_idx * reduce * inner + col;
    float acc = 0.0f;
    for (int64_t r = 0; r < reduce; ++r) acc += base[r * inner];
    y[outer_idx * inner + col] = acc;
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
    auto y = torch::empty(out_sizes, x.options());  // reduce == 0 gives zeros: the loop never runs
    if (y.numel() == 0) return y;
    const int threads = 64;
    const int64_t blocks = (outer * inner + threads - 1) / threads;
    sum_dim_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), outer, reduce, inner);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_sum_reduce_rows_slow_uncoalesced",
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
