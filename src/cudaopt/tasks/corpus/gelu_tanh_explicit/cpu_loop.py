# cudaopt-corpus: kind=cpu device=cpu note=plain C++ loop over the elements (CPU build, for CI without a GPU)
"""tanh-GELU in C++ on the CPU."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor gelu_tanh_forward(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32, "x must be a float32 CPU tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* xp = xc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        float v = xp[i];
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        yp[i] = 0.5f * v * (1.0f + std::tanh(inner));
    }
    return y;
}
"""

_ext = load_inline(
    name="co_gelu_tanh_explicit_cpu_loop",
    cpp_sources=CPP_SRC,
    functions=["gelu_tanh_forward"],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.gelu_tanh_forward(x)
