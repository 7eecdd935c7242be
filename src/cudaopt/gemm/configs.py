"""The kernel family's configurations, mirrored from csrc/hgemm_mma.cu (the config id is the index).

The Python mirror lets the dispatcher's heuristic and the tests run without a GPU; `_lib` checks it
against the compiled library at load time, so the two cannot drift apart silently.
"""

from __future__ import annotations

from dataclasses import dataclass

NUM_SMS_H200 = 132


@dataclass(frozen=True)
class KernelConfig:
    id: int
    bm: int
    bn: int
    bk: int
    warps_m: int
    warps_n: int
    stages: int

    @property
    def threads(self) -> int:
        return self.warps_m * self.warps_n * 32

    @property
    def smem_bytes(self) -> int:
        pad = 8  # halves of padding per shared-memory row, as in the kernel
        return self.stages * (self.bm * (self.bk + pad) + self.bk * (self.bn + pad)) * 2

    def tiles(self, m: int, n: int) -> int:
        return -(-m // self.bm) * -(-n // self.bn)

    @property
    def label(self) -> str:
        return f"mma{self.bm}x{self.bn}x{self.bk}_w{self.warps_m}x{self.warps_n}_s{self.stages}"


_TABLE = [
    (128, 128, 32, 2, 2, 4),
    (128, 256, 32, 2, 4, 3),
    (256, 128, 32, 4, 2, 3),
    (128, 128, 64, 2, 2, 3),
    (64, 128, 32, 2, 2, 4),
    (128, 64, 32, 2, 2, 4),
    (64, 64, 32, 2, 2, 4),
    (64, 64, 64, 2, 2, 3),
    (32, 64, 64, 2, 2, 4),
    (64, 256, 32, 2, 4, 3),
    (256, 128, 32, 4, 2, 4),
    (128, 256, 64, 2, 4, 3),
    (128, 128, 32, 2, 4, 4),
    (64, 128, 64, 2, 2, 4),
]
KERNEL_CONFIGS: tuple[KernelConfig, ...] = tuple(KernelConfig(i, *row) for i, row in enumerate(_TABLE))
SPLIT_CHOICES = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class Choice:
    """What the dispatcher runs for one shape: our kernel (config, splits) or a labelled fallback."""

    backend: str  # "ours" or "torch" (cuBLAS through torch.matmul, where ours lose)
    config: int = 0
    splits: int = 1

    def label(self) -> str:
        if self.backend != "ours":
            return f"fallback:{self.backend}"
        return KERNEL_CONFIGS[self.config].label + (f"_splitk{self.splits}" if self.splits > 1 else "")


def candidate_choices(m: int, n: int, k: int, num_sms: int = NUM_SMS_H200) -> list[Choice]:
    """The configurations worth timing for one shape: tiles not far larger than the matrix, and
    split-K only where the tile grid leaves the SMs idle and each split keeps at least 128 of K."""
    out = []
    for cfg in KERNEL_CONFIGS:
        if cfg.bm > max(2 * m, 32) or cfg.bn > max(2 * n, 64):
            continue
        tiles = cfg.tiles(m, n)
        for s in SPLIT_CHOICES:
            if s > 1 and (tiles * s > 4 * num_sms or k // s < 128 or tiles >= num_sms):
                continue
            out.append(Choice("ours", cfg.id, s))
    return out
