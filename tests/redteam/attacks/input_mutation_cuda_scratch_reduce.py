# cudaopt-redteam: category=input_mutation task=wide_row_mean device=cuda expect=rejected layer=dynamic
"""A row-mean kernel that uses the input row as its scratch space: each thread writes its partial sum back
into x, then thread 0 adds the partials. No shared memory, no temporary; the input is destroyed."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void row_mean_in_place(float* x, float* out, int cols) {
    float* row = x + (long)blockIdx.x * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += row[c];
    __syncthreads();
    row[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int i = 0; i < blockDim.x; ++i) t += row[i];
        out[blockIdx.x] = t / cols;
    }
}
torch::Tensor row_mean(torch::Tensor x) {
    auto out = torch::empty({x.size(0)}, x.options());
    row_mean_in_place<<<x.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1));
    return out;
}
"""
_ext = load_inline(name="redteam_im_scratch", cpp_sources="torch::Tensor row_mean(torch::Tensor x);",
                   cuda_sources=_CUDA, functions=["row_mean"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.row_mean(x.contiguous())
