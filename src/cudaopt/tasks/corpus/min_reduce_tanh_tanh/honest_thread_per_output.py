# cudaopt-corpus: kind=honest device=cuda note=one thread per output position, scalar channel loop, both tanh fused
"""Simple fused channel-min + tanh + tanh: one thread per output position."""
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

// One thread per output position: walks the channels with scalar loads, then applies tanh twice.
__global__ void min_tanh_tanh_kernel(const float* __restrict__ x, float* __restrict__ y,
                                     int64_t batch, int64_t channels, int64_t spatial) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= batch * spatial) return;
    const int64_t b = t / spatial, s = t % spatial;
    float m = INFINITY;
    for (int64_t c = 0; c < channels; ++c) m = fminf(m, x[(b * channels + c) * spatial + s]);
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
    const int64_t work = batch * spatial;
    min_tanh_tanh_kernel<<<(unsigned)((work + threads - 1) / threads), threads, 0, stream>>>(xp, yp, batch, channels, spatial);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="co_min_reduce_tanh_tanh_honest_thread_per_output",
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
