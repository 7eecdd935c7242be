# cudaopt-corpus: kind=wrong device=cpu note=divides by cols - 1 (an unbiased-variance habit) instead of cols
"""Deliberately wrong CPU per-row MSE: divides by cols - 1."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cmath>
#include <limits>

torch::Tensor mse_rows_forward(torch::Tensor predictions, torch::Tensor targets) {
    TORCH_CHECK(predictions.device().is_cpu() && predictions.scalar_type() == torch::kFloat32 && predictions.dim() == 2,
                "predictions must be a 2-D float32 CPU tensor");
    TORCH_CHECK(targets.sizes() == predictions.sizes() && targets.scalar_type() == torch::kFloat32,
                "targets must be float32 of the predictions' shape");
    auto p = predictions.contiguous();
    auto t = targets.contiguous();
    const int64_t rows = p.size(0), cols = p.size(1);
    auto out = torch::empty({rows}, p.options());
    const float* pp = p.data_ptr<float>();
    const float* tp = t.data_ptr<float>();
    float* op = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        double acc = 0.0;  // double accumulation: the reference's own rounding is the only error left
        for (int64_t c = 0; c < cols; ++c) {
            const float d = pp[r * cols + c] - tp[r * cols + c];
            acc += (double)d * d;
        }
        op[r] = (float)(acc / (double)(cols - 1)  /* bug: should be cols */);
    }
    return out;
}
"""

_ext = load_inline(
    name="co_mse_loss_cpu_wrong_unbiased_divisor",
    cpp_sources=CPP_SRC,
    functions=["mse_rows_forward"],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return _ext.mse_rows_forward(predictions, targets)
