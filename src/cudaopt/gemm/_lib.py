"""ctypes bindings to the compiled kernel family and the cuBLAS baselines (built by `build`).

Libraries are loaded lazily on first use, after torch (so torch's CUDA runtime and cuBLAS are the
ones our libraries bind to). Every entry point returns a status; a non-zero status raises GemmError.
"""

from __future__ import annotations

import ctypes
import functools
import os

from cudaopt.gemm import build as _build
from cudaopt.gemm.configs import (
    KERNEL_CONFIGS,
    MMA_CONFIGS,
    WGMMA_CONFIGS,
    wgmma_k_blocks,
)

_p, _i, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t


class GemmError(RuntimeError):
    """A kernel or baseline call failed; the message names the call and the status."""


def _check(name: str, status: int) -> None:
    if status != 0:
        raise GemmError(f"{name} failed with status {status} (cudaError/cublasStatus value; -1: bad arguments; -2/-3: TMA tensor map unavailable/rejected)")


@functools.lru_cache(maxsize=1)
def kernels() -> ctypes.CDLL:
    """The kernel library of this checkout (built on first use), set up from the environment."""
    return load_kernels(_build.build(with_blas=False).kernel_lib)


def load_kernels(path) -> ctypes.CDLL:
    """A kernel library at `path` loaded, checked against configs.py and set up: the package's own (kernels()), or
    a second build of the same sources with other compile-time flags beside it in one process (ctypes loads each
    with its own symbols; benchmarks/gemm_build_ab.py times the two against each other)."""
    import torch  # noqa: F401  (loads the CUDA runtime our library links against)

    lib = ctypes.CDLL(str(path))
    lib.cudaopt_hgemm.argtypes = [_p, _p, _p, _i, _i, _i, _i, _i, _i, _i, _i, _p, _sz, _p]
    lib.cudaopt_hgemm.restype = _i
    lib.cudaopt_hgemm_config_info.argtypes = [_i, ctypes.POINTER(_i)]
    lib.cudaopt_hgemm_workspace_bytes.argtypes = [_i, _i, _i]
    lib.cudaopt_hgemm_workspace_bytes.restype = _sz
    lib.cudaopt_hgemm_wgmma.argtypes = [_p, _p, _p, _i, _i, _i, _i, _i, _i, _i, _p]
    lib.cudaopt_hgemm_wgmma.restype = _i
    lib.cudaopt_wgmma_config_info.argtypes = [_i, ctypes.POINTER(_i)]
    declare_wgmma_splitk(lib)
    n = lib.cudaopt_hgemm_num_configs()
    if n != len(MMA_CONFIGS):
        raise GemmError(f"library has {n} mma configs, configs.py {len(MMA_CONFIGS)}: rebuild (python -m cudaopt.gemm.build --force)")
    buf = (_i * 7)()
    for cfg in MMA_CONFIGS:
        lib.cudaopt_hgemm_config_info(cfg.index, buf)
        if tuple(buf[:6]) != (cfg.bm, cfg.bn, cfg.bk, cfg.warps_m, cfg.warps_n, cfg.stages):
            raise GemmError(f"config {cfg.id} differs between library and configs.py: rebuild")
    n = lib.cudaopt_wgmma_num_configs()
    if n != len(WGMMA_CONFIGS):
        raise GemmError(f"library has {n} wgmma configs, configs.py {len(WGMMA_CONFIGS)}: rebuild (python -m cudaopt.gemm.build --force)")
    for cfg in WGMMA_CONFIGS:
        lib.cudaopt_wgmma_config_info(cfg.index, buf)
        if tuple(buf[:7]) != (cfg.bm, cfg.bn, cfg.bk, cfg.consumers, cfg.stages, cfg.smem_bytes, cfg.schedule):
            raise GemmError(f"wgmma config {cfg.id} differs between library and configs.py: rebuild")
        if lib.cudaopt_wgmma_cluster_size(cfg.index) != cfg.cluster_m:
            raise GemmError(f"wgmma config {cfg.id}: library cluster size {lib.cudaopt_wgmma_cluster_size(cfg.index)}, "
                            f"configs.py {cfg.cluster_m}: rebuild")
        if lib.cudaopt_wgmma_b_mc(cfg.index) != cfg.b_mc:
            raise GemmError(f"wgmma config {cfg.id}: B multicast mode differs between library and configs.py: rebuild")
        if lib.cudaopt_wgmma_l2_promo(cfg.index) != (L2_PROMOTIONS[cfg.l2_promo] if cfg.l2_promo else -1):
            raise GemmError(f"wgmma config {cfg.id}: its L2 promotion differs between library and configs.py: rebuild")
        if lib.cudaopt_wgmma_b3d(cfg.index) != int(cfg.b3d):
            raise GemmError(f"wgmma config {cfg.id}: B3D differs between library and configs.py: rebuild")
        if lib.cudaopt_wgmma_max_splits(cfg.index) != cfg.max_splits:
            raise GemmError(f"wgmma config {cfg.id}: library takes {lib.cudaopt_wgmma_max_splits(cfg.index)} splits, "
                            f"configs.py {cfg.max_splits}: rebuild")
    _check("cudaopt_hgemm_init", lib.cudaopt_hgemm_init())
    set_pdl(os.environ.get("CUDAOPT_GEMM_PDL", "1") != "0", lib)
    # wgmma split-K: the separate reduce kernel (default: the shipped table was tuned with it), the
    # ticket fixup (CUDAOPT_GEMM_SPLITK_FIXUP=1), the spread fixup on one-wave launches (=2) or cluster
    # split-K (=4); docs/gemm.md
    lib.cudaopt_wgmma_set_splitk_fixup(splitk_fixup_mode())
    set_reduce_chunked(os.environ.get("CUDAOPT_GEMM_REDUCE_CHUNKED", "1") != "0", lib)
    set_reduce_fixed(reduce_fixed_lanes(), lib)
    set_cpasync(cpasync_mode(), lib)
    set_l2_promotion(L2_PROMOTIONS[l2_promotion_name()], lib)
    lib.cudaopt_wgmma_set_debug_cluster(*debug_cluster())
    return lib


def debug_cluster() -> tuple[int, int]:
    """$CUDAOPT_GEMM_DEBUG_CLUSTER = "SIZE[,POLICY]", a diagnostic (session 21): launch the one-CTA kernels in
    clusters of SIZE (1-8; their code takes no notice) and every cluster launch with scheduling policy POLICY
    (0 default, 1 spread, 2 load balancing): is a slow cluster kernel slow for its code or for its launch?"""
    raw = os.environ.get("CUDAOPT_GEMM_DEBUG_CLUSTER", "1").strip() or "1"
    size, _, policy = raw.partition(",")
    try:
        out = int(size), int(policy or 0)
    except ValueError:
        out = (0, -1)
    if not (1 <= out[0] <= 8 and 0 <= out[1] <= 2):
        raise GemmError(f"CUDAOPT_GEMM_DEBUG_CLUSTER={raw!r}: give SIZE (1-8) or SIZE,POLICY (policy 0-2), e.g. 2,1")
    return out


def _env_mode(name: str, default: str, allowed: tuple[str, ...], usage: str) -> int:
    """The integer setting $name (blank or unset: default), refused in one line unless it is one of
    `allowed`; `usage` says what each value means."""
    raw = os.environ.get(name, default).strip() or default
    if raw not in allowed:
        raise GemmError(f"{name}={raw!r}: use {usage}")
    return int(raw)


def cpasync_mode() -> int:
    """$CUDAOPT_GEMM_CPASYNC: which producer fills the wgmma ring. 0 (default): TMA everywhere; 1: 16-byte
    cp.async copies where A's or B's rows are not 128-byte aligned (K or N not a multiple of 64), which
    TMA reads slowly (benchmarks/gemm_alignment.py); 2: cp.async on every generation-2 launch without
    clusters (tests and measurements). Anything else is refused."""
    return _env_mode("CUDAOPT_GEMM_CPASYNC", "0", ("0", "1", "2"),
                     "0 (TMA), 1 (cp.async where rows are not 128-byte aligned) or 2 (cp.async always)")


def set_cpasync(mode: int, lib: ctypes.CDLL | None = None) -> None:
    """The wgmma producer setting of cpasync_mode() (0, 1 or 2), read by each launch when it is made (a
    CUDA graph keeps the producer its launches were captured with)."""
    if mode not in (0, 1, 2):
        raise GemmError(f"cp.async producer mode {mode}: use 0, 1 or 2")
    (lib or kernels()).cudaopt_wgmma_set_cpasync(mode)


L2_PROMOTIONS = {"256B": 0, "none": 1, "64B": 2, "128B": 3}  # cudaopt_wgmma_set_l2_promotion's modes


def l2_promotion_name() -> str:
    """$CUDAOPT_GEMM_L2_PROMOTION: the L2 promotion of the wgmma tensor maps, 256B (default), none, 64B or 128B
    (session 23: a measurement setting; benchmarks/gemm_l2_promotion.py times them side by side). Configs with a
    promotion of their own (KernelConfig.l2_promo, session 24) keep it for their operand maps whatever this says."""
    raw = os.environ.get("CUDAOPT_GEMM_L2_PROMOTION", "").strip() or "256B"
    if raw not in L2_PROMOTIONS:
        raise GemmError(f"CUDAOPT_GEMM_L2_PROMOTION={raw!r}: use 256B (the default), none, 64B or 128B")
    return raw


def set_l2_promotion(mode: int, lib: ctypes.CDLL | None = None) -> None:
    """The L2 promotion the wgmma tensor maps are encoded with from now on (a measurement setting, session 23):
    a value of L2_PROMOTIONS; 0 (256 B) is the default. A CUDA graph keeps the maps its launches were captured with."""
    if mode not in L2_PROMOTIONS.values():
        raise GemmError(f"L2 promotion mode {mode}: use one of {L2_PROMOTIONS}")
    (lib or wgmma_kernels()).cudaopt_wgmma_set_l2_promotion(mode)


def uses_cpasync(config: int, lda: int, ldb: int) -> bool:
    """Whether a launch of wgmma `config` with these leading dimensions takes the cp.async producer now."""
    cfg = KERNEL_CONFIGS[config]
    if cfg.kind != "wgmma":
        return False
    return kernels().cudaopt_wgmma_uses_cpasync(cfg.index, lda, ldb) == 1


def reduce_fixed_lanes() -> int:
    """$CUDAOPT_GEMM_REDUCE_FIXED: 1 (default since session 13, whose grid was tuned with it), 2 or 4: the
    wgmma split-K reduce for 2..8 splits with the split count compiled in and that many 8-column lanes a
    thread (docs/gemm.md); 0: the chunked reduce for those too; anything else is refused."""
    return _env_mode("CUDAOPT_GEMM_REDUCE_FIXED", "1", ("0", "1", "2", "4"),
                     "0 (chunked reduce) or 1, 2, 4 (lanes a thread of the fixed-split reduce)")


def splitk_fixup_mode() -> int:
    """$CUDAOPT_GEMM_SPLITK_FIXUP: 0 (default, the reduce kernel), 1 (ticket fixup), 2 (spread fixup),
    3 (spread fixup without the cooperative launch, a measurement only), 4 (cluster split-K: the splits
    of a tile in one cluster, summed through distributed shared memory, up to 8 splits); anything else
    is refused."""
    return _env_mode("CUDAOPT_GEMM_SPLITK_FIXUP", "0", ("0", "1", "2", "3", "4"),
                     "0 (reduce kernel), 1 (ticket fixup), 2 (spread fixup), 3 (2 without the cooperative launch) "
                     "or 4 (cluster split-K)")


def set_pdl(on: bool, lib: ctypes.CDLL | None = None) -> None:
    """Launch our kernels with programmatic dependent launch (on by default; CUDAOPT_GEMM_PDL=0 turns it
    off): a launch may then be scheduled under the previous kernel's tail on the stream, and waits on the
    device for it before touching memory. A CUDA graph keeps the setting its launches were captured with,
    which is how the benchmark times both settings side by side."""
    lib = lib or kernels()
    lib.cudaopt_hgemm_set_pdl(1 if on else 0)
    lib.cudaopt_wgmma_set_pdl(1 if on else 0)


def set_reduce_chunked(on: bool, lib: ctypes.CDLL | None = None) -> None:
    """Split-K reduce kernels (both families): chunks of 8 splits with their loads in flight together
    (the default since session 12, whose grid was tuned and checked with them), or the serial loop of
    sessions 3-11 (CUDAOPT_GEMM_REDUCE_CHUNKED=0)."""
    lib = lib or kernels()
    lib.cudaopt_hgemm_set_reduce_chunked(1 if on else 0)
    lib.cudaopt_wgmma_set_reduce_chunked(1 if on else 0)


def set_reduce_fixed(lanes: int, lib: ctypes.CDLL | None = None) -> None:
    """The wgmma split-K reduce for 2..8 splits while the chunked reduce is on: 1, 2 or 4 = the
    fixed-split kernel with that many lanes a thread (bitwise the chunked kernel's sums), 0 = the chunked
    kernel; set_reduce_chunked(False) runs the serial kernel whatever this says. A CUDA graph keeps the
    kernel its launches were captured with."""
    if lanes not in (0, 1, 2, 4):
        raise GemmError(f"reduce lanes a thread {lanes}: use 0, 1, 2 or 4")
    (lib or kernels()).cudaopt_wgmma_set_reduce_fixed(lanes)


def declare_wgmma_splitk(lib: ctypes.CDLL) -> ctypes.CDLL:
    """ctypes signatures of the wgmma split-K and cluster entry points (host-only helpers included,
    which the CPU tests call on a library loaded without a GPU)."""
    lib.cudaopt_hgemm_wgmma_splitk.argtypes = [_p, _p, _p, _i, _i, _i, _i, _i, _i, _i, _i, _p, _sz, _p]
    lib.cudaopt_hgemm_wgmma_splitk.restype = _i
    lib.cudaopt_wgmma_workspace_bytes.argtypes = [_i, _i, _i]
    lib.cudaopt_wgmma_workspace_bytes.restype = _sz
    lib.cudaopt_wgmma_counter_bytes.argtypes = [_i, _i]
    lib.cudaopt_wgmma_counter_bytes.restype = _sz
    lib.cudaopt_wgmma_max_splits.argtypes = [_i]
    lib.cudaopt_wgmma_max_splits.restype = _i
    lib.cudaopt_wgmma_work_item.argtypes = [_i, _i, _i, _i, ctypes.POINTER(_i)]
    lib.cudaopt_wgmma_work_item.restype = _i
    lib.cudaopt_wgmma_grid.argtypes = [_i, _i, _i, _i, _i]
    lib.cudaopt_wgmma_grid.restype = _i
    lib.cudaopt_wgmma_cluster_size.argtypes = [_i]
    lib.cudaopt_wgmma_cluster_size.restype = _i
    lib.cudaopt_wgmma_set_debug_cluster.argtypes = [_i, _i]
    lib.cudaopt_wgmma_b3d.argtypes = [_i]
    lib.cudaopt_wgmma_b3d.restype = _i
    lib.cudaopt_wgmma_b_mc.argtypes = [_i]
    lib.cudaopt_wgmma_b_mc.restype = _i
    lib.cudaopt_wgmma_l2_promo.argtypes = [_i]
    lib.cudaopt_wgmma_l2_promo.restype = _i
    lib.cudaopt_wgmma_max_active_clusters.argtypes = [_i]
    lib.cudaopt_wgmma_max_active_clusters.restype = _i
    lib.cudaopt_wgmma_cluster_tile.argtypes = [_i, _i, _i, _i, _i, ctypes.POINTER(_i)]  # (unit, rank, tiles_m, tiles_n, cm)
    lib.cudaopt_wgmma_cluster_tile.restype = _i
    if hasattr(lib, "cudaopt_hgemm_wgmma_bt"):  # (session 39; a library built before has no B^T twins)
        lib.cudaopt_hgemm_wgmma_bt.argtypes = [_p, _p, _p, _i, _i, _i, _i, _i, _i, _i, _i, _p, _sz, _p]
        lib.cudaopt_hgemm_wgmma_bt.restype = _i
        lib.cudaopt_wgmma_has_bt.argtypes = [_i]
        lib.cudaopt_wgmma_has_bt.restype = _i
    if hasattr(lib, "cudaopt_hgemm_wgmma_streamk"):  # (session 47; a library built before has no stream-K twins)
        lib.cudaopt_hgemm_wgmma_streamk.argtypes = [_p, _p, _p, _i, _i, _i, _i, _i, _i, _i, _p, _sz, _p]
        lib.cudaopt_hgemm_wgmma_streamk.restype = _i
        lib.cudaopt_wgmma_has_streamk.argtypes = [_i]
        lib.cudaopt_wgmma_has_streamk.restype = _i
        lib.cudaopt_wgmma_streamk_workspace_bytes.argtypes = [_i, _i]
        lib.cudaopt_wgmma_streamk_workspace_bytes.restype = _sz
        lib.cudaopt_wgmma_sk_item.argtypes = [_i, _i, _i, _i, _i, _i, ctypes.POINTER(_i)]
        lib.cudaopt_wgmma_sk_item.restype = _i
        lib.cudaopt_wgmma_sk_tail_splits.argtypes = [_i, _i, _i, _i]
        lib.cudaopt_wgmma_sk_tail_splits.restype = _i
        lib.cudaopt_wgmma_set_streamk_max_splits.argtypes = [_i]
        lib.cudaopt_wgmma_set_streamk_max_splits.restype = None
    for name in ("cudaopt_hgemm_set_pdl", "cudaopt_wgmma_set_pdl", "cudaopt_wgmma_set_splitk_fixup",
                 "cudaopt_hgemm_set_reduce_chunked", "cudaopt_wgmma_set_reduce_chunked",
                 "cudaopt_wgmma_set_reduce_fixed"):
        getattr(lib, name).argtypes = [_i]
        getattr(lib, name).restype = None
    return lib


@functools.lru_cache(maxsize=1)
def wgmma_kernels() -> ctypes.CDLL:
    """The kernel library, after the wgmma family's one-time setup (shared-memory limits, the
    driver's cuTensorMapEncodeTiled); separate so that the mma family works where this fails."""
    return init_wgmma(kernels())


def init_wgmma(lib: ctypes.CDLL) -> ctypes.CDLL:
    """The wgmma family's one-time setup of a loaded kernel library (once per library)."""
    _check("cudaopt_wgmma_init (-2: no cuTensorMapEncodeTiled in the driver)", lib.cudaopt_wgmma_init())
    return lib


@functools.lru_cache(maxsize=1)
def blas() -> ctypes.CDLL:
    import torch  # noqa: F401

    result = _build.build(with_blas=True)
    if result.blas_lib is None:
        raise GemmError(f"cuBLAS baseline library unavailable: {result.blas_error}")
    lib = ctypes.CDLL(str(result.blas_lib))
    lib.cudaopt_cublas_gemm.argtypes = [_p, _p, _p, _i, _i, _i, _i, _i, _p]
    lib.cudaopt_lt_plan_create.argtypes = [_i, _i, _i, _i, _sz, _i, ctypes.POINTER(_i)]
    lib.cudaopt_lt_plan_create.restype = _p
    lib.cudaopt_lt_plan_destroy.argtypes = [_p]
    lib.cudaopt_lt_run.argtypes = [_p, _i, _p, _p, _p, _p, _sz, _p]
    lib.cudaopt_lt_algo_info.argtypes = [_p, _i, ctypes.POINTER(ctypes.c_longlong)]
    _check("cudaopt_blas_init", lib.cudaopt_blas_init())
    return lib


def counter_bytes(m: int, n: int) -> int:
    """The split-K workspace's first block: the wgmma fixup's tile counters (cudaopt_wgmma_counter_bytes),
    which must be zero when a call starts and which every completed call leaves zero."""
    if m <= 0 or n <= 0:
        return 0
    count = (-(-m // 64) + 2) * (-(-n // 64) + 1)
    return -(-count * 4 // 256) * 256


def workspace_bytes(m: int, n: int, splits: int) -> int:
    """Split-K workspace (cudaopt_wgmma_workspace_bytes): the counter block, then fp32 partials
    [splits][M][N] (the mma path uses the partials part only); 0 for one split. Allocate it with
    `new_workspace` (counters zeroed) and reuse it: calls leave the counters zero."""
    return counter_bytes(m, n) + splits * m * n * 4 if splits > 1 else 0


def new_workspace(m: int, n: int, splits: int, device=None):
    """A split-K workspace for (m, n, splits) on `device` (default: the current CUDA device) with its
    counter block zeroed; None where one split needs none."""
    import torch

    nbytes = workspace_bytes(m, n, splits)
    if not nbytes:
        return None
    ws = torch.empty(nbytes // 4, dtype=torch.float32, device=device or "cuda")
    ws[: counter_bytes(m, n) // 4].zero_()
    return ws


def launch_ours(a_ptr: int, b_ptr: int, c_ptr: int, m: int, n: int, k: int, config: int, splits: int,
                ws_ptr: int, ws_bytes: int, stream: int, lda: int | None = None, ldb: int | None = None,
                ldc: int | None = None, lib: ctypes.CDLL | None = None) -> None:
    """Row-major C = A @ B with our kernel `config`; all pointers are device addresses. lda / ldb / ldc:
    the row strides in elements (multiples of 8; default K, N, N: contiguous). lib: another build of the kernel
    library (load_kernels, then init_wgmma), for A/B timing; default the package's own."""
    cfg = KERNEL_CONFIGS[config]
    lda, ldb, ldc = lda or k, ldb or n, ldc or n
    if cfg.kind == "wgmma":
        if splits != 1 and cfg.max_splits == 1:
            raise GemmError(f"{cfg.label} does not split K (splits={splits}); use splits=1")
        if splits != 1 and not 1 <= splits <= min(cfg.max_splits, wgmma_k_blocks(k)):
            raise GemmError(f"{cfg.label}: splits={splits} outside 1..{min(cfg.max_splits, wgmma_k_blocks(k))} "
                            f"(at most {cfg.max_splits}, and no more than the {wgmma_k_blocks(k)} k-blocks of K={k})")
        if splits == 1:  # the plain kernel, as before split-K existed
            status = (lib or wgmma_kernels()).cudaopt_hgemm_wgmma(a_ptr, b_ptr, c_ptr, m, n, k, lda, ldb, ldc,
                                                                  cfg.index, stream or None)
        else:
            status = (lib or wgmma_kernels()).cudaopt_hgemm_wgmma_splitk(a_ptr, b_ptr, c_ptr, m, n, k, lda, ldb, ldc,
                                                                         cfg.index, splits, ws_ptr or None, ws_bytes,
                                                                         stream or None)
    else:  # the mma path's partials follow the counter block (which only the wgmma fixup uses)
        skip = counter_bytes(m, n) if ws_ptr and splits > 1 else 0
        status = (lib or kernels()).cudaopt_hgemm(a_ptr, b_ptr, c_ptr, m, n, k, lda, ldb, ldc, cfg.index, splits,
                                                  (ws_ptr + skip) or None, max(ws_bytes - skip, 0), stream or None)
    if status != 0:
        _check(f"cudaopt_hgemm(M={m}, N={n}, K={k}, config={config}, splits={splits})", status)


def has_bt(config: int, splits: int = 1, lib: ctypes.CDLL | None = None) -> bool:
    """True where wgmma config `config` has a B^T twin that runs `splits` (launch_ours_bt takes it): the one-CTA
    generation-2 configs listed in hgemm_wgmma.cu's kBtTwins, split-K where the config has a split-K kernel.
    Host-only (no GPU needed)."""
    mask = _bt_mask_own(config) if lib is None else _bt_mask(config, lib)
    return bool(mask & (1 if splits == 1 else 2))


def _bt_mask(config: int, lib: ctypes.CDLL) -> int:
    cfg = KERNEL_CONFIGS[config] if 0 <= config < len(KERNEL_CONFIGS) else None
    if cfg is None or cfg.kind != "wgmma" or not hasattr(lib, "cudaopt_wgmma_has_bt"):
        return 0
    return int(lib.cudaopt_wgmma_has_bt(cfg.index))


@functools.lru_cache(maxsize=None)
def _bt_mask_own(config: int) -> int:  # (the package's library: asked once per config, not on every hgemm call)
    return _bt_mask(config, kernels())


def launch_ours_bt(a_ptr: int, bt_ptr: int, c_ptr: int, m: int, n: int, k: int, config: int, splits: int,
                   ws_ptr: int, ws_bytes: int, stream: int, lda: int | None = None, ldbt: int | None = None,
                   ldc: int | None = None, lib: ctypes.CDLL | None = None) -> None:
    """Row-major C = A @ B with B given as its transpose Bt (N x K row-major, row stride ldbt: the TN layout, e.g.
    an nn.Linear weight) through config's B^T twin (session 39); splits > 1 writes fp32 partials into the workspace
    (workspace_bytes(m, n, splits)) for the reduce kernel. Raises GemmError where the config has no such twin (has_bt)
    or the arguments are refused."""
    cfg = KERNEL_CONFIGS[config]
    if not has_bt(config, splits, lib):
        raise GemmError(f"{cfg.label} has no B^T twin for splits={splits}; the configs with one: _lib.has_bt")
    lda, ldbt, ldc = lda or k, ldbt or k, ldc or n
    status = (lib or wgmma_kernels()).cudaopt_hgemm_wgmma_bt(a_ptr, bt_ptr, c_ptr, m, n, k, lda, ldbt, ldc, cfg.index,
                                                             splits, ws_ptr or None, ws_bytes, stream or None)
    if status != 0:
        _check(f"cudaopt_hgemm_wgmma_bt(M={m}, N={n}, K={k}, config={config}, splits={splits})", status)


def has_streamk(config: int, lib: ctypes.CDLL | None = None) -> bool:
    """True where wgmma config `config` has a stream-K twin (session 47: hgemm_wgmma.cu's kSkTwins, cooperative
    one-CTA configs). Host-only (no GPU needed)."""
    cfg = KERNEL_CONFIGS[config] if 0 <= config < len(KERNEL_CONFIGS) else None
    lib = lib or kernels()
    if cfg is None or cfg.kind != "wgmma" or not hasattr(lib, "cudaopt_wgmma_has_streamk"):
        return False
    return bool(lib.cudaopt_wgmma_has_streamk(cfg.index))


def streamk_workspace_bytes(config: int, sms: int, lib: ctypes.CDLL | None = None) -> int:
    """Bytes of workspace a stream-K launch of `config` needs on a GPU of `sms` SMs: zeroed fixup counters, then one
    BM x BN fp32 partial slot per SM (about 17 MB for 128 x 256 tiles on 132 SMs); 0 without a twin."""
    if not has_streamk(config, lib):
        return 0
    return int((lib or kernels()).cudaopt_wgmma_streamk_workspace_bytes(KERNEL_CONFIGS[config].index, sms))


def new_streamk_workspace(config: int, device=None):
    """A stream-K workspace for `config` on `device` (default: the current CUDA device), all zero (calls leave its
    counters zero, so reuse it)."""
    import torch

    dev = torch.device(device or "cuda")
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    nbytes = streamk_workspace_bytes(config, sms)
    if not nbytes:
        raise GemmError(f"{KERNEL_CONFIGS[config].label} has no stream-K twin; the configs with one: _lib.has_streamk")
    return torch.zeros(nbytes // 4, dtype=torch.float32, device=dev)


def set_streamk_max_splits(most: int, lib: ctypes.CDLL | None = None) -> None:
    """The most K splits a stream-K launch cuts a tail tile into (default 8; a measurement setting: the last split
    reads every split's partial). A CUDA graph keeps the count its launches were captured with."""
    if not 1 <= most <= 64:
        raise GemmError(f"stream-K splits {most}: use 1..64")
    (lib or kernels()).cudaopt_wgmma_set_streamk_max_splits(most)


def launch_ours_streamk(a_ptr: int, b_ptr: int, c_ptr: int, m: int, n: int, k: int, config: int, ws_ptr: int,
                        ws_bytes: int, stream: int, lda: int | None = None, ldb: int | None = None,
                        ldc: int | None = None, lib: ctypes.CDLL | None = None) -> None:
    """Row-major C = A @ B through config's stream-K twin (session 47): the plain kernel's tiles, the last partial
    wave's tiles split along K over the SMs the plain kernel leaves idle, summed through the workspace
    (new_streamk_workspace). Raises GemmError where the config has no twin or the arguments are refused."""
    cfg = KERNEL_CONFIGS[config]
    if not has_streamk(config, lib):
        raise GemmError(f"{cfg.label} has no stream-K twin; the configs with one: _lib.has_streamk")
    lda, ldb, ldc = lda or k, ldb or n, ldc or n
    status = (lib or wgmma_kernels()).cudaopt_hgemm_wgmma_streamk(a_ptr, b_ptr, c_ptr, m, n, k, lda, ldb, ldc,
                                                                  cfg.index, ws_ptr or None, ws_bytes, stream or None)
    if status != 0:
        _check(f"cudaopt_hgemm_wgmma_streamk(M={m}, N={n}, K={k}, config={config})", status)


class LtPlan:
    """A cuBLASLt plan for one shape and layout (0: NN, 1: TN) with its heuristic's algorithms."""

    def __init__(self, m: int, n: int, k: int, layout: int, workspace_bytes: int, max_algos: int = 16):
        count = _i(0)
        self._lib = blas()
        self.handle = self._lib.cudaopt_lt_plan_create(m, n, k, layout, workspace_bytes, max_algos,
                                                       ctypes.byref(count))
        if not self.handle:
            raise GemmError(f"cuBLASLt found no algorithm for M={m} N={n} K={k} layout={layout} (status {-count.value})")
        self.count = count.value

    def run(self, algo: int, a_ptr: int, b_ptr: int, c_ptr: int, ws_ptr: int, ws_bytes: int, stream: int) -> None:
        _check("cublasLtMatmul", self._lib.cudaopt_lt_run(self.handle, algo, a_ptr, b_ptr, c_ptr,
                                                          ws_ptr, ws_bytes, stream or None))

    # cublasLtMatmulAlgoConfigAttributes_t 0..8, then the two heuristic-result fields (cudaopt_lt_algo_info)
    ALGO_FIELDS = ("algo_id", "tile", "splitk", "reduction", "swizzle", "custom", "stages", "inner", "cluster",
                   "workspace", "waves_x1000")

    def algo_info(self, algo: int) -> dict[str, int]:
        """What algorithm `algo` is (raw cuBLASLt enum values; -1 where unreadable)."""
        out = (ctypes.c_longlong * len(self.ALGO_FIELDS))()
        _check("cudaopt_lt_algo_info", self._lib.cudaopt_lt_algo_info(self.handle, algo, out))
        return dict(zip(self.ALGO_FIELDS, out))

    def close(self) -> None:
        if self.handle:
            self._lib.cudaopt_lt_plan_destroy(self.handle)
            self.handle = None
