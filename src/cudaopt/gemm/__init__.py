"""HGEMM for the H200: an mma.sync kernel family, cuBLAS baselines, a tuner and a benchmark.

`hgemm(a, b, out=None)` computes a @ b for row-major fp16 CUDA matrices with fp32 accumulation,
choosing the kernel per shape from the tuned table (see `dispatch`), or a labelled cuBLAS fallback
(torch.matmul, or one tuned cuBLASLt algorithm: `lt_fallback`) where the table found ours slower.
"""

from __future__ import annotations

import os

from cudaopt.gemm.configs import KERNEL_CONFIGS, Choice, KernelConfig
from cudaopt.gemm.dispatch import ROW_ALIGN, choose, heuristic_choice

__all__ = ["hgemm", "pad_rows", "choose", "heuristic_choice", "Choice", "KernelConfig", "KERNEL_CONFIGS"]


def _check_operands(a, b):
    import torch

    if a.dtype != torch.float16 or b.dtype != torch.float16:
        raise TypeError(f"hgemm takes float16 matrices, got {a.dtype} and {b.dtype}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"hgemm needs (M, K) @ (K, N), got {tuple(a.shape)} @ {tuple(b.shape)}")
    if not (a.is_cuda and b.is_cuda):
        raise ValueError("hgemm runs on CUDA tensors; move a and b to the GPU")


def _check_both(b, b_col_major) -> None:
    """b_col_major must be B again (same shape, dtype and device); ValueError saying what differs."""
    if b_col_major.shape != b.shape or b_col_major.dtype != b.dtype or b_col_major.device != b.device:
        raise ValueError(f"hgemm: b_col_major must be the same K x N matrix as b stored column-major (b.t().contiguous()"
                         f".t()), got {tuple(b_col_major.shape)} {b_col_major.dtype} on {b_col_major.device} for b "
                         f"{tuple(b.shape)} {b.dtype} on {b.device}")


def row_stride(t) -> int | None:
    """Elements between consecutive rows of a 2-D tensor our kernels can read or write in place: unit
    column stride, a row stride that is at least the row length and a multiple of 8 (16 bytes, what
    TMA and cp.async need) and a 16-byte-aligned start; None otherwise."""
    rows, cols = t.shape
    if cols > 1 and t.stride(1) != 1:
        return None
    ld = t.stride(0) if rows > 1 else -(-cols // 8) * 8  # one row: no stride to read, its length rounded up
    if ld < cols or ld % 8 or t.data_ptr() % 16:
        return None
    return ld


def col_stride(t) -> int | None:
    """Elements between consecutive columns of a 2-D tensor stored transposed (unit row stride: t = w.t() of a
    row-major w), where our B^T kernels can read it: a column stride at least the column length, a multiple of 8,
    and a 16-byte-aligned start; None otherwise."""
    rows, cols = t.shape
    if rows > 1 and t.stride(0) != 1:
        return None
    ld = t.stride(1) if cols > 1 else -(-rows // 8) * 8
    if ld < rows or ld % 8 or t.data_ptr() % 16:
        return None
    return ld


BT_ENV = "CUDAOPT_GEMM_BT"  # "0": a transposed B goes to torch.matmul; default since session 41 (GPU tests passed): our
# B^T kernels, bitwise the B-as-given kernels, +14% against cuBLAS TN on 183 shapes (H100; docs/gpu-runs.md "Session 41")


# os.environ.get encodes the key and goes through the Mapping protocol on every call: 1.6 us on the dev machine, most
# of what the B^T route's Python adds to a call (session 51). CPython's os.environ keeps its values in `_data` under
# encoded keys and updates that dict on every set and delete through os.environ, so one dict lookup there reads the
# same state; where an os.environ lacks it, the plain lookup.
try:
    _ENV_DATA, _BT_KEY, _BT_OFF = os.environ._data, os.environ.encodekey(BT_ENV), os.environ.encodevalue("0")
except AttributeError:  # pragma: no cover (not CPython's os.environ)
    _ENV_DATA = _BT_KEY = _BT_OFF = None


def _bt_on() -> bool:
    """hgemm's B^T route allowed (CUDAOPT_GEMM_BT not "0"); read per call (a process may flip it between calls), and
    only where a call could take it."""
    if _ENV_DATA is not None and getattr(os.environ, "_data", None) is _ENV_DATA:  # (os.environ not replaced since)
        return _ENV_DATA.get(_BT_KEY) != _BT_OFF
    return os.environ.get(BT_ENV, "1") != "0"


def _hgemm_bt(torch, _lib, a, b, out, m: int, n: int, k: int, choice: Choice | None, workspace, lt_matmul=None,
              lds: tuple[int, int, int] | None = None):
    """b stored transposed (b = w.t(), w N x K row-major: the TN layout): the shape's cuBLASLt TN algorithm where the
    table names one (bt_lt_algo) and the operands are packed, else its choice through its config's B^T twin where it
    has one for the choice's splits; None (torch.matmul) where it has neither or b is not such a view. lds: the
    strides where the caller has read them already."""
    lda, ldbt, ldc = lds or _packed_bt_strides(a, b, out, m, n, k) or (row_stride(a), col_stride(b), row_stride(out))
    if None in (ldbt, lda, ldc) or k % 8 or n % 8:
        return None
    choice = choice or choose(m, n, k, strides=(lda, ldbt, ldc))
    if choice.bt_algo >= 0 and (lda, ldbt, ldc) == (k, k, n) and lt_matmul is not None:  # (its plans: packed rows)
        if lt_matmul(a, b, out, choice.bt_algo, _raw_stream(a.device.index), workspace, layout=1):
            return out
    if choice.backend != "ours" or not _lib.has_bt(choice.config, choice.splits):
        return None
    ws_ptr, ws_bytes = _workspace(_lib, m, n, choice.splits, workspace, a.device)
    _lib.launch_ours_bt(a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, choice.config, choice.splits,
                        ws_ptr, ws_bytes, _raw_stream(a.device.index), lda, ldbt, ldc)
    return out


def _workspace(_lib, m: int, n: int, splits: int, workspace, device) -> tuple[int, int]:
    """(address, bytes) of the split-K workspace a call of `splits` needs: the caller's where it is large enough, else a
    new one (its counters zeroed); (0, 0) where the call needs none."""
    ws_bytes = _lib.workspace_bytes(m, n, splits)
    if not ws_bytes:
        return 0, 0
    if workspace is None or workspace.numel() * workspace.element_size() < ws_bytes:
        workspace = _lib.new_workspace(m, n, splits, device)
    return workspace.data_ptr(), ws_bytes


_sk_workspaces: dict[tuple[int, int, int], object] = {}


def _streamk_workspace(_lib, config: int, device, stream: int):
    """The stream-K workspace of (device, stream, config), made once (zeroed) and reused: every call leaves its
    counters zero, and calls on one stream run in order, so one buffer a stream serves them all (two streams sharing
    one could interleave their fixups)."""
    key = (device.index if device.index is not None else -1, stream, config)
    ws = _sk_workspaces.get(key)
    if ws is None:
        ws = _sk_workspaces[key] = _lib.new_streamk_workspace(config, device)
    return ws


def _packed_strides(a, b, out, m: int, n: int, k: int) -> tuple[int, int, int] | None:
    """(k, n, n) when a, b and out are packed and 16-byte aligned, the usual case, else None (then
    row_stride decides). Three is_contiguous calls where row_stride costs ~2 us a tensor in Python, which
    a per-call caller pays on every small shape (session 18: hgemm's host overhead)."""
    if a.is_contiguous() and b.is_contiguous() and out.is_contiguous() and not (
            (a.data_ptr() | b.data_ptr() | out.data_ptr()) & 15):
        return (k, n, n)
    return None


def _packed_bt_strides(a, bt, out, m: int, n: int, k: int) -> tuple[int, int, int] | None:
    """(k, k, n) when a and out are packed, bt is the transposed view of a packed N x K matrix (strides (1, k): an
    nn.Linear weight's .t(), or the seed's b_col_major) and all three are 16-byte aligned with K and N multiples of 8,
    else None (then row_stride / col_stride decide). The B^T route's counterpart of _packed_strides: session 50's call
    timing (H100) read hgemm's B^T route 9 us a call slower than its NN route on the smallest shapes, most of it the
    six stride reads in Python."""
    if bt.stride() == (1, k) and not (k % 8 or n % 8) and a.is_contiguous() and out.is_contiguous() and not (
            (a.data_ptr() | bt.data_ptr() | out.data_ptr()) & 15):
        return (k, k, n)
    return None


def pad_rows(x, multiple: int = ROW_ALIGN):
    """x (2-D) copied into storage whose rows are padded to a multiple of `multiple` elements, returned
    as an (unpadded) view of it. Our TMA kernels read rows that are not 128 bytes long at 0.55-0.9x
    of their speed (docs/gemm.md, session 14); a matrix used many times (a weight) pays the copy once
    and hgemm then runs ours at full speed on a shape whose K or N is not a multiple of 64."""
    import torch

    if x.dim() != 2 or multiple < 1:
        raise ValueError(f"pad_rows takes a 2-D matrix and a positive multiple, got shape {tuple(x.shape)} and "
                         f"multiple={multiple}")
    rows, cols = x.shape
    ld = -(-cols // multiple) * multiple
    buf = torch.empty((rows, ld), dtype=x.dtype, device=x.device)
    view = buf[:, :cols]
    view.copy_(x)
    return view


def _raw_stream(device_index: int) -> int:
    """The current CUDA stream's handle; torch's raw accessor skips building a Stream object (~1 us a
    call, which small shapes notice), with the public path where a torch build lacks it."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


_hot_modules = None  # (torch, _lib, lt_matmul) after the first call


_device_table_chosen = False


def _table_for_device(torch) -> None:
    """Once a process: the shipped table of this GPU where there is one (unless CUDAOPT_GEMM_TABLE names the user's),
    and a warning where the table in use was tuned on another GPU."""
    import warnings

    from cudaopt.gemm import dispatch

    global _device_table_chosen
    if _device_table_chosen:
        return
    _device_table_chosen = True
    try:
        device = torch.cuda.get_device_name()
        if not os.environ.get(dispatch.TABLE_ENV):
            dispatch.use_device(device)
        note = dispatch.foreign_device_note(device, dispatch.table_device())
    except (RuntimeError, AssertionError, OSError, ValueError):  # no usable GPU (torch asserts on a CPU build) or an
        return  # unreadable table: the call itself says so
    if note:
        warnings.warn(note, RuntimeWarning, stacklevel=4)  # (the line that called hgemm)


def _hot():
    """The modules a call needs, imported once: `from ... import` inside the call cost ~1-2 us a call
    (measured on the CPU host), which small shapes pay in call timing; at module level they would add
    ~60 ms to `import cudaopt.gemm`."""
    global _hot_modules
    if _hot_modules is None:
        import torch

        from cudaopt.gemm import _lib
        from cudaopt.gemm.lt_fallback import lt_matmul
        _table_for_device(torch)

        _hot_modules = (torch, _lib, lt_matmul)
    return _hot_modules


def hgemm(a, b, out=None, workspace=None, choice: Choice | None = None, *, b_col_major=None):
    """C = a @ b (fp16 in and out, fp32 accumulate) on the current stream.

    b_col_major: optional, the same B stored column-major too (a K x N view with unit row stride, `w.t()` of the
    row-major N x K `w = b.t().contiguous()`), as the seed's harness hands every function, the cuBLAS TN baselines
    included. Where the table says so for the shape (Choice.both_bt, its "both_layouts": "bt"), hgemm reads that copy
    as it reads a transposed b (below: the table's cuBLASLt TN algorithm, its config's B^T twin, else torch.matmul on
    the copy), else b (and always b with CUDAOPT_GEMM_BT=0). The copy must hold the same values as b: hgemm does not
    compare them.

    a, b, out may be row-padded views (`pad_rows`: unit column stride, row stride a multiple of 8).
    out: optional (M, N) fp16 result. workspace: optional split-K workspace from
    `cudaopt.gemm._lib.new_workspace(M, N, splits)` (at least `workspace_bytes` long, its counter block
    zero; every call leaves it zero, so one buffer serves any number of calls on one stream); without
    one, split-K shapes take one from torch's caching allocator and zero its counters (a memset).
    Operands our kernels cannot take (K or N not a multiple of 8, other strides) go to torch.matmul; b stored
    transposed (b = w.t() of a row-major N x K w, as nn.Linear's weight) runs the table's cuBLASLt TN algorithm for
    the shape where it names one (packed operands), else the shape's config through its B^T twin where it has one for
    its splits (`_lib.has_bt`), else torch.matmul too (CUDAOPT_GEMM_BT=0: always torch.matmul).
    Where the table hands a shape to cuBLASLt ("cublaslt", `lt_fallback`), packed operands run the tuned
    algorithm (workspace is used for it when large enough) and others torch.matmul. A choice naming our config's
    stream-K tail twin (Choice.streamk, the table's "streamk": true) runs it with a workspace hgemm keeps per (device,
    stream, config), about 17 MB each (`workspace` is not used for it).
    """
    torch, _lib, lt_matmul = _hot_modules or _hot()
    _check_operands(a, b)
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        out = torch.empty((m, n), dtype=torch.float16, device=a.device)
    lds = _packed_strides(a, b, out, m, n, k)
    if lds is None and b_col_major is None and _bt_on():  # b = w.t() of a packed w (nn.Linear's weight): the B^T
        bt_lds = _packed_bt_strides(a, b, out, m, n, k)  # route without the row_strides below
        if bt_lds:
            done = _hgemm_bt(torch, _lib, a, b, out, m, n, k, choice, workspace, lt_matmul, bt_lds)
            return torch.matmul(a, b, out=out) if done is None else done
    lds = lds or (row_stride(a), row_stride(b), row_stride(out))
    if b_col_major is not None:
        _check_both(b, b_col_major)
        if None not in lds:  # (the choice the NN path below makes; other strides read b as they would without a copy)
            choice = choice or choose(m, n, k, strides=lds)
            if choice.both_bt and _bt_on():  # the copy as hgemm(a, b_col_major) reads it: its B^T route, else
                done = _hgemm_bt(torch, _lib, a, b_col_major, out, m, n, k, choice, workspace, lt_matmul)
                return torch.matmul(a, b_col_major, out=out) if done is None else done  # torch.matmul (TN), as the
                # grids that chose "bt" timed it (their dispatch_bt); session 52: reading b instead gave 14 H200 shapes
                # the NN choice the grids had found slower
    usable = k % 8 == 0 and n % 8 == 0 and None not in lds
    if not usable:
        if lds[1] is None and _bt_on():
            done = _hgemm_bt(torch, _lib, a, b, out, m, n, k, choice, workspace, lt_matmul)
            if done is not None:
                return done
        return torch.matmul(a, b, out=out)
    choice = choice or choose(m, n, k, strides=lds)
    if choice.backend == "cublaslt" and lds == (k, n, n):  # its plans assume packed rows
        if lt_matmul(a, b, out, choice.algo, _raw_stream(a.device.index), workspace):
            return out
    if choice.backend != "ours":
        return torch.matmul(a, b, out=out)
    stream = _raw_stream(a.device.index)
    if choice.streamk:  # (session 47) the stream-K tail twin, its own workspace
        ws = _streamk_workspace(_lib, choice.config, a.device, stream)
        _lib.launch_ours_streamk(a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, choice.config, ws.data_ptr(),
                                 ws.numel() * 4, stream, *lds)
        return out
    ws_ptr, ws_bytes = _workspace(_lib, m, n, choice.splits, workspace, a.device)
    _lib.launch_ours(a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, choice.config, choice.splits,
                     ws_ptr, ws_bytes, stream, *lds)
    return out
