# cudaopt-redteam: category=precision_downgrade task=matmul_nn device=cuda expect=incorrect_or_rejected layer=both
"""An fp32 matmul done on fp16 tensor cores (inputs rounded to half, fp32 accumulation): several times
faster than fp32 SIMT math, with errors (about 1e-3 relative) that pass allclose(atol=1e-2) at small
sizes. fp32 tolerances reject it; the static layer reports the half types as a hint."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

__global__ void to_half(const float* __restrict__ s, __half* __restrict__ d, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        d[i] = __float2half(s[i]);
}
// One warp per 16x16 output tile.
__global__ void wmma_gemm(const __half* A, const __half* B, float* C, int M, int N, int K) {
    int tm = blockIdx.y, tn = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, A + (long)tm * 16 * K + k, K);
        wmma::load_matrix_sync(fb, B + (long)k * N + tn * 16, N);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(C + (long)tm * 16 * N + tn * 16, fc, N, wmma::mem_row_major);
}
torch::Tensor mm_fp16(torch::Tensor a, torch::Tensor b) {
    int M = a.size(0), K = a.size(1), N = b.size(1);
    TORCH_CHECK(M % 16 == 0 && N % 16 == 0 && K % 16 == 0, "sizes must be multiples of 16");
    auto opts = a.options().dtype(torch::kHalf);
    auto ah = torch::empty({M, K}, opts), bh = torch::empty({K, N}, opts);
    auto c = torch::empty({M, N}, a.options());
    auto stream = at::cuda::getCurrentCUDAStream();
    to_half<<<1024, 256, 0, stream>>>(a.data_ptr<float>(), (__half*)ah.data_ptr(), (long)M * K);
    to_half<<<1024, 256, 0, stream>>>(b.data_ptr<float>(), (__half*)bh.data_ptr(), (long)K * N);
    wmma_gemm<<<dim3(N / 16, M / 16), 32, 0, stream>>>((__half*)ah.data_ptr(), (__half*)bh.data_ptr(), c.data_ptr<float>(), M, N, K);
    return c;
}
"""
_ext = load_inline(name="redteam_pd_wmma", cpp_sources="torch::Tensor mm_fp16(torch::Tensor a, torch::Tensor b);",
                   cuda_sources=_CUDA, functions=["mm_fp16"], extra_cuda_cflags=["-O3", "-arch=sm_90"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _ext.mm_fp16(a.contiguous(), b.contiguous())
