"""The CUDA-L2 shape grid and its work classes.

The grid is every (M, N, K) drawn from ten sizes, 1,000 shapes. A work class groups shapes by
2*M*N*K (floating-point operations) in decades, as the reports do.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from pathlib import Path

GRID_SIZES = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288, 16384)
# Upper edges of the 2MNK classes; the last class is open.
WORK_CLASS_EDGES = (1e8, 1e9, 1e10, 1e11, 1e12)
WORK_CLASS_NAMES = ("<1e8", "1e8-1e9", "1e9-1e10", "1e10-1e11", "1e11-1e12", ">=1e12")
Shape = tuple[int, int, int]


def grid_shapes(sizes: tuple[int, ...] = GRID_SIZES) -> list[Shape]:
    return list(itertools.product(sizes, repeat=3))


def flops(shape: Shape) -> float:
    m, n, k = shape
    return 2.0 * m * n * k


def work_class(shape: Shape) -> str:
    f = flops(shape)
    for edge, name in zip(WORK_CLASS_EDGES, WORK_CLASS_NAMES):
        if f < edge:
            return name
    return WORK_CLASS_NAMES[-1]


def log2_mnk(shape: Shape) -> float:
    return math.log2(shape[0]) + math.log2(shape[1]) + math.log2(shape[2])


def sample_shapes(count: int, seed: int = 0, sizes: tuple[int, ...] = GRID_SIZES) -> list[Shape]:
    """A reproducible subset stratified over the work classes (round-robin), for quick GPU runs."""
    rng = random.Random(seed)
    by_class: dict[str, list[Shape]] = {name: [] for name in WORK_CLASS_NAMES}
    for s in grid_shapes(sizes):
        by_class[work_class(s)].append(s)
    for shapes in by_class.values():
        rng.shuffle(shapes)
    return _round_robin(by_class, count)


def _round_robin(by_class: dict[str, list[Shape]], count: int) -> list[Shape]:
    """Up to `count` shapes taken one class at a time in class order, each from the end of its list
    (the lists are consumed), sorted by FLOPs."""
    out: list[Shape] = []
    while len(out) < count and any(by_class.values()):
        for name in WORK_CLASS_NAMES:
            if by_class[name] and len(out) < count:
                out.append(by_class[name].pop())
    return sorted(out, key=flops)


def offgrid_shapes(count: int, seed: int = 0, lo: int = GRID_SIZES[0], hi: int = GRID_SIZES[-1]) -> list[Shape]:
    """A reproducible set of shapes off the grid (at least one size not a grid size), each size
    log-uniform in [lo, hi] and a multiple of 8 (the wgmma kernels need N and K so), stratified over
    the work classes like sample_shapes: how the shipped table's neighbour choices do on the shapes
    users bring, which the grid does not hold."""
    rng = random.Random(seed)
    on_grid = set(GRID_SIZES)
    by_class: dict[str, list[Shape]] = {name: [] for name in WORK_CLASS_NAMES}
    seen: set[Shape] = set()
    for _ in range(40 * count):
        s = tuple(min(hi, max(lo, 8 * round(2 ** rng.uniform(math.log2(lo), math.log2(hi)) / 8)))
                  for _ in range(3))
        if s in seen or all(v in on_grid for v in s):
            continue
        seen.add(s)
        by_class[work_class(s)].append(s)
    return _round_robin(by_class, count)


def parse_shapes(spec: str) -> list[Shape]:
    """'grid', 'sample:N[:seed]', 'offgrid:N[:seed]', a file of 'M N K' lines (',' or 'x' also
    separate), or 'MxNxK,...'."""
    if spec == "grid":
        return grid_shapes()
    if spec.startswith(("sample:", "offgrid:")):
        parts = spec.split(":")
        try:
            count, seed = int(parts[1]), int(parts[2]) if len(parts) > 2 else 0
        except (IndexError, ValueError):
            raise ValueError(f"shapes {spec!r}: use {parts[0]}:N or {parts[0]}:N:SEED with integers") from None
        return (sample_shapes if parts[0] == "sample" else offgrid_shapes)(count, seed)
    # An inline list is recognised before any file look-up: a few hundred shapes make a string longer
    # than a file name may be (Path.exists raises 'File name too long').
    inline = re.fullmatch(r"\s*\d+x\d+x\d+(\s*[,;]\s*\d+x\d+x\d+)*\s*[,;]?\s*", spec)
    if not inline and Path(spec).exists():
        text = Path(spec).read_text()
    elif "x" in spec:
        text = spec.replace(",", "\n").replace(";", "\n")
    else:
        raise ValueError(f"shapes {spec!r}: use 'grid', 'sample:N', 'offgrid:N', a file of 'M N K' lines, or "
                         "'64x64x64,128x128x128'")
    shapes = []
    for line in text.splitlines():
        line = line.split("#")[0].replace(",", " ").replace("x", " ").strip()
        if not line:
            continue
        vals = [int(v) for v in line.split()]
        if len(vals) != 3 or min(vals) <= 0:
            raise ValueError(f"bad shape line {line!r}: expected three positive integers M N K")
        shapes.append((vals[0], vals[1], vals[2]))
    return shapes
