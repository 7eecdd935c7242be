# cudaopt-corpus: kind=fast device=cuda note=one fused pass: each thread takes a float4 of positions and walks the channels (coalesced), min and both tanh in registers; no index tensor
"""Fused channel-min + tanh + tanh: reads x once, writes the (N, 1, H, W) result once."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor min_tanh_tanh_forward(torch::Tensor x);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cmath>
#include <cstdint>

// Each thread owns 4 neighbouring spatial positions of one image (one float4 per channel) and walks the
// channels; consecutive threads own consecutive positions, so every channel load is coalesced.
__global__ void min_tanh_tanh_vec4_kernel(const float* __restrict__ x, float* __restrict__ y,
                                          int64_t batch, int64_t channels, int64_t spatial4) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= batch * spatial4) return;
    const int64_t b = t / spatial4, s4 = t % spatial4;
    const float4* base = reinterpret_cast<const float4*>(x) + b * channels * spatial4 + s4;
    float4 m = base[0];
#pragma unroll 4
    for (int64_t c = 1; c < channels; ++c) {
        float4 v = base[c * spatial4];
        m.x = fminf(m.x, v.x);
        m.y = fminf(m.y, v.y);
        m.z = fminf(m.z, v.z);
        m.w = fminf(m.w, v.w);
    }
    reinterpret_cast<float4*>(y)[b * spatial4 + s4] =
        make_float4(tanhf(tanhf(m.x)), tanhf(tanhf(m.y)), tanhf(tanhf(m.z)), tanhf(tanhf(m.w)));
}

__global__ void min_tanh_tanh_scalar_kernel(const float* __restrict__ x, float* __restrict__ y,
                                            int64_t batch, int64_t channels, int64_t spatial) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= batch * spatial) return;
    const int64_t b = t / spatial, s = t % spatial;
    const float* base = x + b * channels * spatial + s;
    float m = base[0];
#pragma unroll 4
    for (int64_t c = 1; c < channels; ++c) m = fminf(m, base[c * spatial]);
    y[t] = tanhf(tanhf(m));
}

torch::Tensor min_tanh_tanh_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    TORCH_CHECK(x.dim() >= 2, "x must be (N, C, ...)");
    const int64_t batch = x.size(0), channels = x.size(1);
    TORCH_CHECK(channels > 0, "min over an empty channel dimension is undefined");
    const int64_t spatial = x.numel() / (batch * channels);
    auto out_sizes = x.sizes().vec();
    out_sizes[1] = 1;
    auto y = torch::empty(out_sizes, x.options());
    if (y.numel() == 0) return y;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const int threads = 256;
    const bool vec = spatial % 4 == 0 && reinterpret_cast<uintptr_t>(xp) % 16 == 0 && reinterpret_cast<uintptr_t>(yp) % 16 == 0;
    if (vec) {
        const int64_t work = batch * (spatial / 4);
        min_tanh_tanh_vec4_kernel<<<(unsigned)((work + threads - 1) / threads), threads, 0, stream>>>(xp, yp, batch, channels, spatial / 4);
    } else {
        const int64_t work = batch * spatial;
        min_tanh_tanh_scalar_kernel<<<(unsigned)((work + threads - 1) / threads), threads, 0, stream>>>(xp, yp, batch, channels, spatial);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_min_reduce_tanh_tanh_fast_fused_float4",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["min_tanh_tanh_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.min_tanh_tanh_forward(x)
