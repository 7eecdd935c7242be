# cudaopt-corpus: kind=wrong device=cpu note=off-by-one: the normaliser sums every exponential but the last one of the row
"""Deliberately wrong CPU softmax: the row sum misses its last element."""
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
        for (int64_t c = 0; c < cols - 1; ++c) s += yr[c];  // bug: stops one short
        for (int64_t c = 0; c < cols; ++c) yr[c] /= s;
    }
    return y;
}
"""

_ext = load_inline(
    name="co_softmax_rows_cpu_wrong_off_by_one_sum",
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
