# cudaopt-corpus: kind=cpu device=cpu note=plain C++ loop over the elements (CPU build, for CI without a GPU)
"""Hard-swish in C++ on the CPU."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <algorithm>

torch::Tensor hardswish_forward(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32, "x must be a float32 CPU tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* xp = xc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        float v = xp[i];
        yp[i] = v * std::min(std::max(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    }
    return y;
}
"""

_ext = load_inline(
    name="co_hardswish_explicit_cpu_loop",
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
