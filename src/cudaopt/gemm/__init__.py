"""HGEMM for the H200: an mma.sync kernel family, cuBLAS baselines, a tuner and a benchmark.

`hgemm(a, b, out=None)` computes a @ b for row-major fp16 CUDA matrices with fp32 accumulation,
choosing the kernel per shape from the tuned table (see `dispatch`).
"""

from __future__ import annotations

from cudaopt.gemm.configs import KERNEL_CONFIGS, Choice, KernelConfig
from cudaopt.gemm.dispatch import choose, heuristic_choice

__all__ = ["hgemm", "choose", "heuristic_choice", "Choice", "KernelConfig", "KERNEL_CONFIGS"]


def _check_operands(a, b):
    import torch

    if a.dtype != torch.float16 or b.dtype != torch.float16:
        raise TypeError(f"hgemm takes float16 matrices, got {a.dtype} and {b.dtype}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"hgemm needs (M, K) @ (K, N), got {tuple(a.shape)} @ {tuple(b.shape)}")
    if not (a.is_cuda and b.is_cuda):
        raise ValueError("hgemm runs on CUDA tensors; move a and b to the GPU")


def _raw_stream(device_index: int) -> int:
    """The current CUDA stream's handle; torch's raw accessor skips building a Stream object (~1 us a
    call, which small shapes notice), with the public path where a torch build lacks it."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


def hgemm(a, b, out=None, workspace=None, choice: Choice | None = None):
    """C = a @ b (fp16 in and out, fp32 accumulate) on the current stream.

    out: optional (M, N) fp16 contiguous result. workspace: optional split-K workspace from
    `cudaopt.gemm._lib.new_workspace(M, N, splits)` (at least `workspace_bytes` long, its counter block
    zero; every call leaves it zero, so one buffer serves any number of calls on one stream); without
    one, split-K shapes take one from torch's caching allocator and zero its counters (a memset).
    Shapes our kernels cannot take (K or N not a multiple of 8, non-contiguous) go to torch.matmul.
    """
    import torch

    from cudaopt.gemm import _lib

    _check_operands(a, b)
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        out = torch.empty((m, n), dtype=torch.float16, device=a.device)
    aligned = k % 8 == 0 and n % 8 == 0 and a.is_contiguous() and b.is_contiguous() and out.is_contiguous()
    choice = choice or choose(m, n, k)
    if not aligned or choice.backend != "ours":
        return torch.matmul(a, b, out=out)
    ws_bytes = _lib.workspace_bytes(m, n, choice.splits)
    if ws_bytes and (workspace is None or workspace.numel() * workspace.element_size() < ws_bytes):
        workspace = _lib.new_workspace(m, n, choice.splits, a.device)
    stream = _raw_stream(a.device.index)
    _lib.launch_ours(a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, choice.config, choice.splits,
                     workspace.data_ptr() if ws_bytes else 0, ws_bytes, stream)
    return out
