# cudaopt-corpus: kind=honest device=cuda note=one block per row, 256-element chunks scanned in shared memory (Hillis-Steele), running carry
"""Simple row cumsum: shared-memory doubling scan, one block per row."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor cumsum_dim_forward(torch::Tensor x, int64_t dim);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

// dim is not the last one (inner > 1): one thread per (outer, inner) column, scanning sequentially;
// consecutive threads take consecutive columns, so loads and stores are coalesced.
__global__ void cumsum_columns_kernel(const float* __restrict__ x, float* __restrict__ y,
                                      int64_t outer, int64_t n, int64_t inner) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= outer * inner) return;
    const int64_t o = t / inner, col = t % inner;
    const int64_t base = o * n * inner + col;
    float acc = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        acc += x[base + i * inner];
        y[base + i * inner] = acc;
    }
}

// dim is the last one: one block of 256 threads per row; each chunk of 256 elements is scanned in
// shared memory with the Hillis-Steele doubling steps, plus a running carry between chunks.
__global__ void cumsum_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    __shared__ float buf[256];
    const float* xr = x + (int64_t)blockIdx.x * n;
    float* yr = y + (int64_t)blockIdx.x * n;
    float carry = 0.0f;
    for (int64_t base = 0; base < n; base += 256) {
        const int64_t i = base + threadIdx.x;
        buf[threadIdx.x] = i < n ? xr[i] : 0.0f;
        __syncthreads();
        for (int o = 1; o < 256; o <<= 1) {
            float add = threadIdx.x >= o ? buf[threadIdx.x - o] : 0.0f;
            __syncthreads();
            buf[threadIdx.x] += add;
            __syncthreads();
        }
        if (i < n) yr[i] = carry + buf[threadIdx.x];
        carry += buf[255];
        __syncthreads();  // buf is rewritten by the next chunk
    }
}

torch::Tensor cumsum_dim_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");
    if (dim < 0) dim += x.dim();
    TORCH_CHECK(dim >= 0 && dim < x.dim(), "dim out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
    for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
    const int64_t n = x.size(dim);
    auto y = torch::empty_like(x);
    if (x.numel() == 0) return y;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    if (inner == 1) {
        TORCH_CHECK(outer <= 2147483647LL, "too many rows for one grid");
        cumsum_rows_kernel<<<(unsigned)outer, 256, 0, stream>>>(xp, yp, n);
    } else {
        const int threads = 256;
        const int64_t blocks = (outer * inner + threads - 1) / threads;
        cumsum_columns_kernel<<<(unsigned)blocks, threads, 0, stream>>>(xp, yp, outer, n, inner);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_cumsum_rows_honest_hillis_steele",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["cumsum_dim_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.cumsum_dim_forward(x, self.dim)
