"""Per-shape kernel choice: the tuned table shipped with the package, and a heuristic otherwise.

The table (`tuned_h200.json` on the H200) maps exact (M, N, K) to a Choice (ours, or a labelled fallback: torch.matmul
or one cuBLASLt algorithm); a shape it lacks gets the choice of the nearest tuned shape in log2 space when
one lies within a factor of 4 per dimension (its split count refitted to this shape's K and tile count; a
cuBLASLt fallback's becomes torch.matmul's), and the tile-count heuristic beyond that. With the
shipped grid (64..16384 per dimension) that covers every dimension from 16 to 65536. Untuned shapes whose
K or N is not a multiple of 64 go to torch from 1e8 FLOP up (`misaligned_rows`), unless their operands'
rows are padded to 64 elements (`cudaopt.gemm.pad_rows`). The shipped table is the one whose "device" names the GPU
(`tuned_h200.json`, `tuned_h100.json`; `use_device`, which hgemm's first call runs), else the H200's with a warning;
CUDAOPT_GEMM_TABLE names a table of the user's own (`cudaopt tune-gemm --out T`) to read instead.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
from pathlib import Path

from cudaopt.gemm.configs import KERNEL_CONFIGS, NUM_SMS_H200, Choice, wgmma_k_blocks

DEFAULT_TABLE = Path(__file__).resolve().parent / "tuned_h200.json"
TABLE_ENV = "CUDAOPT_GEMM_TABLE"  # a table of the user's own (`cudaopt tune-gemm --out T`) in place of the shipped one
BACKENDS = ("ours", "torch", "cublaslt")
Shape = tuple[int, int, int]


def heuristic_choice(m: int, n: int, k: int, num_sms: int = NUM_SMS_H200) -> Choice:
    """Largest 4- or 8-warp tile that still gives every SM a block; split K when even 64x64 tiles
    leave most SMs idle and K is long enough to share."""
    by_area = sorted(KERNEL_CONFIGS, key=lambda c: (-(c.bm * c.bn), c.bk, -c.stages))
    # Untuned shapes stay on the mma.sync family; wgmma configs run only where the tuned table says.
    preferred = [c for c in by_area if c.kind == "mma" and c.bk == 32 and (c.bm, c.bn) in
                 {(256, 128), (128, 256), (128, 128), (64, 128), (128, 64), (64, 64)}]
    for cfg in preferred:
        if cfg.tiles(m, n) >= num_sms:
            return Choice("ours", cfg.id, 1)
    small = next(c for c in KERNEL_CONFIGS if c.kind == "mma" and (c.bm, c.bn, c.bk) == (64, 64, 32))
    tiles = small.tiles(m, n)
    splits = 1
    while splits < 16 and tiles * splits * 2 <= 2 * num_sms and k // (splits * 2) >= 256:
        splits *= 2
    return Choice("ours", small.id, splits)


BOTH_LAYOUTS = ("nn", "bt")  # (session 49) the table's "both_layouts": which B hgemm reads when handed both


def entry_choice(e: dict) -> Choice:
    """What a table entry tells the dispatcher to run; ValueError for a backend it cannot run."""
    backend = e.get("backend", "ours")
    if backend not in BACKENDS:
        raise ValueError(f"table entry {e.get('m')}x{e.get('n')}x{e.get('k')}: backend {backend!r} is not one of "
                         f"{', '.join(BACKENDS)}; retune the shape or fix the table")
    algo = int(e.get("lt_algo", -1)) if backend == "cublaslt" else -1
    if backend == "cublaslt" and algo < 0:
        raise ValueError(f"table entry {e['m']}x{e['n']}x{e['k']}: backend 'cublaslt' needs lt_algo >= 0")
    bt_algo = int(e.get("bt_lt_algo", -1))
    if "bt_lt_algo" in e and bt_algo < 0:
        raise ValueError(f"table entry {e['m']}x{e['n']}x{e['k']}: bt_lt_algo must be >= 0 (or absent)")
    streamk = e.get("streamk", False)
    if streamk not in (True, False):
        raise ValueError(f"table entry {e['m']}x{e['n']}x{e['k']}: streamk must be true or false")
    both = e.get("both_layouts", "nn")
    if both not in BOTH_LAYOUTS:
        raise ValueError(f"table entry {e['m']}x{e['n']}x{e['k']}: both_layouts must be one of "
                         f"{', '.join(BOTH_LAYOUTS)} (or absent)")
    config, splits = int(e.get("config", 0)), int(e.get("splits", 1))
    if streamk and (backend != "ours" or splits != 1 or not 0 <= config < len(KERNEL_CONFIGS)
                    or not KERNEL_CONFIGS[config].has_streamk_twin):
        raise ValueError(f"table entry {e['m']}x{e['n']}x{e['k']}: streamk needs our kernel, splits 1 and a config "
                         f"with a stream-K twin (KernelConfig.has_streamk_twin)")
    return Choice(backend, config, splits, algo, bt_algo, streamk, both == "bt")


def parse_table(data: dict) -> dict[Shape, Choice]:
    return {(int(e["m"]), int(e["n"]), int(e["k"])): entry_choice(e) for e in data.get("entries", [])}


_device_table: Path | None = None  # the shipped table of the GPU hgemm runs on (use_device); None: DEFAULT_TABLE


def table_path(path: str | None = None) -> Path:
    """The table the dispatcher reads: path, else $CUDAOPT_GEMM_TABLE (which must exist), else the shipped table of
    this GPU (`use_device`, which hgemm's first call runs), else the H200's."""
    if path:
        return Path(path)
    env = os.environ.get(TABLE_ENV)
    if env:
        if not Path(env).is_file():
            raise FileNotFoundError(f"{TABLE_ENV}={env}: no such table; give a table written by `cudaopt tune-gemm` "
                                    f"or unset {TABLE_ENV} to use the shipped one")
        return Path(env)
    return _device_table or DEFAULT_TABLE


def shipped_tables(folder: Path | None = None) -> dict[str, Path]:
    """The tables shipped with the package (tuned_*.json beside this module), by the GPU each names in its "device"
    field; the first in name order wins a tie."""
    found: dict[str, Path] = {}
    for p in sorted((folder or DEFAULT_TABLE.parent).glob("tuned_*.json")):
        try:
            device = _table_json(str(p)).get("device")
        except (OSError, ValueError):  # (a broken file is not a table; the one in use fails loudly when read)
            continue
        if isinstance(device, str) and device.strip():
            found.setdefault(device.strip(), p)
    return found


def use_device(device: str, folder: Path | None = None) -> Path | None:
    """Make the shipped table tuned on `device` (torch.cuda.get_device_name()) the dispatcher's, memos cleared; None,
    and the H200's table in use, when no shipped table names that GPU."""
    global _device_table
    _device_table = shipped_tables(folder).get(device.strip())
    load_table.cache_clear()
    _choose_shipped.cache_clear()
    return _device_table


@functools.lru_cache(maxsize=8)
def _table_json(path: str) -> dict:
    """A table file's JSON, parsed once a process: hgemm's first call reads the chosen table three times (shipped_tables,
    table_device, load_table), ~6 ms a parse."""
    return json.loads(Path(path).read_text())


@functools.lru_cache(maxsize=4)
def load_table(path: str | None = None) -> dict[Shape, Choice]:
    """The table at path (default `table_path()`, read once a process), {} when the shipped one is missing."""
    p = table_path(path)
    if not p.exists():
        return {}
    return parse_table(_table_json(str(p)))


def table_digest(path: str | None = None) -> str:
    """A short fingerprint of a table's bytes (default `table_path()`): bench records carry it, so a resumed run
    never mixes times measured with two tables. "none" when the table is missing (the dispatcher's defaults)."""
    p = table_path(path)
    if not p.exists():
        return "none"
    return hashlib.sha256(p.read_bytes()).hexdigest()[:12]


def table_device(path: str | None = None) -> str | None:
    """The GPU a table (default `table_path()`) was tuned on, its "device" field; None when the table or field is missing."""
    p = table_path(path)
    if not p.exists():
        return None
    return _table_json(str(p)).get("device") or None


def foreign_device_note(device: str, tuned_on: str | None) -> str | None:
    """One line for a user whose GPU is not the one the table was tuned on, None when it is (or unknown).
    The table's cuBLASLt fallbacks name an index in cuBLASLt's per-GPU algorithm list and its choices were timed on
    that GPU: on an H100 (session 44) the H200 table left 131 of 1,000 shapes under 0.98x cuBLASLt autotuned,
    against 40 on the H200, the slowest at 0.71x."""
    if not tuned_on or device.strip() == tuned_on.strip():
        return None
    return (f"cudaopt.gemm: the kernel table was tuned on {tuned_on}, this GPU is {device}; results are correct but "
            f"some shapes may run slower than cuBLAS here: `cudaopt tune-gemm --out T` tunes for this GPU, then set "
            f"{TABLE_ENV}=T")


def fit_splits(choice: Choice, k: int) -> Choice:
    """A choice made for another K, made launchable for this one: a wgmma config splits K into at
    most one split per 64-wide k-block (the launcher refuses more), and generation 1 not at all.
    Halves the split count until it fits. mma.sync takes any split count (empty splits add zeros)."""
    if choice.backend != "ours" or not 0 <= choice.config < len(KERNEL_CONFIGS):
        return choice
    cfg = KERNEL_CONFIGS[choice.config]
    if cfg.kind != "wgmma":
        return choice
    splits = choice.splits
    while splits > 1 and splits > min(cfg.max_splits, wgmma_k_blocks(k)):
        splits //= 2
    return choice if splits == choice.splits else dataclasses.replace(choice, splits=max(splits, 1))


NEIGHBOUR_MAX_LOG2 = 2.0  # a tuned shape within a factor of 4 per dimension lends its choice


def refit(choice: Choice, m: int, n: int, k: int, num_sms: int = NUM_SMS_H200) -> Choice:
    """A neighbour's choice made launchable and sensible for (m, n, k): splits fitted to K's k-blocks
    (`fit_splits`), then halved while tiles x splits exceed 4 x #SMs, the most the tuner ever times
    (a neighbour with fewer tiles split K to fill the SMs; a larger shape has the tiles already)."""
    choice = fit_splits(choice, k)
    if choice.backend != "ours" or not 0 <= choice.config < len(KERNEL_CONFIGS):
        return choice
    tiles = KERNEL_CONFIGS[choice.config].tiles(m, n)
    splits = choice.splits
    while splits > 1 and tiles * splits > 4 * num_sms:
        splits //= 2
    return choice if splits == choice.splits else Choice(choice.backend, choice.config, splits)


def choose(m: int, n: int, k: int, table: dict[Shape, Choice] | None = None,
           strides: tuple[int, int, int] | None = None) -> Choice:
    """The table's choice for (m, n, k), its nearest tuned neighbour's, or the heuristic's. With the
    shipped table (table=None) answers are memoised per shape: the neighbour search walks all 1,000
    entries (~0.3 ms of Python), which hgemm would otherwise pay on every call of an off-grid shape.
    strides: the operands' row strides (lda, ldb, ldc) in elements, default (k, n, n) (contiguous); rows
    padded to a multiple of 64 (`pad_rows`) keep an untuned misaligned shape on our kernels."""
    strides = strides or (k, n, n)
    if table is None:
        return _choose_shipped(m, n, k, strides)
    return _choose(m, n, k, table, strides)


@functools.lru_cache(maxsize=65536)
def _choose_shipped(m: int, n: int, k: int, strides: tuple[int, int, int]) -> Choice:
    return _choose(m, n, k, load_table(), strides)


def _choose(m: int, n: int, k: int, table: dict[Shape, Choice], strides: tuple[int, int, int]) -> Choice:
    hit = table.get((m, n, k))
    if hit is not None:
        return fit_splits(hit, k)
    best, best_d = None, math.inf
    for (tm, tn, tk), choice in table.items():
        d = max(abs(math.log2(tm / m)), abs(math.log2(tn / n)), abs(math.log2(tk / k)))
        if d < best_d:
            best, best_d = choice, d
    if best is not None and best_d <= NEIGHBOUR_MAX_LOG2:
        if best.backend == "cublaslt":  # its algorithm index names an entry of another shape's list
            best = Choice("torch", best.config, best.splits)
        best = dataclasses.replace(best, bt_algo=-1, both_bt=False)  # (so does its TN one; the layout a caller
        # handing both should read was measured on that shape only)
        choice = refit(best, m, n, k)  # a neighbour's split count may not suit this K or tile count
    else:
        choice = heuristic_choice(m, n, k)
    if choice.backend == "ours" and misaligned_rows(m, n, k, strides):
        return Choice("torch", choice.config, choice.splits)  # the config stays on record, as a tuned fallback's
    return choice


ROW_ALIGN = 64  # elements: 128-byte rows, one TMA box row and one swizzle span
MISALIGNED_MIN_FLOP = 1e8


def misaligned_rows(m: int, n: int, k: int, strides: tuple[int, int, int] | None = None) -> bool:
    """True where our kernels lose to cuBLAS for want of 128-byte-aligned operand rows: A's or B's row
    stride (lda, ldb of strides = (lda, ldb, ldc); default K, N) not a multiple of 64 halves on a shape
    of at least 1e8 FLOP. C's row stride does not matter: with A and B padded and C packed the kernels
    ran as fast as with all three padded (1.05x torch on four bases with every dimension minus 8). Session 14
    measured it (benchmarks/gemm_alignment.py, H200): K - 8 cost ours 0.915x, N - 8 0.854x and all
    three 0.657x of torch (geomean over six bases, 0.58x at 8192^3), while the same operands in storage
    with rows padded to 64 elements ran at 1.03-1.07x; ragged tiles alone (M - 8, N - 64, K - 64) cost
    nothing. Below 1e8 FLOP launch latency dominates and ours still won 85% of such shapes. The tuned
    grid is all multiples of 64, so this only turns neighbour and heuristic choices into fallbacks; a
    shape the user tuned exactly keeps what the tuner measured."""
    lda, ldb, _ = strides or (k, n, n)
    return (lda % ROW_ALIGN != 0 or ldb % ROW_ALIGN != 0) and 2.0 * m * n * k >= MISALIGNED_MIN_FLOP
