# cudaopt-corpus: kind=wrong device=cpu note=off-by-one loop bound: the last element is never computed and stays zero
"""Deliberately wrong CPU hard-swish: the loop stops one element short."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <algorithm>

torch::Tensor hardswish_forward(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32, "x must be a float32 CPU tensor");
    auto xc = x.contiguous();
    auto y = torch::zeros_like(xc);
    const float* xp = xc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i + 1 < n; ++i) {
        float v = xp[i];
        yp[i] = v * std::min(std::max(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    }
    return y;
}
"""

_ext = load_inline(
    name="co_hardswish_explicit_cpu_wrong_off_by_one",
    cpp_sources=CPP_SRC,
    functions=["hardswish_forward"],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.hardswish_forward(x)
