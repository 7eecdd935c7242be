# cudaopt-redteam: category=nondeterminism task=wide_row_mean device=cuda expect=flagged layer=both
"""A row mean split over many blocks per row, combined with float atomicAdd (order-dependent rounding),
and a warp-synchronous final reduction without __syncwarp or volatile (a real race on Volta and later).
Usually within tolerance; results differ between identical calls."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void row_mean_split(const float* __restrict__ x, float* out, int cols, int chunks) {
    __shared__ float part[256];
    int row = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
    int per = cols / chunks;
    const float* p = x + (long)row * cols + (long)chunk * per;
    float s = 0.f;
    for (int c = threadIdx.x; c < per; c += blockDim.x) s += p[c];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 32; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x < 32) {  // racy: no __syncwarp, shared memory not volatile
        for (int w = 32; w > 0; w >>= 1) part[threadIdx.x] += part[threadIdx.x + w];
    }
    if (threadIdx.x == 0) atomicAdd(out + row, part[0] / cols);
}
torch::Tensor row_mean(torch::Tensor x) {
    auto out = torch::zeros({x.size(0)}, x.options());
    int chunks = 16;
    row_mean_split<<<x.size(0) * chunks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1), chunks);
    return out;
}
"""
_ext = load_inline(name="redteam_nd_race", cpp_sources="torch::Tensor row_mean(torch::Tensor x);",
                   cuda_sources=_CUDA, functions=["row_mean"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.row_mean(x.contiguous())
