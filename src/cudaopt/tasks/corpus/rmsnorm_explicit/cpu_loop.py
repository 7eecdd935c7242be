# cudaopt-corpus: kind=cpu device=cpu note=plain C++ loops: sum of squares, 1/sqrt, scale by the weight (CPU build, for CI without a GPU)
"""RMSNorm in C++ on the CPU."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cmath>
#include <limits>

torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor weight, double eps) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "x must be a float32 CPU tensor");
    TORCH_CHECK(weight.numel() == x.size(-1), "weight length must equal the last dimension of x");
    auto xc = x.contiguous();
    auto wc = weight.detach().contiguous();
    auto y = torch::empty_like(xc);
    const int64_t cols = xc.size(-1);
    if (xc.numel() == 0) return y;
    const int64_t rows = xc.numel() / cols;
    const float* xp = xc.data_ptr<float>();
    const float* wp = wc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = xp + r * cols;
        float ss = 0.0f;
        for (int64_t c = 0; c < cols; ++c) ss += xr[c] * xr[c];
        const float inv = 1.0f / std::sqrt(ss / (float)cols + (float)eps);
        for (int64_t c = 0; c < cols; ++c) yp[r * cols + c] = xr[c] * inv * wp[c];
    }
    return y;
}
"""

_ext = load_inline(
    name="co_rmsnorm_explicit_cpu_loop",
    cpp_sources=CPP_SRC,
    functions=["rmsnorm_forward"],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.rmsnorm_forward(x, self.weight, self.eps)
