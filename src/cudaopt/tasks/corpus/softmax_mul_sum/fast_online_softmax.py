# cudaopt-corpus: kind=fast device=cuda note=one block per row, single pass with an online (max, sum, weighted sum) state merged by warp shuffles; float4 loads
"""Fused softmax * values summed per row: each input read once, the softmax never materialised."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor softmax_mul_sum_forward(torch::Tensor x, torch::Tensor values);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cmath>
#include <cstdint>

// Online softmax state of a set of elements: running max m, s = sum exp(x - m), w = sum exp(x - m) * v.
struct State { float m, s, w; };

__device__ __forceinline__ State merge(State a, State b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return a;  // both empty
    const float ea = a.m == -INFINITY ? 0.0f : expf(a.m - m);
    const float eb = b.m == -INFINITY ? 0.0f : expf(b.m - m);
    return State{m, a.s * ea + b.s * eb, a.w * ea + b.w * eb};
}

__device__ __forceinline__ void push(State& st, float x, float v) {
    if (x > st.m) {
        const float scale = expf(st.m - x);  // 0 when st.m is -inf
        st.s = st.s * scale + 1.0f;
        st.w = st.w * scale + v;
        st.m = x;
    } else {
        const float e = expf(x - st.m);
        st.s += e;
        st.w += e * v;
    }
}

__device__ __forceinline__ State warp_merge(State st) {
    for (int o = 16; o > 0; o >>= 1) {
        State other{__shfl_xor_sync(0xffffffffu, st.m, o), __shfl_xor_sync(0xffffffffu, st.s, o),
                    __shfl_xor_sync(0xffffffffu, st.w, o)};
        st = merge(st, other);
    }
    return st;
}

// One block per row, one pass: x and values are each read once (float4 when aligned), and the softmax
// weights never touch memory.
__global__ void softmax_mul_sum_kernel(const float* __restrict__ x, const float* __restrict__ v, float* __restrict__ out,
                                       int64_t cols, bool vec) {
    __shared__ float sm[32], ss[32], sw[32];
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    const float* vr = v + row * cols;
    const int64_t cols4 = vec ? cols / 4 : 0;
    State st{-INFINITY, 0.0f, 0.0f};
    for (int64_t i = threadIdx.x; i < cols4; i += blockDim.x) {
        float4 a = reinterpret_cast<const float4*>(xr)[i];
        float4 b = reinterpret_cast<const float4*>(vr)[i];
        push(st, a.x, b.x);
        push(st, a.y, b.y);
        push(st, a.z, b.z);
        push(st, a.w, b.w);
    }
    for (int64_t i = cols4 * 4 + threadIdx.x; i < cols; i += blockDim.x) push(st, xr[i], vr[i]);
    st = warp_merge(st);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    if (lane == 0) { sm[warp] = st.m; ss[warp] = st.s; sw[warp] = st.w; }
    __syncthreads();
    if (warp == 0) {
        st = lane < nwarps ? State{sm[lane], ss[lane], sw[lane]} : State{-INFINITY, 0.0f, 0.0f};
        st = warp_merge(st);
        if (lane == 0) out[row] = st.w / st.s;
    }
}

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
                what, " must be a contiguous float32 CUDA tensor");
}

static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

torch::Tensor softmax_mul_sum_forward(torch::Tensor x, torch::Tensor values) {
    check_input(x, "x");
    check_input(values, "values");
    TORCH_CHECK(x.dim() >= 1 && values.sizes() == x.sizes(), "x and values must have one shape");
    auto out_sizes = x.sizes().vec();
    out_sizes.pop_back();
    auto out = torch::empty(out_sizes, x.options());
    const int64_t cols = x.size(-1);
    if (out.numel() == 0) return out;
    const int64_t rows = out.numel();
    TORCH_CHECK(rows <= 2147483647LL, "too many rows for one grid");
    const bool vec = cols % 4 == 0 && aligned16(x.data_ptr<float>()) && aligned16(values.data_ptr<float>());
    const int threads = cols >= 4096 ? 512 : 256;
    softmax_mul_sum_kernel<<<(unsigned)rows, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), values.data_ptr<float>(), out.data_ptr<float>(), cols, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

"""

_ext = load_inline(
    name="co_softmax_mul_sum_fast_online_softmax",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["softmax_mul_sum_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_mul_sum_forward(x, values)
