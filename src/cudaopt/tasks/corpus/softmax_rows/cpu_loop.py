# cudaopt-corpus: kind=cpu device=cpu note=plain C++ loops: row max, exp, sum, divide (CPU build, for CI without a GPU)
"""Row softmax in C++ on the CPU."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cmath>
#include <limits>

torch::Tensor softmax_rows_forward(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "x must be a float32 CPU tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t cols = xc.size(-1);
    if (xc.numel() == 0) return y;
    const int64_t rows = xc.numel() / cols;
    const float* xp = xc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = xp + r * cols;
        float* yr = yp + r * cols;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t c = 0; c < cols; ++c) m = std::max(m, xr[c]);
        float s = 0.0f;
        for (int64_t c = 0; c < cols; ++c) {
            yr[c] = std::exp(xr[c] - m);
        }
        for (int64_t c = 0; c < cols; ++c) s += yr[c];
        for (int64_t c = 0; c < cols; ++c) yr[c] /= s;
    }
    return y;
}
"""

_ext = load_inline(
    name="co_softmax_rows_cpu_loop",
    cpp_sources=CPP_SRC,
    functions=["softmax_rows_forward"],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_rows_forward(x)
