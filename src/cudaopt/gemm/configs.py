"""The kernel family's configurations, mirrored from the CUDA sources.

Two kinds share one id space (the id is the index in KERNEL_CONFIGS, stored in the tuned table):
- "mma": mma.sync + cp.async (csrc/hgemm_mma.cu), ids 0..13; `index` = position in that file's table.
- "wgmma": Hopper TMA + wgmma, warp-specialised and persistent (csrc/hgemm_wgmma.cu), appended
  after them; `index` = position in that file's table. `schedule` 0 = generation 1 (ids 14-17, no
  split-K), 1 = cooperative with a pipelined mainloop and TMA-store epilogue, 2 = ping-pong (each
  consumer warpgroup owns whole bm x bn tiles, alternating). Generation 2 splits K: the persistent
  blocks walk work items = tiles x splits (`work_item`), each writing an fp32 partial, summed into C
  by a second kernel; `split_choices` is where the tuner times that. `cluster_m` 2 (ids 23-24):
  the generation-2 kernel in 2x1 thread-block clusters along M: the two CTAs of a cluster compute
  vertically adjacent tiles and share B through TMA multicast (`cluster_tile`); no split-K; offered
  only where tiles >= CLUSTER_MIN_TILES_PER_SM x #SMs (`cluster_offered`).

The Python mirror lets the dispatcher's heuristic and the tests run without a GPU; `_lib` checks it
against the compiled library at load time, so the two cannot drift apart silently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

NUM_SMS_H200 = 132
PAIR_ALONG_N = 5  # KernelConfig.b_mc of the pair along N (kPairAlongN in hgemm_wgmma.cu)
ALONG_N_TURN = 6  # ... of a cluster along N whose CTAs multicast A's whole box in turn (kAlongNTurn, session 24)


@dataclass(frozen=True)
class KernelConfig:
    id: int
    bm: int
    bn: int
    bk: int
    warps_m: int
    warps_n: int
    stages: int
    kind: str = "mma"  # "mma" (hgemm_mma.cu) or "wgmma" (hgemm_wgmma.cu)
    index: int = -1  # position in its kind's table in the CUDA source (the C-side config id)
    consumers: int = 0  # wgmma: consumer warpgroups (each owns bm / consumers rows, or whole tiles)
    schedule: int = 0  # wgmma: SCHED_* below
    cluster_m: int = 1  # wgmma generation 2: CTAs per thread-block cluster (2: pairs; 4: quads, session 24)
    epi_chunks: int = 0  # wgmma generation 2: C staging buffers of 64 columns per consumer (0: whole slab)
    csplit: bool = False  # wgmma generation 2: splits > 1 run as cluster split-K (2..CSPLIT_MAX_SPLITS)
    splitk: bool = True  # wgmma generation 2: has a split-K kernel (False: plain only, CUDAOPT_WGMMA_CFG2P)
    shared_epi: bool = False  # wgmma ping-pong: both consumers share one set of staging chunks (CFG2PS)
    uncond: bool = False  # wgmma 2x1 cluster: consumers issue their wgmmas even where idle (CLUSTERU)
    # wgmma generation 2: a 3-D-map variant (CFG2B: B's chunks in one box where N % 64 == 0; with bk = 128,
    # CFG2B2 / CLUSTERU2: 128-deep slots, A's two k-chunks in one box)
    b3d: bool = False
    # wgmma 64-wide 2x1 pair: how B reaches the pair (session 21): 0 half its rows multicast by each CTA, 1 no
    # multicast (each CTA loads all of B; a diagnostic), 2 whole boxes multicast by the two CTAs in turn
    # (3: as 1, each CTA's slots released by its own consumers alone; 4: as 3 without cluster barriers; diagnostics)
    # 5 (session 22, PAIR_ALONG_N): the pair along N, two horizontally adjacent tiles sharing A (each CTA multicasts
    # half of A's rows, loads its own B). Session 24's quads (cluster_m 4): 0, 5 as for pairs (a quarter of the rows
    # each), 2 (CTA kt % 4 multicasts k-block kt's whole B box), 6 (ALONG_N_TURN: along N, A's whole box in turn)
    b_mc: int = 0
    # wgmma 2x1 cluster (session 21, CLUSTERL): a relaxed start barrier, no end barrier (the producer waits out
    # every slot's last release instead), idle warps leave at once; with uncond
    lean: bool = False
    # wgmma (session 24): the L2 promotion its operand maps are encoded with whatever the library setting
    # ($CUDAOPT_GEMM_L2_PROMOTION), one of _lib.L2_PROMOTIONS' names; "" (every config before 87): the setting
    l2_promo: str = ""
    # wgmma ping-pong (session 26, CUDAOPT_WGMMA_CFG2S): the operands' roles swapped, cuBLAS's frame: each m64 chain
    # covers a 64-column chunk of B and all bm rows of A as its N (bm need not be a multiple of 64: 160), C stored
    # transposed (stmatrix .trans); no split-K, no cp.async
    swap: bool = False
    # wgmma lean pair (session 28, CUDAOPT_WGMMA_CLUSTERLPK): a split-K kernel of its own (items = units x splits,
    # fp32 partials to the reduce kernel, its one-CTA twin's k ranges)
    cluster_splitk: bool = False
    # wgmma ping-pong (session 33, CUDAOPT_WGMMA_CFG2K): both consumers on each tile, alternating k-blocks (two wgmma
    # chains a tile side by side), consumer 1's fp32 partial added by consumer 0 through shared memory; plain only
    ksplit: bool = False

    @property
    def rows_per_consumer(self) -> int:
        """wgmma: C rows one consumer warpgroup accumulates and stores (the TMA store box height)."""
        return self.bm if self.schedule == SCHED_PINGPONG else self.bm // max(self.consumers, 1)

    @property
    def chunk_cols(self) -> int:
        """wgmma: columns of one chunk of B's ring slot and of C's staging (WgmmaTile2::kCols): 64 (128-byte rows,
        128B swizzle), or 32 (64-byte rows, 64B swizzle) where 64 does not divide bn (the 160-wide tiles, session
        26)."""
        return 64 if self.bn % 64 == 0 else 32

    @property
    def cpasync(self) -> bool:
        """wgmma: has the cp.async producer's instantiations (cudaopt_wgmma_set_cpasync can select them): every
        generation-2 config without clusters whose chunks are 64 columns wide (that producer writes the 128B
        swizzle)."""
        return (self.kind == "wgmma" and self.schedule != SCHED_GEN1 and self.cluster_m == 1 and self.chunk_cols == 64
                and not self.swap and not self.ksplit)

    @property
    def accumulators(self) -> int:
        """wgmma: fp32 accumulators a consumer thread holds: (m64 chains) x (their N / 2); with swapped operands the
        chains run along bn and their N is bm."""
        if self.swap:
            return self.bn // 64 * self.bm // 2
        return self.rows_per_consumer // 64 * self.bn // 2

    @property
    def epilogue_bytes(self) -> int:
        """wgmma generation 2: shared memory staging C per consumer: the whole rows_per_consumer x bn
        slab, or epi_chunks buffers of chunk_cols columns (a chunked epilogue); 0 for generation 1, which
        stores from registers."""
        if self.kind != "wgmma" or self.schedule == SCHED_GEN1:
            return 0
        chunks = self.epi_chunks or self.bn // self.chunk_cols
        return (1 if self.shared_epi else self.consumers) * self.rows_per_consumer * self.chunk_cols * 2 * chunks

    @property
    def threads(self) -> int:
        if self.kind == "wgmma":
            return (self.consumers + 1) * 128  # plus one producer warpgroup
        return self.warps_m * self.warps_n * 32

    @property
    def smem_bytes(self) -> int:
        if self.kind == "wgmma":  # 1024 alignment slack + slots + C staging + two mbarriers per slot
            return (1024 + self.stages * (self.bm * self.bk + self.bk * self.bn) * 2 + self.epilogue_bytes
                    + 16 * self.stages + (8 if self.shared_epi else 0)  # (+ the staging hand-over barrier)
                    + (16 + self.bm * self.bn * 4 if self.ksplit else 0))  # (+ the k-split's fp32 partial, aligned)
        pad = 8  # halves of padding per shared-memory row, as in the kernel
        return self.stages * (self.bm * (self.bk + pad) + self.bk * (self.bn + pad)) * 2

    @property
    def max_splits(self) -> int:
        """Most K splits the launcher accepts (cudaopt_wgmma_max_splits for wgmma): generation-1
        wgmma has no split-K kernel; a wgmma config also never takes more splits than k-blocks."""
        if self.kind == "wgmma":
            if self.csplit:
                return CSPLIT_MAX_SPLITS
            if self.cluster_splitk:
                return WGMMA_MAX_SPLITS
            return 1 if self.schedule == SCHED_GEN1 or self.cluster_m > 1 or not self.splitk else WGMMA_MAX_SPLITS
        return max(SPLIT_CHOICES)

    def tiles(self, m: int, n: int) -> int:
        return -(-m // self.bm) * -(-n // self.bn)

    @property
    def has_streamk_twin(self) -> bool:
        """A stream-K tail twin exists (hgemm_wgmma.cu's kSkTwins, found by the plain kernel: the cooperative one-CTA
        tiles below, cluster split-K configs included as they share the plain kernel); mirrored for table checks
        without a GPU, tested against the compiled cudaopt_wgmma_has_streamk."""
        return (self.kind == "wgmma" and self.schedule == SCHED_COOP_TMA and self.cluster_m == 1 and not self.b3d
                and (self.bm, self.bn, self.consumers, self.stages, self.epi_chunks) in _STREAMK_TWINS)

    @property
    def pair_along_n(self) -> bool:
        """A 2x1 cluster config whose pair is two horizontally adjacent tiles sharing A (B mode 5)."""
        return self.cluster_m > 1 and self.b_mc in (PAIR_ALONG_N, ALONG_N_TURN)

    def units(self, m: int, n: int) -> int:
        """wgmma: the persistent schedule's work units: tiles, or for a cluster config pairs of
        vertically adjacent tiles (ceil(tiles_m / 2) x tiles_n; see cluster_tile), or of horizontally
        adjacent ones for the pair along N (tiles_m x ceil(tiles_n / 2))."""
        if self.cluster_m > 1:
            tiles_m, tiles_n = -(-m // self.bm), -(-n // self.bn)
            if self.pair_along_n:
                return tiles_m * -(-tiles_n // self.cluster_m)
            return -(-tiles_m // self.cluster_m) * tiles_n
        return self.tiles(m, n)

    def grid(self, m: int, n: int, num_sms: int = NUM_SMS_H200, splits: int = 1) -> int:
        """wgmma: persistent blocks launched (the C launcher's min(#SMs, #tiles x splits)); cluster
        configs: cluster_m x min(max(#SMs // cluster_m, 1), units x splits) (on a GPU the launcher may cap the
        clusters further by cudaOccupancyMaxActiveClusters)."""
        if self.cluster_m > 1:
            return self.cluster_m * min(max(num_sms // self.cluster_m, 1), self.units(m, n) * splits)
        return min(num_sms, self.tiles(m, n) * splits)

    def tiles_per_consumer(self, m: int, n: int, num_sms: int = NUM_SMS_H200) -> int:
        """wgmma: most tiles any one consumer warpgroup handles (block b takes tiles b, b + grid, ...;
        ping-pong hands them to its two consumers alternately, cooperative shares each one; a
        cluster's CTAs each take one tile of each of the cluster's units)."""
        per_block = -(-self.units(m, n) // (self.grid(m, n, num_sms) // max(self.cluster_m, 1)))
        return -(-per_block // 2) if self.schedule == SCHED_PINGPONG and not self.ksplit else per_block

    @property
    def _cluster_tag(self) -> str:
        return ((f"_cm{self.cluster_m}" if self.cluster_m > 1 else "") + (f"_e{self.epi_chunks}" if self.epi_chunks else "")
                + ("sh" if self.shared_epi else "") + ("_cs" if self.csplit else "") + ("_u" if self.uncond else "")
                + ("_b3" if self.b3d else "") + ("", "_mcu", "_mca", "_mcl", "_mcn", "_pn", "_pna")[self.b_mc]
                + ("_lean" if self.lean else "") + (f"_p{self.l2_promo.removesuffix('B')}" if self.l2_promo else "")
                + ("_sw" if self.swap else "") + ("_sk" if self.cluster_splitk else "") + ("_ks" if self.ksplit else ""))

    @property
    def label(self) -> str:
        if self.kind == "wgmma":
            if self.schedule == SCHED_PINGPONG:
                return f"wgmma{self.bm}x{self.bn}x{self.bk}_pp_s{self.stages}{self._cluster_tag}"
            tail = "_tma" if self.schedule == SCHED_COOP_TMA else ""
            return f"wgmma{self.bm}x{self.bn}x{self.bk}_c{self.consumers}_s{self.stages}{tail}{self._cluster_tag}"
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
# (bm, bn, consumers, stages, schedule) as in hgemm_wgmma.cu's kWgmmaConfigs; BK is 64 (one
# 128-byte swizzle row). Append only: the tuned tables store ids.
SCHED_GEN1, SCHED_COOP_TMA, SCHED_PINGPONG = 0, 1, 2
# (bm, bn, consumers, stages, epi_chunks) of the plain kernels with a stream-K tail twin (kSkTwins, session 47)
_STREAMK_TWINS = frozenset({(128, 256, 2, 3, 0), (128, 256, 2, 4, 2), (256, 128, 2, 4, 1), (128, 192, 2, 5, 1)})
_WGMMA_TABLE = [
    (128, 128, 2, 6, SCHED_GEN1),
    (128, 256, 2, 4, SCHED_GEN1),
    (256, 128, 2, 4, SCHED_GEN1),
    (128, 64, 2, 8, SCHED_GEN1),
    # generation 2 (measured on the H200 in session 6, docs/gemm.md); split-K up to WGMMA_MAX_SPLITS
    (128, 256, 2, 3, SCHED_COOP_TMA),
    (256, 128, 2, 3, SCHED_COOP_TMA),
    (64, 256, 2, 4, SCHED_PINGPONG),
    (128, 128, 2, 5, SCHED_PINGPONG),
    (64, 128, 2, 8, SCHED_PINGPONG),
    # 2x1 clusters along M (B multicast), cluster_m as a sixth field; written after session 6, not
    # yet run on a GPU (docs/gemm.md). No split-K.
    (128, 256, 2, 3, SCHED_COOP_TMA, 2),
    (128, 128, 2, 5, SCHED_PINGPONG, 2),
    # Chunked C epilogue (epi_chunks buffers of 64 columns per consumer) buying one ring slot more:
    # session 11's grid lost 10-15% to cuBLASLt on large shapes of short K (256-1024).
    (128, 256, 2, 4, SCHED_COOP_TMA, 1, 2),
    (256, 128, 2, 4, SCHED_COOP_TMA, 1, 1),
    (128, 128, 2, 6, SCHED_PINGPONG, 1, 1),
    # N = 192 tiles (session 12): 128 tiles on a 256 x 12288 (cooperative) or 128 x 12288 (ping-pong)
    # C, where 256- or 128-wide tiles make 96 and leave 36 of 132 SMs idle (0.75-0.88x cuBLASLt there).
    (128, 192, 2, 5, SCHED_COOP_TMA, 1, 1),
    (64, 192, 2, 6, SCHED_PINGPONG, 1, 1),
    # M = 192 tiles with three cooperative consumers (session 12, first run in session 13): the mirror for
    # M = 12288: 128 tiles on N = 256 (192 x 128) and N = 128 (192 x 64), where 128-row tiles make 96.
    (192, 128, 3, 5, SCHED_COOP_TMA, 1, 1),
    (192, 64, 3, 6, SCHED_COOP_TMA, 1, 1),
    # Cluster split-K twins (an eighth field; session 12, first run as configs in session 13): splits 2-8
    # as one thread-block cluster per tile, summed through distributed shared memory, no fp32 partials
    # in global memory. For bigger tiles on the long-K shapes of about a million outputs, where 64 x 128
    # tiles are bound by L2 operand traffic and split-K's partials cost more than they save.
    (128, 256, 2, 4, SCHED_COOP_TMA, 1, 2, True),
    (128, 192, 2, 5, SCHED_COOP_TMA, 1, 1, True),
    (128, 128, 2, 6, SCHED_PINGPONG, 1, 1, True),
    (64, 128, 2, 8, SCHED_PINGPONG, 1, 0, True),
    # N = 64 in generation 2 (session 13, not yet run on a GPU): the grid's 8192 / 4096 / 2048 x 64 x K
    # shapes read 0.87-0.92x cuBLASLt on generation 1's 128 x 64 (64 tiles on 8192 x 64, no split-K)
    # or 192 x 64 (43 tiles); a cooperative 128 x 64 with split-K, and a 64 x 64 ping-pong (128 tiles).
    (128, 64, 2, 8, SCHED_COOP_TMA, 1, 1),
    (64, 64, 2, 8, SCHED_PINGPONG, 1, 1),
    # A cooperative 128 x 128 in generation 2 (session 13, not yet run on a GPU): split-K items are mostly
    # one per block, where a ping-pong 128 x 128 (27) leaves its second consumer idle and one warpgroup
    # issues every wgmma of the tile; here both consumers take 64 rows each. For the long-K shapes of
    # about a million outputs (1024 x 1024 x 8192: 64 x 128 tiles are bound by L2 at ~13 TB/s).
    (128, 128, 2, 6, SCHED_COOP_TMA, 1, 1),
    # 2x1 cluster twins of the chunked-epilogue configs 25, 27 and 26 (session 15): one slot more than the
    # first cluster configs (23, 24), B multicast. Measured: bitwise equal to their twins and no faster
    # (0.993-0.995x; the ping-pong one 0.913x); 3 shapes of the retuned table chose 39.
    (128, 256, 2, 4, SCHED_COOP_TMA, 2, 2),
    (128, 128, 2, 6, SCHED_PINGPONG, 2, 1),
    (256, 128, 2, 4, SCHED_COOP_TMA, 2, 1),
    # A 128 x 192 ping-pong (session 15): cuBLASLt's fastest kernels on the short-K large shapes are
    # ping-pongs of 128 x 160-176 (profiler names), 10-14% ahead of our 128 x 128 one. Measured: 0.970x
    # cuBLASLt where the 128 x 128 read 0.901x (10 shapes); 116 shapes of the retuned table chose it, 26
    # its mirror. No split-K kernel (a ninth field, False): at 192 accumulators a thread it spilled.
    (128, 192, 2, 4, SCHED_PINGPONG, 1, 1, False, False),
    (192, 128, 2, 4, SCHED_PINGPONG, 1, 1, False, False),  # its mirror: three m64n128 chains a consumer
    # The same two with a fifth slot, paid for by one staging chunk both consumers share (a tenth field;
    # session 15, not yet run on a GPU): cuBLASLt's fastest short-K kernels run 5 stages.
    (128, 192, 2, 5, SCHED_PINGPONG, 1, 1, False, False, True),
    (192, 128, 2, 5, SCHED_PINGPONG, 1, 1, False, False, True),
    # Cluster split-K twin of the cooperative 128 x 128 (38; session 16): for the long-K shapes of about a
    # million outputs, where a 64 x 128 tile a block leaves one consumer issuing. Measured 0.859x of the
    # table on 12 of them (2 splits; 4: 0.601x), faster on none: retired (RETIRED_WGMMA_IDS).
    (128, 128, 2, 6, SCHED_COOP_TMA, 1, 1, True),
    # The 128 x 192 ping-pong (42) with two staging buffers a consumer (session 16): with one, each
    # 64-column chunk of C waits for TMA to have read the last (Nsight, 16384x12288x256: barrier stalls the
    # largest). Two buffers for three chunks: the kernel counts staged chunks. Measured: under Nsight's
    # locked clocks 201 against 211 us (tensor pipe 85 against 81%), but at the card's own clocks, under
    # its power cap, 0.984x of the table where 42 read 0.988x (14 shapes): retired.
    (128, 192, 2, 4, SCHED_PINGPONG, 1, 2, False, False),
    # 2x1 cluster configs whose consumers issue their wgmmas unconditionally (an eleventh field; session 16;
    # measured in session 17, correct, slower than their twins: retired, see RETIRED_WGMMA_IDS). Nsight's
    # per-instruction samples put the cluster kernel's 12-point loss to its
    # twin (40 against 27) at each k-block's first wgmma, behind the `live` branch. 40's twin, and the 2x1
    # cluster twin of the 64 x 128 ping-pong (22) for the long-K shapes (a pair sharing B requests 16 KB a
    # MFLOP; the first form of it, with the branch, ran 0.93x its twin). Not offered below 2 x #SMs tiles
    # (`cluster_offered`), so gemm_configs.py times them there.
    (128, 128, 2, 6, SCHED_PINGPONG, 2, 1, False, True, False, True),
    (64, 128, 2, 8, SCHED_PINGPONG, 2, 0, False, True, False, True),
    # B3D twins of the 64-row ping-pongs 22, 29, 20 (a twelfth field; session 17; measured: see RETIRED_WGMMA_IDS):
    # each k-block's B chunks in one 3-D TMA box, two TMA instructions a k-block instead of 1 + BN/64,
    # where N % 64 == 0 (their twins' kernels elsewhere). A diagnostic build of it ran 22 2.5-4% faster at
    # the card's clocks on long-K shapes (tensor pipe 81% against 71% under Nsight at 1024x1024x8192).
    (64, 128, 2, 8, SCHED_PINGPONG, 1, 0, False, True, False, False, True),
    (64, 192, 2, 6, SCHED_PINGPONG, 1, 1, False, True, False, False, True),
    (64, 256, 2, 4, SCHED_PINGPONG, 1, 0, False, True, False, False, True),
    # 50 with 128-deep slots (a thirteenth field, k-chunks of 64 a slot; session 17): 4 slots of 48 KB (the
    # same 192 KB in flight), A and B each in one 3-D box a slot, where N and K are multiples of 64 and
    # splits == 1; its split-K and other shapes run 64-deep kernels of the same 4 slots. Measured on 7
    # long-K shapes: cuBLASLt / config 0.893 (50: 0.878, 22: 0.850); Nsight at 1024x1024x8192 32.6 us
    # (50: 35.0, cuBLAS's kernel 32.2-32.6). Offered to the tuner; not yet in the shipped table.
    (64, 128, 2, 4, SCHED_PINGPONG, 1, 0, False, True, False, False, True, 2),
    # The UNCOND pair sharing B (49) with 53's 128-deep slots (session 17, not yet run): each CTA asks for half
    # the bytes 53 asks for, in two TMA instructions a slot (its A box through a 3-D map of A, its multicast
    # 128-row B box); where K % 64 != 0 the 64-deep cluster kernel of the same 4 slots. Not offered below
    # 2 x #SMs tiles (`cluster_offered`): gemm_configs.py times it on the long-K shapes.
    (64, 128, 2, 4, SCHED_PINGPONG, 2, 0, False, True, False, True, True, 2),
    # The 64 x 64 ping-pong (37) as a 2x1 pair sharing B (session 20): each CTA multicasts half of B's one
    # 64-column chunk (its k-rows). For the one-wave long-K shapes of ~128 tiles of 64 x 64, where 37 reads
    # A and B from L2 N/64 + M/64 times over and ran 10-16% behind cuBLASLt, whose fastest algorithm there
    # is a 64 x 64 tile in a 2-CTA cluster. Offered wherever it has two tile rows (`cluster_offered`).
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1),
    # 37 with 13 slots (session 20): cuBLAS's kernel on those one-wave shapes (nvjet ... 64x64_64x13_2x1) runs
    # a 13-deep ring; 230,608 B of shared memory, within the 227 KB a block may take.
    (64, 64, 2, 13, SCHED_PINGPONG, 1, 1),
    # 55's B modes (a fourteenth field; session 21): 55 moved as many L2 bytes as 37 (Nsight at 512x1024x4096),
    # where cuBLAS's pair moves 0.66x. 57 loads B without multicast, each CTA all of it (a diagnostic: the
    # pair's coupling alone); 58 multicasts whole B boxes, the two CTAs in turn (one 8 KB request a k-block).
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, False, False, 1, 1),
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, False, False, 1, 2),
    # Measured (session 21): 57 as slow as 55 and 58 (0.67x 37 over 42 one-wave shapes): not the multicast. 59
    # keeps only the cluster launch (B mode 3: 57 whose slots its own consumers release; a diagnostic); 60 and
    # 61 are 58 and 55 with 13 slots (cuBLAS's pair runs 13), in case the pair's ring waits on a longer round
    # trip (its releases cross to the peer) that more slots would hide.
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, False, False, 1, 3),
    (64, 64, 2, 13, SCHED_PINGPONG, 2, 1, False, True, False, False, False, 1, 2),
    (64, 64, 2, 13, SCHED_PINGPONG, 2, 1),
    # Measured (session 21): 59 as slow as 55, and 37's own kernel launched in clusters of 2 as fast as 37. 62: 59
    # without the cluster barriers at start and end (B mode 4; its idle warps exit as 37's do); 63: 59 without the
    # `live` branch (UNCOND). Diagnostics.
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, False, False, 1, 4),
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 3),
    # Measured (session 21): 62 0.92x and 63 1.24x of 59's speed (59: 0.69x 37). The lean pair (a fifteenth field):
    # UNCOND, a relaxed start barrier, no end barrier (the producer waits out every slot's last release), idle
    # warps leave at once. 64: B halves multicast (55's); 65: whole B boxes in turn (58's); 66: no multicast, own
    # releases (59's: the yardstick, 37's work in the lean pair's code); 67: 65 with 13 slots.
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True),
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 2, True),
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 3, True),
    (64, 64, 2, 13, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 2, True),
    # Measured (session 21): the lean pair ran 0.95-0.97x of 37 with or without multicast (64-66; 55: 0.67x), so the
    # cluster kernels' loss was their barriers and `live` branch. 68-70: the lean twins of the large cluster configs
    # 39, 41, 40 (0.993-0.995x of their one-CTA twins 25, 26, 27 in session 15).
    (128, 256, 2, 4, SCHED_COOP_TMA, 2, 2, False, True, False, True, False, 1, 0, True),
    (256, 128, 2, 4, SCHED_COOP_TMA, 2, 1, False, True, False, True, False, 1, 0, True),
    (128, 128, 2, 6, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True),
    # Measured (session 22): 68-70 no faster than the table on the one-wave large-tile shapes, and 64, 66, 70 0.53-0.72x
    # of it on the skinny ones. There (M = 128, N >= 256) cuBLAS's kernel (nvjet_sm90_hsh_192x64_64x6_1x2 at
    # 128x12288x4096) splits the 128 rows over a 2-CTA cluster, 64 x 192 each in our frame, and multicasts the
    # streamed B panel: 128 CTAs where one 128 x 192 tile a CTA (28) makes 64. 71-73: the lean 64-row ping-pong
    # pairs of 29, 22, 20 (71: half of each of B's three chunks multicast by each CTA; 72-73: whole chunks).
    (64, 192, 2, 6, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True),
    (64, 128, 2, 8, SCHED_PINGPONG, 2, 0, False, True, False, True, False, 1, 0, True),
    (64, 256, 2, 4, SCHED_PINGPONG, 2, 0, False, True, False, True, False, 1, 0, True),
    # Their mirror for N = 128 (session 22; cuBLAS at 12288x128x8192: nvjet_sm90_hsh_64x192_64x6_2x1, 192 x 64 a CTA
    # in our frame, the streamed A multicast): the pair along N (B mode 5), lean, twins of 31, 36, 37.
    (192, 64, 3, 6, SCHED_COOP_TMA, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True),
    (128, 64, 2, 8, SCHED_COOP_TMA, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True),
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True),
    # Cluster split-K twins of 29, 31, 36, 37 (session 23): on the 64-wide skinny shapes (64 x 12288 x K, 12288 x 64 x K,
    # 4096 x 64 x K, 64 x 4096 x K) these tiles make 32-64 CTAs and the plain split-K's fp32 partials cost a
    # second kernel; cuBLASLt runs 128 CTAs there (docs/gemm.md, session 22). Two splits in one cluster give 128 CTAs
    # whose L2 traffic is the one-CTA tile's. The kernels are the twins' mode-4 instantiations (GPU-tested as such).
    (64, 192, 2, 6, SCHED_PINGPONG, 1, 1, True),
    (192, 64, 3, 6, SCHED_COOP_TMA, 1, 1, True),
    (128, 64, 2, 8, SCHED_COOP_TMA, 1, 1, True),
    (64, 64, 2, 8, SCHED_PINGPONG, 1, 1, True),
    # 74's pair along N for M = 16384, N = 128 (session 23): 256 x 64 tiles, 64 pairs = 128 CTAs where 74's 192-row
    # tiles make 172 (86 pairs: 1.3 waves) and the table's kernels trail cuBLASLt by 0-3.5%. 81: the one-CTA tile
    # (two cooperative consumers of 128 rows, 4 slots; its plain twin for the bitwise test), 82: the lean pair.
    (256, 64, 2, 4, SCHED_COOP_TMA, 1, 1),
    (256, 64, 2, 4, SCHED_COOP_TMA, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True),
    # Measured (session 24): 82 at 0.925x of cuBLASLt on 16384 x 128 x K, 81 at 0.834x: retired. Clusters of four
    # (cluster_m 4, session 24) sharing the small operand of the 64-wide skinny shapes, as cuBLAS does there
    # (nvjet_sm90_hsh_128x64_64x8_4x1 at 64x12288x8192, ..._64x128_64x8_1x4 at 12288x64x8192: 96 CTAs, about 20% fewer
    # L2-to-SM bytes than our one-CTA tiles). 83: four 64 x 128 ping-pong tiles along N share A (M <= 64), twin 22;
    # 84: four cooperative 128 x 64 tiles along M share B (N <= 64), twin 36. Lean, as the pairs above.
    (64, 128, 2, 8, SCHED_PINGPONG, 4, 0, False, True, False, True, False, 1, PAIR_ALONG_N, True),
    (128, 64, 2, 8, SCHED_COOP_TMA, 4, 1, False, True, False, True, False, 1, 0, True),
    # Measured (session 24): 83-84 6-9% faster than their twins where their 24 quads make one wave (64 x 12288 x K,
    # 12288 x 64 x K), 7-12% behind cuBLASLt; at 16384 two waves (30 quads resident at most). Nsight at 12288x64x8192:
    # their L2-to-SM read sectors 22% above cuBLAS's, which read every operand byte once per cluster. 85: 84 with
    # whole B boxes multicast in turn (B mode 2: CTA kt % 4 sends k-block kt's 8 KB box), one request where 84 sends four.
    (128, 64, 2, 8, SCHED_COOP_TMA, 4, 1, False, True, False, True, False, 1, 2, True),
    # 86: 83 with A's whole box multicast in turn (ALONG_N_TURN).
    (64, 128, 2, 8, SCHED_PINGPONG, 4, 0, False, True, False, True, False, 1, ALONG_N_TURN, True),
    # Measured (session 24): 85-86 no faster than 84 / 83 and the same L2 read sectors. Nsight at 12288x64x8192: with
    # the maps' L2 promotion at 128 B (or none) the quads read exactly cuBLAS's L2 sectors, each operand byte once per
    # cluster (at 256 B, the library default, three times the shared operand's), in 53 us against 56.5 (cuBLAS
    # 54-55). 87-88: 83-84 with 128 B promotion of their own (a sixteenth field).
    (64, 128, 2, 8, SCHED_PINGPONG, 4, 0, False, True, False, True, False, 1, PAIR_ALONG_N, True, "128B"),
    (128, 64, 2, 8, SCHED_COOP_TMA, 4, 1, False, True, False, True, False, 1, 0, True, "128B"),
    # Measured (session 24): 87-88 3-6% faster than 83-84, 8-10% behind cuBLASLt on the one-wave shapes: retired with
    # them. 89-90: the lean 64-row pairs 71-72 (the table's kernel on 13 M = 128 shapes, 4 of them ours) with 128 B
    # promotion (session 23's setting test: 71 at 128x12288x8192 53.3 -> 51.6 us, cuBLASLt 50.9). Measured (session
    # 24): correct (bitwise 71-72), 1.03-1.05x the table on 7 M = 128 shapes (paired screen), adopted there.
    (64, 192, 2, 6, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True, "128B"),
    (64, 128, 2, 8, SCHED_PINGPONG, 2, 0, False, True, False, True, False, 1, 0, True, "128B"),
    # Session 25: the large shapes of mid K (M x N >= 2^25, K 256-2048) trail cuBLASLt by 3-8%, bound by the operand
    # panels they read from L2, and the large lean pairs 68-70 were measured at 256 B promotion (which triples a
    # multicast operand's L2 reads). 91-93: 68-70 with 128 B promotion; 94-95: lean pairs of the 128 x 192 ping-pong 42
    # (the table's kernel on 116 large shapes, 0.985x of cuBLASLt there) and of its mirror 43; 96: 74 at 128 B.
    # Measured (session 25): correct (bitwise their twins); on those 155 shapes 0.947-0.977x the table (geomean), none
    # faster where K <= 512 (the L2 traffic they halve is not what binds there); 93, 95, 96 retired.
    (128, 256, 2, 4, SCHED_COOP_TMA, 2, 2, False, True, False, True, False, 1, 0, True, "128B"),
    (256, 128, 2, 4, SCHED_COOP_TMA, 2, 1, False, True, False, True, False, 1, 0, True, "128B"),
    (128, 128, 2, 6, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True, "128B"),
    (128, 192, 2, 4, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True, "128B"),
    (192, 128, 2, 4, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True, "128B"),
    (192, 64, 3, 6, SCHED_COOP_TMA, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True, "128B"),
    # 160-wide tiles (session 26): cuBLASLt's kernel on 82 of the 113 large shapes where it beat the table is
    # nvjet_sm90_hsh_128x160_64x5_2x1 (5 stages; Nsight at 16384x16384x512: tensor pipe 99.0% busy, 42's 128 x 192
    # ping-pong 90.7%). In our frame 128 x 160, B and C in five 32-column chunks (chunk_cols, 64-byte swizzle), no
    # split-K or cp.async kernels (CUDAOPT_WGMMA_CFG2T). 97: ping-pong, two 8 KB staging buffers a consumer; 98: one
    # (the pairs' plain twin); 99: cooperative; 100: the lean pair along M sharing B, 101: along N sharing A.
    (128, 160, 2, 5, SCHED_PINGPONG, 1, 2, False, False),
    (128, 160, 2, 5, SCHED_PINGPONG, 1, 1, False, False),
    (128, 160, 2, 5, SCHED_COOP_TMA, 1, 2, False, False),
    (128, 160, 2, 5, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True, "128B"),
    (128, 160, 2, 5, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True, "128B"),
    # Measured (session 26): 97-101 correct, 0.80-0.95x the table on those 155 shapes (docs/data/hgemm_session26). The
    # tile in cuBLAS's own frame (row-major C is its column-major C^T): 160 rows of our M by 128 of N with the operands'
    # roles swapped (a seventeenth field): its A our B (two 64-column chunks, 128B swizzle), its B our A (160 rows,
    # K-major), C stored transposed. 102: 5 slots, one 20 KB staging buffer a consumer; 103: 4 slots, two.
    (160, 128, 2, 5, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True),
    (160, 128, 2, 4, SCHED_PINGPONG, 1, 2, False, False, False, False, False, 1, 0, False, "", True),
    # Measured (session 26): 102-103 correct, 0.952x / 0.967x the table on those 155 shapes (102 1.008x at K = 256).
    # cuBLAS runs its tile in 2x1 clusters, two tiles adjacent along our N sharing A's 160-row panel: 104, 102's lean
    # pair along N (each CTA multicasts 80 of A's rows); 105, along M sharing B (each multicasts one of B's chunks).
    (160, 128, 2, 5, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True, "128B", True),
    (160, 128, 2, 5, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True, "128B", True),
    # Session 27: the swapped frame's taller tiles (its wgmma N is our M, a multiple of 16): 106, 192 x 128 (m64n192
    # chains, as the 128 x 192 ping-pong 42, along the taller tile); 107, 176 x 128 (cuBLAS's 176x128 ping-pong); 4 slots,
    # one staging buffer a consumer (5 slots do not fit); 108 / 109 their lean pairs along N sharing A's panel.
    (192, 128, 2, 4, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True),
    (176, 128, 2, 4, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True),
    (192, 128, 2, 4, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True, "128B", True),
    (176, 128, 2, 4, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True, "128B", True),
    # Measured (session 27): 106-109 correct, 0.976-0.986x the table on the 155 large losers; 106-107 adopted on 9
    # shapes (6 of M = 12288). 110: 144 x 128 (5 slots, one staging buffer), for the shapes whose 128 x 192 tiles leave a two-thirds last
    # wave (8192 x 4096: 10.67 waves of 132; 57 x 32 tiles of 144 x 128 make 13.8); 111: its lean pair along N.
    (144, 128, 2, 5, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True),
    (144, 128, 2, 5, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True, "128B", True),
    # Measured (session 27): 110-111 correct, 0.944x / 0.943x the table on the 155 large losers, adopted on none.
    # 112: 168 x 128 (cuBLAS's 168x128 ping-pong; 8192 / 168 = 48.8 tile rows, 11.9 waves of 132 at N = 4096), 4 slots (5
    # do not fit), no pair along N (84 rows a CTA are not whole 8-row swizzle atoms).
    (168, 128, 2, 4, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True),
    # Session 28: narrow tiles for the small long-K shapes (M x N <= 2^20, K >= 1024), where cuBLASLt's fastest is its
    # 64x32 tile (32 rows of our M by 64 of N: one wave of 128 tiles on 512 x 512, all of K in each, no split-K) and
    # ours split K and reduce. Swapped frame, one m64n32 chain a 64-column chunk of B: 113, 32 x 64, 12 slots of 12 KB;
    # 114, 32 x 128, 8 slots; 115, 64 x 64 swapped (cuBLAS's one-wave 64x64 tile in its frame; 37 trails it by 15%).
    (32, 64, 2, 12, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True),
    (32, 128, 2, 8, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True),
    (64, 64, 2, 8, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True),
    # Measured (session 28): 113-115 correct; 113 adopted on 16 shapes of K 1024-2048 (1.068x the table, 0.987x
    # cuBLASLt), all three far behind the table's split-K at longer K. cuBLASLt runs its 64x32 tile in 1x2 clusters (two
    # tiles adjacent along our M sharing B) and its one-wave 64x64 tile in 2x1 ones (along our N sharing A); session
    # 21's 64 x 64 pairs ran at 256 B L2 promotion, which triples a multicast operand's L2 reads (session 24). 116 /
    # 117: 113's lean pairs along M (each CTA multicasts 32 of B's 64 k-rows) and along N (16 of A's 32 rows), 128 B
    # promotion; 118 / 119: the 64 x 64 lean pairs 64 and 76 at 128 B promotion (their kernels, other maps).
    (32, 64, 2, 12, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True, "128B", True),
    (32, 64, 2, 12, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True, "128B", True),
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True, "128B"),
    (64, 64, 2, 8, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, PAIR_ALONG_N, True, "128B"),
    # Split-K over pairs (session 28): on the small long-K shapes (M x N <= 2^20, K >= 4096) the table splits K over
    # 128 x 128 (27) or 64 x 128 (22) tiles, 0.87-0.93x cuBLASLt, whose fastest there splits over 2x1 clusters. 120 /
    # 121: the lean pairs of 27 and 22 along M sharing B (93's and 90's kernels for one split), 128 B promotion, with a
    # split-K kernel (an eighteenth field): their twins' k ranges per split, partials to the reduce kernel.
    (128, 128, 2, 6, SCHED_PINGPONG, 2, 1, False, True, False, True, False, 1, 0, True, "128B", False, True),
    (64, 128, 2, 8, SCHED_PINGPONG, 2, 0, False, True, False, True, False, 1, 0, True, "128B", False, True),
    # Measured (session 29): 113 (32 x 64 swapped) adopted on 80 small shapes of K <= 2048, 7% above the table's 64 x 64
    # (37) there: at these sizes a call is latency, and half the rows a tile spreads it over twice the SMs. 122: 16 x 64
    # swapped (one m64n16 chain a 64-column chunk of B), 16 slots of 10 KB.
    (16, 64, 2, 16, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True),
    # Session 33: Nsight at 512x1024x4096 (one wave of 64 x 64 tiles, K = 4096): cuBLASLt's 64x64 kernel keeps about 9
    # warps resident a CTA and its tensor pipe 57% busy (14.0 us), ours 5 warps (one consumer issues: the ping-pong's
    # other has no second tile) at 42% (18.4 us); fewer L2 requests did not make ours faster (118: 9% fewer than 37,
    # 6% slower). 123-125: the k-split twins (a nineteenth field) of 37 (64 x 64), 115 (64 x 64 swapped) and 113 (32 x 64
    # swapped): both consumers on each tile, alternating k-blocks. Plain only (no split-K kernel), TMA only.
    (64, 64, 2, 8, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", False, False, True),
    (64, 64, 2, 8, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True, False, True),
    (32, 64, 2, 12, SCHED_PINGPONG, 1, 1, False, False, False, False, False, 1, 0, False, "", True, False, True),
]
WGMMA_BK = 64
WGMMA_MAX_SPLITS = 64  # kWgmmaMaxSplits in hgemm_wgmma.cu (16 until session 11)
CSPLIT_MAX_SPLITS = 8  # kCsplitMaxSplits: a portable cluster holds at most 8 CTAs


def wgmma_k_blocks(k: int) -> int:
    """64-wide k-blocks of K (one pipeline slot each): the unit split-K divides."""
    return -(-k // WGMMA_BK)


def work_item(w: int, num_tiles: int, splits: int, k_blocks: int) -> tuple[int, int, int, int]:
    """Mirror of work_item in hgemm_wgmma.cu: item w of num_tiles x splits (split-major) ->
    (tile, split, first k-block, k-block count). Split s covers k-blocks [s*KB//S, (s+1)*KB//S):
    contiguous, balanced (counts differ by at most 1), at least 1 each when splits <= k_blocks."""
    split, tile = divmod(w, num_tiles)
    first = split * k_blocks // splits
    return tile, split, first, (split + 1) * k_blocks // splits - first


def block_items(block: int, grid: int, num_tiles: int, splits: int, k_blocks: int) -> list[tuple[int, int, int, int]]:
    """The work items persistent block `block` of `grid` walks, in order (items block, block + grid,
    ...): the producer loads them all; cooperative consumers both take each one; ping-pong consumer
    c takes the c-th, (c+2)-th, ... of this list."""
    return [work_item(w, num_tiles, splits, k_blocks) for w in range(block, num_tiles * splits, grid)]


def sk_tail_splits(grid: int, num_tiles: int, k_blocks: int, most: int = 8) -> int:
    """Mirror of sk_tail_splits in hgemm_wgmma.cu: the K splits of each of the r = num_tiles % grid tail tiles of a
    stream-K launch, grid // r, at most k_blocks and `most`; 1 without a tail."""
    r = num_tiles % grid
    return max(1, min(grid // r if r else 1, k_blocks, most))


def sk_items(block: int, grid: int, num_tiles: int, k_blocks: int, splits: int) -> list[tuple[int, int, int, int]]:
    """Mirror of the stream-K tail decomposition in hgemm_wgmma.cu (sk_items / sk_item, session 47): the items CTA
    `block` of `grid` walks, as (tile, first k-block, k-block count, split or -1). The W = num_tiles // grid whole
    waves round-robin (tiles block, block + grid, ...); then, with the r tail tiles cut `splits` ways, CTA b < r x
    splits takes split b // r of tail tile b % r (work_item's balanced k-block ranges). splits == 1: the plain
    kernel's schedule."""
    waves, r = divmod(num_tiles, grid)
    items = [(t, 0, k_blocks, -1) for t in range(block, waves * grid, grid)]
    if r and block < r * splits:  # work_item's item `block` of r tail tiles x splits
        tile, split, first, count = work_item(block, r, splits, k_blocks)
        items.append((waves * grid + tile, first, count, split if splits > 1 else -1))
    return items


CLUSTER_MIN_TILES_PER_SM = 2  # cluster configs are offered where tiles >= this x #SMs
ONE_WAVE_CLUSTER_TILE = 64 * 64  # ... except pairs of tiles this small (see cluster_offered)


def cluster_tile(unit: int, rank: int, tiles_m: int, tiles_n: int, cm: int = 2) -> tuple[int, int]:
    """Mirror of cluster_tile in hgemm_wgmma.cu: (tile row, tile column) of CTA `rank` (0 .. cm - 1) of a
    cluster of cm (2 or 4) CTAs for unit `unit`: units are groups of cm tile-rows (cm p .. cm p + cm - 1) x one
    tile column, in the grouped order of the plain kernels over the groups (8 groups per column sweep). The
    row is past M (the CTA idles through the unit) for the ranks of the last group that tiles_m does not fill."""
    groups_m = -(-tiles_m // cm)
    group_size = 8 * tiles_n
    group, in_group = divmod(unit, group_size)
    first = group * 8
    rows = min(groups_m - first, 8)
    return cm * (first + in_group % rows) + rank, in_group // rows


def cluster_sequences(tiles_m: int, tiles_n: int, clusters: int, cm: int = 2) -> list[list[tuple[tuple[int, int], ...]]]:
    """Per cluster c of `clusters`: its units c, c + clusters, ... as (rank-0 tile, ..., rank-(cm - 1) tile)."""
    units = -(-tiles_m // cm) * tiles_n
    return [[tuple(cluster_tile(u, r, tiles_m, tiles_n, cm) for r in range(cm)) for u in range(c, units, clusters)]
            for c in range(clusters)]


def plain_twin(cfg: KernelConfig) -> KernelConfig:
    """The one-CTA config with 64-deep 2-D loads and a cluster or B3D config's tile, ring, schedule and
    staging (bitwise its results: the k order is the same); for a 128-deep one (bk = 128, no 2-D config
    of its slot count) the 64-deep config of its tile, schedule and staging."""
    same = [c for c in WGMMA_CONFIGS if c.cluster_m == 1 and not c.csplit and not c.b3d and
            (c.bm, c.bn, c.schedule, c.epi_chunks, c.swap) == (cfg.bm, cfg.bn, cfg.schedule, cfg.epi_chunks, cfg.swap)]
    return next((c for c in same if c.stages == cfg.stages), same[0])


def cluster_offered(cfg: KernelConfig, m: int, n: int, num_sms: int = NUM_SMS_H200) -> bool:
    """Whether the tuner and the comparison time cfg on (m, n): every non-cluster config; a cluster
    config only where the tile grid fills the SMs at least CLUSTER_MIN_TILES_PER_SM times (on fewer
    tiles a pair schedule only coarsens the last wave, and B traffic is not the limit). A 64 x 64 pair
    (tiles of at most ONE_WAVE_CLUSTER_TILE elements) is for exactly those one-wave shapes, where small
    tiles are bound by L2 operand traffic: offered wherever it has two tile rows. A lean pair whose two
    64-row tiles span all of M (the skinny shapes, 64 < M <= 128) shares the streamed B panel, and
    is offered there however few its tiles (session 22); the pair along N likewise where it spans N, and
    only there (the swapped 160 x 128 pair along N of session 26, cuBLAS's 2x1, is for large shapes: the general
    rule). A cluster of four (session 24) shares the small operand of a 64-wide skinny shape along its long
    side: offered where its tiles span the short side (one tile row along N, one tile column along M) and fill
    at least one cluster."""
    if cfg.cluster_splitk:  # (session 28) its split-K spreads a few pairs over the SMs: two tile rows suffice
        return -(-m // cfg.bm) >= cfg.cluster_m
    if cfg.cluster_m == 4:
        tiles_m, tiles_n = -(-m // cfg.bm), -(-n // cfg.bn)
        short, long_ = (tiles_m, tiles_n) if cfg.pair_along_n else (tiles_n, tiles_m)
        return short == 1 and long_ >= cfg.cluster_m
    if cfg.pair_along_n and not cfg.swap:  # skinny N: one pair spans every column and shares the streamed A (22)
        return -(-n // cfg.bn) == cfg.cluster_m
    if cfg.cluster_m > 1 and cfg.bm * cfg.bn <= ONE_WAVE_CLUSTER_TILE:  # a pair needs two tile rows (columns along N)
        return (-(-n // cfg.bn) if cfg.pair_along_n else -(-m // cfg.bm)) >= cfg.cluster_m
    if cfg.cluster_m > 1 and cfg.lean and cfg.bm == 64 and -(-m // cfg.bm) == cfg.cluster_m:
        return True  # skinny M: one pair spans every row and shares the streamed B (session 22)
    return cfg.cluster_m == 1 or cfg.tiles(m, n) >= CLUSTER_MIN_TILES_PER_SM * num_sms


def _build_configs() -> tuple[KernelConfig, ...]:
    out = [KernelConfig(i, *row, kind="mma", index=i) for i, row in enumerate(_TABLE)]
    for j, (bm, bn, consumers, stages, sched, *rest) in enumerate(_WGMMA_TABLE):
        # warps_m: warps sharing one tile's rows in 16-row strips (ping-pong: one warpgroup per tile).
        warps_m = 4 if sched == SCHED_PINGPONG else 4 * consumers
        (cluster_m, epi_chunks, csplit, splitk, shared_epi, uncond, b3d, kb, b_mc, lean, l2_promo, swap, cluster_splitk,
         ksplit) = [*rest, *(1, 0, False, True, False, False, False, 1, 0, False, "", False, False, False)[len(rest):]]
        out.append(KernelConfig(len(out), bm, bn, WGMMA_BK * kb, warps_m, 1, stages, kind="wgmma", index=j,
                                consumers=consumers, schedule=sched, cluster_m=cluster_m, epi_chunks=epi_chunks,
                                csplit=csplit, splitk=splitk, shared_epi=shared_epi, uncond=uncond, b3d=b3d,
                                b_mc=b_mc, lean=lean, l2_promo=l2_promo, swap=swap, cluster_splitk=cluster_splitk,
                                ksplit=ksplit))
    return tuple(out)


SPLIT_CHOICES = (1, 2, 4, 8, 16)
# wgmma split-K takes any count (work items of unequal k-block counts are tested on the GPU); counts
# between the powers of two let tiles x splits land nearer a whole number of SM waves (44 tiles x 3 =
# 132 items, where 2 leave 44 SMs idle and 4 make 1.33 waves).
# Above 16: a matrix of one or two tiles with a long K (64 x 128 x 16384) can then use 32-64 SMs.
WGMMA_SPLIT_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
KERNEL_CONFIGS: tuple[KernelConfig, ...] = _build_configs()
MMA_CONFIGS = tuple(c for c in KERNEL_CONFIGS if c.kind == "mma")
WGMMA_CONFIGS = tuple(c for c in KERNEL_CONFIGS if c.kind == "wgmma")


BT_TN_LABEL = "fallback:cublaslt_tn"  # (session 42) Choice.bt_label's stem: a B^T route run by a cuBLASLt TN algorithm


@dataclass(frozen=True)
class Choice:
    """What the dispatcher runs for one shape: our kernel (config, splits) or a labelled fallback."""

    backend: str  # "ours", or where ours lose "torch" (torch.matmul) or "cublaslt" (one cuBLASLt algorithm)
    config: int = 0
    splits: int = 1
    # "cublaslt": the index of the algorithm among those cuBLASLt's heuristic returns for this shape (NN
    # layout, fp32 compute, the tuner's workspace limit), the one the fallback tuner timed fastest.
    algo: int = -1
    # (session 42) a caller holding B transposed (the TN layout, nn.Linear's weight): the index of the cuBLASLt TN
    # algorithm (the TN heuristic's list, same limits) hgemm runs instead of its B^T route (the twin or torch.matmul),
    # where whole-grid runs found it faster (the table's bt_lt_algo; gemm-table-from-grids --bt). -1: none.
    bt_algo: int = -1
    # (session 47) our config through its stream-K tail twin (the last partial wave's tiles split along K over the
    # idle SMs; KernelConfig.has_streamk_twin, splits 1); the table's "streamk": true.
    streamk: bool = False
    # (session 49) a caller handing hgemm both layouts of B (b and b_col_major, as the seed's harness hands every
    # function, the cuBLAS baselines included): read the column-major copy through the B^T route above instead of b,
    # where whole grids read that route faster for the shape (the table's "both_layouts": "bt";
    # gemm-table-from-grids --both). False: read b.
    both_bt: bool = False

    def label(self) -> str:
        if self.backend == "cublaslt":
            return f"fallback:cublaslt_nn_algo{self.algo}"
        if self.backend != "ours":
            return f"fallback:{self.backend}"
        return (KERNEL_CONFIGS[self.config].label + (f"_splitk{self.splits}" if self.splits > 1 else "")
                + ("_sktail" if self.streamk else ""))

    def bt_label(self) -> str | None:
        """The label of the B^T route's cuBLASLt TN algorithm (bench-gemm's "dispatch_bt" column names the route a
        grid ran); None where the choice names none and the route is the twin or torch.matmul."""
        return f"{BT_TN_LABEL}_algo{self.bt_algo}" if self.bt_algo >= 0 else None

    def as_ours(self) -> Choice:
        """Our kernel of this choice: itself, or for a labelled fallback the config it was tuned with
        (what the benchmarks time as "ours" where the dispatcher calls torch)."""
        return self if self.backend == "ours" else Choice("ours", self.config, self.splits, streamk=self.streamk)


def enabled_kinds() -> frozenset[str]:
    """Kernel kinds the tuner may time: $CUDAOPT_GEMM_KINDS (comma-separated, default "mma,wgmma").
    The GPU script sets "mma" when the wgmma smoke test failed, so a broken kind cannot stall tuning."""
    raw = os.environ.get("CUDAOPT_GEMM_KINDS", "mma,wgmma")
    return frozenset(k.strip() for k in raw.split(",") if k.strip())


# Configs written but not yet run on a GPU: the tuner leaves them out unless $CUDAOPT_GEMM_WGMMA_IDS
# names them (the GPU script's smoke test sets it to every config that passed, these included), so a
# user's `cudaopt tune-gemm` never times a kernel no GPU has run. Empty it once a run has passed them.
# 48-53 first ran (and passed) in session 17, 54 in 18, 55-56 in 20
# 57-70 first ran (and passed) in session 21, 71-73 in 22, 74-76 (the pair along N) in 23 (session 22's run hung in
# 74: its consumers asked setmaxnreg for 232 registers, which a 512-thread CTA never frees; fixed before session 23)
# 77-80 (session 23, the cluster split-K twins of 29, 31, 36, 37) ran and passed in 23. 81-82 (the 256 x 64 tile and its
# pair along N, session 23): written after the session's GPU calls, ran and passed in 24. 83-84 (clusters of four,
# session 24) ran and passed in 24, and 85-90 (whole boxes in turn; 128 B L2 promotion) too. 91-96 (session 25: the
# large pairs at 128 B promotion, the 128 x 192 / 192 x 128 ping-pong pairs) ran and passed in 25.
# 97-105 (session 26, the 160-wide tiles and the swapped pairs) ran and passed in 26.
# 106-109 (session 27, the swapped 192 x 128 and 176 x 128 ping-pongs and their pairs) ran and passed in 27.
# 110-111 (session 27, the swapped 144 x 128 and its pair) ran and passed in 27. 112 (168 x 128, written after session
# 27's GPU time) ran and passed in 28, as did 113-115 (session 28, the narrow swapped tiles). 116-119 (their pairs and
# the 64 x 64 pairs at 128 B promotion) and 120-121 (pairs with split-K): written after session 28's GPU time, ran and
# passed in 29. 122 (16 x 64 swapped): written after session 29's GPU time, ran and passed in 30 (adopted on one shape;
# docs/gemm.md says the set was emptied then, the code kept it until session 32, so session 32's retune left 122 out).
# 123-125 (session 33, the k-split twins of 37, 115 and 113) ran and passed in 33.
UNMEASURED_WGMMA_IDS: frozenset[int] = frozenset()
# Configs a GPU run passed but measured slower than the config they were written to improve on, on every
# shape they were timed: compiled and GPU-tested still, but left out of tuning (and of the GPU script's
# smoke test) so that a retune does not spend its minutes on them; $CUDAOPT_GEMM_WGMMA_IDS can name them.
# 44, 45 (session 16): the 5-slot shared-staging ping-pongs, 0.969x / 0.955x of the table on 10 large
# shapes where their 4-slot twins 42, 43 read 1.005x / 0.963x (docs/gpu-runs.md, session 16). 46 (session 16):
# the cooperative 128 x 128 as cluster split-K, 0.859x of the table on 12 long-K shapes, faster on none.
# 47 (session 16): the 128 x 192 ping-pong with two staging buffers, 0.984x of the table where 42 read
# 0.988x (14 large shapes; under Nsight's locked clocks 4.7% faster than 42: the card's power cap decides).
# 48 (session 17): 40 with UNCOND, 0.956x its non-cluster twin 27 (geomean of 3 large shapes) where 40 read
# 0.911x, and 0.91-0.95x of 27 on the long-K shapes: better than 40, slower than the twin everywhere timed.
# 49 (session 17): the UNCOND pair of 22, 0.88-0.93x of 22 on 7 long-K shapes (docs/gpu-runs.md, session 17).
# 51, 52 (session 17): the B3D twins of 29 and 20, 1.00x and 0.997x of them over the 10 shapes each uses in the
# table (paired); 50, the B3D twin of 22, stays: 1.04-1.08x on the long-K shapes of about a million outputs.
# 54 (session 18): 49's pair with 53's 128-deep slots, correct, cuBLASLt/config 0.690 on 7 long-K shapes where
# 53 read 0.893 (Nsight at 1024x1024x8192: 39.5 us against 53's 34.0, barrier stalls 7.0 a issue against 0.11).
# 55 (session 20): the 64 x 64 pair sharing B, correct (bitwise 37's results) and 0.64x 37's speed (median over
# 122 one-wave shapes, paired); Nsight at 512x1024x4096: 27.9 us against 37's 18.4, L2 bytes not reduced (106
# against 101 MB), barrier stalls 6.9 a issue. 56 (session 20): 37 with 13 slots, correct, 0.947x 37's speed
# (median over the same 122 shapes, paired), faster than the table on none by 3%: a deeper ring is not what
# cuBLAS's 13-slot kernel gains from there.
# 57-63 (session 21): the 64 x 64 pair's diagnostics, all correct (bitwise 37's or 56's results), median speed
# over 42 one-wave shapes paired with 37: 57 (no multicast) 0.649x, 58 (whole boxes in turn) 0.648x, 59 (no
# remote release) 0.665x, 60 / 61 (13 slots) 0.731x / 0.775x, 62 (no cluster barriers) 0.730x, 63 (no `live`
# branch) 0.839x (15 shapes): the pair lost to its barriers and `live` branch, not to its multicast. 64-67: the
# lean pair (UNCOND, relaxed start barrier, no end barrier): 0.942x, 0.943x, 0.962x (no multicast) and 0.903x
# (13 slots) of 37: with its overhead gone the multicast still buys nothing there. 70: the lean twin of 40,
# 0.993x of 27 (geomean over 8 large shapes). 68 and 69, the lean twins of 39 and 41, stay offered: 1.005x and
# 1.003x of their one-CTA twins 25 and 26 (1.015x / 1.018x of 39 / 41) on those 8 shapes.
# 77-79 (session 23): the cluster split-K twins of 29, 31, 36 at 2 (and 4) splits, 128 CTAs on the 64-wide skinny
# shapes; correct (bitwise their twins' split-K) and at best 0.983x, 1.002x, 0.969x of the table there (paired screen
# of the 64 M = 64 / N = 64 shapes of >= 1e9 FLOP): the CTA count is not what cuBLASLt gains there. 80 (37's twin)
# stays: 1.03-1.07x the table on 64x4096x8192 and 4096 x 64 x 4096-16384.
# 81-82 (session 24): the 256 x 64 tile and its pair along N, correct (82 bitwise 81), 0.834x and 0.925x of cuBLASLt
# on the eight 16384 x 128 x K shapes (paired screen; 74 there 0.741x): adopted on none.
# 83-88 (session 24): the quads, correct (bitwise their twins 22 / 36), 1-10% faster than the twins where 24 quads
# make one wave (64 x 12288 x K, 12288 x 64 x K; 87-88 with 128 B promotion 3-6% faster again), two waves at 16384
# (30 quads resident at most), and slower than the table on all 64 M = 64 / N = 64 shapes of >= 1e9 FLOP (best 0.992x;
# 87 / 88 at 64x12288x8192 / 12288x64x8192: 54.1 / 54.6 us, cuBLASLt autotuned 49.7 / 49.8): adopted on none.
# 93, 95, 96 (session 25): on the 155 large shapes where the table trails cuBLASLt (paired screen, 8 rounds) 93 read
# 0.973x the table (best 1.023x) and 95 0.947x (best 1.026x); 96 ran as 74 (0.764x the table on 24 N = 128 shapes, equal
# to 74 to the microsecond: 128 B promotion changes nothing for the pair along N). 91, 92, 94 (0.962-0.977x there, above
# the table on 22-64 shapes, up to 1.06x) stay for a retune.
# 97-101 (session 26): the 128 x 160 tiles with B and C in 32-column chunks (64-byte swizzle), correct (98 bitwise 97 and
# the pairs), on the 155 large shapes where the table trails cuBLASLt 0.876x (97, 98), 0.878x (99), 0.934x (100) and
# 0.918x (101) of the table (geomean, paired screen, 8 rounds), best 1.016x: cuBLAS's tile is in its own frame 160 of
# our M by 128 of N (102-103). 105 (session 26): the swapped pair along M sharing B, correct (bitwise 102), 0.938x the
# table on those 155 shapes (above it on 6, by 3% on 1), 0.998x on the 6 candidate shapes of the second screen; 102-104
# stay (adopted on 3 shapes, paired screen and a confirming second screen).
# 114 (session 28, the 32 x 128 swapped tile): correct (bitwise 113), slower than the table on all 282 small long-K
# shapes it was screened on (113 beside it above the table on 31).
# 123-125 (session 33, the k-split twins of 37, 115, 113): correct (GPU tests), 0.699x / 0.698x / 0.648x the table over
# the 470 grid shapes of M x N <= 2^20 (paired screen, 8 rounds), 3% above it on none; Nsight at 512x1024x4096: 123
# 18.5 us against 37's 18.4 with cuBLASLt's warps resident (occupancy 14.2% against 8.2%): two chains a tile do not
# make the 64 x 64 tile faster.
RETIRED_WGMMA_IDS: frozenset[int] = frozenset({44, 45, 46, 47, 48, 49, 51, 52, 54, 55, 56, 57, 58, 59, 60, 61, 62,
                                               63, 64, 65, 66, 67, 70, 77, 78, 79, 81, 82, 83, 84, 85, 86, 87, 88,
                                               93, 95, 96, 97, 98, 99, 100, 101, 105, 114, 123, 124, 125})


def enabled_wgmma_ids() -> frozenset[int] | None:
    """wgmma config ids the tuner may time: $CUDAOPT_GEMM_WGMMA_IDS (comma-separated ids); when unset,
    every config but UNMEASURED_WGMMA_IDS and RETIRED_WGMMA_IDS (None where none is left out). The GPU script sets it to the
    configs that passed its smoke test, so one broken config does not take the working ones out of the
    run."""
    raw = os.environ.get("CUDAOPT_GEMM_WGMMA_IDS")
    if raw is None:
        left_out = UNMEASURED_WGMMA_IDS | RETIRED_WGMMA_IDS
        if not left_out:
            return None
        return frozenset(c.id for c in KERNEL_CONFIGS if c.kind == "wgmma") - left_out
    return frozenset(int(v) for v in raw.split(",") if v.strip())


def enabled_wgmma_splitk_ids() -> frozenset[int] | None:
    """wgmma config ids whose split-K the tuner may time: $CUDAOPT_GEMM_WGMMA_SPLITK_IDS, None (all)
    when unset. The GPU script sets it to the configs whose split-K passed its smoke test, so a
    broken split-K path costs only the split candidates, not the config's plain kernel."""
    raw = os.environ.get("CUDAOPT_GEMM_WGMMA_SPLITK_IDS")
    if raw is None:
        return None
    return frozenset(int(v) for v in raw.split(",") if v.strip())


def split_choices(cfg: KernelConfig, m: int, n: int, k: int, num_sms: int = NUM_SMS_H200) -> list[int]:
    """K splits worth timing for cfg on (m, n, k): 1, and more only where the tile grid leaves SMs
    idle (tiles < #SMs) without piling up (tiles x splits <= 4 x #SMs). mma.sync: each split keeps at
    least 128 of K. wgmma (generation 2): each split keeps at least 2 k-blocks of 64, the smallest
    with one k-block in flight under the next (wait_group 1), so splits <= k-blocks // 2."""
    out = [] if cfg.csplit else [1]  # a cluster split-K twin's one split is its twin's kernel
    tiles = cfg.tiles(m, n)
    if tiles >= num_sms:
        return out
    splitk_ids = enabled_wgmma_splitk_ids() if cfg.kind == "wgmma" else None
    for s in (WGMMA_SPLIT_CHOICES if cfg.kind == "wgmma" else SPLIT_CHOICES):
        if s == 1 or s > cfg.max_splits or tiles * s > 4 * num_sms:
            continue
        if cfg.kind == "wgmma":
            if wgmma_k_blocks(k) // s < 2 or (splitk_ids is not None and cfg.id not in splitk_ids):
                continue
        elif k // s < 128:
            continue
        out.append(s)
    return out


def enabled_wgmma_configs() -> tuple[KernelConfig, ...]:
    ids = enabled_wgmma_ids()
    return tuple(c for c in WGMMA_CONFIGS if ids is None or c.id in ids)


MMA_TUNE_MAX_FLOP = 1e9  # 2MNK from which the tuner times only wgmma configs (when wgmma is enabled)


def candidate_choices(m: int, n: int, k: int, num_sms: int = NUM_SMS_H200) -> list[Choice]:
    """The configurations worth timing for one shape: tiles not far larger than the matrix, each
    with the splits of `split_choices` (split-K only where the tile grid leaves the SMs idle)."""
    out = []
    kinds = enabled_kinds()
    wgmma_ids = enabled_wgmma_ids()
    # From 1e9 FLOP up the wgmma path beat the mma.sync heuristic on every measured shape (64-shape
    # samples, sessions 6-7: 1.05x at the least in 1e8-1e9, 1.74x at the least from 1e9), and the
    # slow mma candidates cost most of a large shape's tuning time: time them only below 1e9.
    for cfg in KERNEL_CONFIGS:
        if cfg.kind not in kinds:
            continue
        if cfg.kind == "wgmma" and wgmma_ids is not None and cfg.id not in wgmma_ids:
            continue
        if cfg.bm > max(2 * m, 32) or cfg.bn > max(2 * n, 64) or not cluster_offered(cfg, m, n, num_sms):
            continue
        out += [Choice("ours", cfg.id, s) for s in split_choices(cfg, m, n, k, num_sms)]
    wgmma = [c for c in out if KERNEL_CONFIGS[c.config].kind == "wgmma"]
    return wgmma if wgmma and 2 * m * n * k >= MMA_TUNE_MAX_FLOP else out
