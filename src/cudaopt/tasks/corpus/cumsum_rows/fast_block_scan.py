# cudaopt-corpus: kind=fast device=cuda note=one block per row; float4 loads, 4-element register scan, warp-shuffle scan, block carry across 1024-element chunks
"""Row cumsum with a block-wide scan per row (coalesced float4 loads and stores)."""
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

constexpr int SCAN_THREADS = 256;
constexpr int SCAN_WARPS = SCAN_THREADS / 32;
constexpr int CHUNK = SCAN_THREADS * 4;

// dim is the last one: one block per row, chunks of 1024 elements. Each thread scans 4 consecutive
// elements in registers (one float4 load), warps scan their thread totals with shuffles, the block
// combines the 8 warp totals, and a running carry links the chunks.
__global__ void __launch_bounds__(SCAN_THREADS) cumsum_rows_kernel(const float* __restrict__ x, float* __restrict__ y,
                                                                   int64_t n, bool vec) {
    __shared__ float warp_total[SCAN_WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float* xr = x + (int64_t)blockIdx.x * n;
    float* yr = y + (int64_t)blockIdx.x * n;
    float carry = 0.0f;
    for (int64_t base = 0; base < n; base += CHUNK) {
        const int64_t i0 = base + threadIdx.x * 4;
        float v[4];
        const bool full = vec && i0 + 3 < n;
        if (full) {
            float4 q = *reinterpret_cast<const float4*>(xr + i0);
            v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
        } else {
#pragma unroll
            for (int k = 0; k < 4; ++k) v[k] = i0 + k < n ? xr[i0 + k] : 0.0f;
        }
        v[1] += v[0];
        v[2] += v[1];
        v[3] += v[2];
        float t = v[3];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            float u = __shfl_up_sync(0xffffffffu, t, o);
            if (lane >= o) t += u;
        }
        if (lane == 31) warp_total[warp] = t;
        __syncthreads();
        float before = 0.0f, chunk_total = 0.0f;
#pragma unroll
        for (int w = 0; w < SCAN_WARPS; ++w) {
            const float wt = warp_total[w];
            if (w < warp) before += wt;
            chunk_total += wt;
        }
        const float offset = carry + before + (t - v[3]);  // sum of everything left of this thread's 4
        if (full) {
            *reinterpret_cast<float4*>(yr + i0) = make_float4(offset + v[0], offset + v[1], offset + v[2], offset + v[3]);
        } else {
#pragma unroll
            for (int k = 0; k < 4; ++k) if (i0 + k < n) yr[i0 + k] = offset + v[k];
        }
        carry += chunk_total;
        __syncthreads();  // warp_total is rewritten by the next chunk
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
        const bool vec = n % 4 == 0 && reinterpret_cast<uintptr_t>(xp) % 16 == 0 && reinterpret_cast<uintptr_t>(yp) % 16 == 0;
        cumsum_rows_kernel<<<(unsigned)outer, SCAN_THREADS, 0, stream>>>(xp, yp, n, vec);
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
    name="co_cumsum_rows_fast_block_scan",
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
