// fp16 GEMM on Hopper (sm_90a): TMA + wgmma, warp-specialised and persistent.
//
// C[M,N] = A[M,K] @ B[K,N], all row-major fp16, fp32 accumulation, fp16 output.
//
// Block layout: warpgroup 0 is the producer (one thread issues TMA loads; setmaxnreg gives its
// registers away), warpgroups 1..CONSUMERS are consumers issuing wgmma.mma_async. Each consumer owns
// BM/CONSUMERS rows of the block tile and the full BN columns, as one or two m64nBNk16 chains.
// STAGES shared-memory slots form a ring guarded by two mbarriers per slot: `full` (TMA bytes
// arrived) and `empty` (every consumer warp finished reading the slot).
//
// Shared-memory layouts, both written by TMA with CU_TENSOR_MAP_SWIZZLE_128B:
//   A slot: BM rows x 64 halves (128 bytes per row) -> K-major, 128B swizzle. Descriptor: start
//           address, LBO unused (1), SBO = 1024 bytes (8 rows x 128 bytes), swizzle mode 1.
//           The k-th 16-wide K step starts 32*k bytes further into the 128-byte row.
//   B slot: BN/64 chunks, each 64 K-rows x 64 halves of N (128 bytes per row) -> N-major ("MN-major"
//           in the PTX ISA), 128B swizzle, read with imm-trans-b = 1. Descriptor: LBO = bytes
//           between two 64-column chunks (64 x 128 = 8192), SBO = 1024 bytes (8 K-rows), swizzle 1.
//           The k-th K step starts 16 rows = 2048 bytes further.
//   Tiles whose width 64 does not divide (160, session 26) hold B and stage C in 32-column chunks of 64-byte rows
//   instead, CU_TENSOR_MAP_SWIZZLE_64B and descriptor swizzle mode 2 (WgmmaTile2::kCols). The swapped-operand tiles
//   (SWAP, session 26) feed B's 64-column chunks as wgmma's M-major A operand and A's rows as its K-major B operand.
// Every slot starts on a 1024-byte boundary, so the descriptors' base-offset field stays 0.
//
// Tails: TMA zero-fills out-of-bounds rows/columns of A and B, so M, N and K need not be multiples
// of the tile; the epilogue predicates its stores on row < M and col < N. Requirements (checked on
// the host): K % 8 == 0, N % 8 == 0, lda/ldb/ldc % 8 == 0 and 16-byte aligned base pointers (TMA
// global strides and addresses must be multiples of 16 bytes).
//
// Persistent schedule: grid = min(#SMs, #tiles); block b walks tiles b, b + grid, ... in a grouped
// order (8 tile-rows per column sweep) so that concurrently running blocks share A and B in L2.
// Producer and consumers walk the same sequence, so the ring's phase bits stay in step.
//
// Epilogue: fp32 accumulators are converted to fp16 and stored straight from registers (half2
// per thread, predicated). It overlaps with the producer's loads for the next tile.
//
// Split-K (generation 2 only, splits > 1): the persistent blocks walk work items = tiles x splits
// instead of tiles; item w covers tile w % tiles and a balanced contiguous range of k-blocks of
// split w / tiles (work_item). Each item's fp32 accumulators go to a caller-owned workspace
// [splits][M][N] with plain stores, and a reduce kernel sums the splits into fp16 C on the
// same stream. splits == 1 launches the unchanged plain kernels.
//
// Host side: tensor maps are encoded with cuTensorMapEncodeTiled obtained through
// cudaGetDriverEntryPointByVersion (no libcuda link), cached per (pointer, shape, box) in a small
// table, and passed by value as __grid_constant__ parameters. No device allocation, no
// synchronisation: each call is one kernel launch on the caller's stream (two with split-K), made
// programmatic (PDL: pdl_wait_then_release) so that it can be scheduled under its predecessor's tail.
#include <cuda.h>  // CUtensorMap and its enums only; the driver entry point comes through cudart
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>
#include <climits>
#include <mutex>

namespace {

constexpr int kBK = 64;          // K per pipeline slot: 64 halves = one 128-byte swizzle row
#ifdef CUDAOPT_EXPERIMENT_GROUP_M  // diagnostic builds only (scripts/gpu_check.sh gemm_order)
constexpr int kGroupM = CUDAOPT_EXPERIMENT_GROUP_M;
#else
constexpr int kGroupM = 8;       // tile-rows per column sweep of the persistent schedule
#endif
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;  // 128 x 40 + 256 x 232 <= 64K registers for 384 threads

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier -----------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx_at(uint32_t addr, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(addr), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  mbar_expect_tx_at(smem_u32(bar), bytes);
}
__device__ __forceinline__ void mbar_arrive_at(uint32_t addr) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(addr) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) { mbar_arrive_at(smem_u32(bar)); }
// Spins until the phase with the given parity of the barrier at shared address addr has completed.
__device__ __forceinline__ void mbar_wait_at(uint32_t addr, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) { mbar_wait_at(smem_u32(bar), parity); }

// ---- TMA ----------------------------------------------------------------------------------------
// 2-D tile load: box at (inner coordinate c0, outer coordinate c1) into shared memory at dst,
// completing `bytes` of transaction count on bar (both shared addresses).
__device__ __forceinline__ void tma_load_2d_at(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// A box of a 3-D map (B3D: all of a k-block's 64-column chunks of B in one instruction).
__device__ __forceinline__ void tma_load_3d_at(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2,
                                               uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
// The same loads from generic pointers.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
  tma_load_2d_at(smem_u32(dst), map, c0, c1, smem_u32(bar));
}
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1, int c2,
                                            uint64_t* bar) {
  tma_load_3d_at(smem_u32(dst), map, c0, c1, c2, smem_u32(bar));
}
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Programmatic dependent launch (PDL). The host launches every kernel here with programmatic stream
// serialisation (unless cudaopt_wgmma_set_pdl(0)), so a kernel may be scheduled while the previous
// kernel on the stream is still running, as soon as every block of that one has called
// launch_dependents (or exited). Each kernel waits (griddepcontrol.wait: the previous grid has completed
// and its memory is visible) before its first global or TMA access, after its barrier set-up; a launch
// that is not programmatic returns from the wait at once. What overlaps is the next launch and its
// prologue. Where the release sits is per kernel role:
// - plain GEMM kernels release, then wait (since session 31): the next grid may be scheduled while this one
//   still waits on its predecessor. Paired against the wait-then-release order of sessions 12-30 on the whole
//   grid, same kernels, bit-identical outputs (benchmarks/gemm_build_ab.py; docs/gpu-runs.md session 31): 3.2%
//   faster below 1e8 FLOP, 1.7% at 1e8-1e9, level from 1e10.
// - split-K GEMM kernels (separate reduce or in-kernel) and the split-K reduce kernels wait, then release. The
//   reduces released first made the long-K split-K shapes 15-17% slower (cause not known); the split-K GEMMs
//   released first read level overall, 2-3% slower on some long-K shapes (sessions 31-32). The diagnostic defines
//   that built the other orders were retired in session 37 (db3d011 still has them).
enum PdlRole { kPdlGemm, kPdlSplitK, kPdlReduce };
template <PdlRole ROLE>
__host__ __device__ constexpr bool release_first() {
  return ROLE == kPdlGemm;
}
template <PdlRole ROLE = kPdlGemm>
__device__ __forceinline__ void pdl_wait_then_release() {
  if constexpr (release_first<ROLE>()) {
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
  } else {
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  }
}
// Late producer wait (session 36; the default since session 38, whose paired A/B read the grid 3.3% faster, the
// shapes under 1e8 FLOP 11%): in the generation-2 and cluster bodies every thread used to wait for the predecessor at
// the top, so the producer's register hand-off, map prefetch and first-item arithmetic (tile_coords: two integer
// divisions; 120 instructions from the wait to the first TMA load in the 32 x 64 swapped kernel's SASS, 229 in the
// 64 x 64 split-K kernel's) ran after the wait, in front of the first load of a latency-bound call. Now the top keeps
// only the release of the release-first roles (pdl_top) and each thread waits once, before its first global or TMA
// access (pdl_late): the TMA producer thread once its first item's coordinates are known (produce_tiles*; each later
// item's are computed after the previous item's loads are issued), the other threads at the start of their role.
// Each thread still executes the wait and the release once, in its role's order. scripts/gemm_sass.py --pdl
// counts the instructions from the wait to the first load and checks that no global access precedes a wait.
// CUDAOPT_EXPERIMENT_TOP_WAIT (diagnostic builds only) builds the old order, for an A/B.
#ifdef CUDAOPT_EXPERIMENT_TOP_WAIT
constexpr bool kLateWait = false;
#else
constexpr bool kLateWait = true;
#endif
// Fresh ring (session 36; the default since session 38, with the late wait): the TMA producers skip the empty-slot
// wait on their ring's first pass, where it returns at once anyway (a fresh barrier counts as having completed the
// phase before phase 0), so that the first load of a call follows the PDL wait by one shared-memory round trip less.
// The same loads in the same order. CUDAOPT_EXPERIMENT_RING_FIRST_WAIT (diagnostic builds only) asks it again.
#ifdef CUDAOPT_EXPERIMENT_RING_FIRST_WAIT
constexpr bool kFreshRing = false;
#else
constexpr bool kFreshRing = true;
#endif
template <PdlRole ROLE>
__device__ __forceinline__ void pdl_top() {
  if constexpr (!kLateWait)
    pdl_wait_then_release<ROLE>();
  else if constexpr (release_first<ROLE>())
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}
template <PdlRole ROLE>
__device__ __forceinline__ void pdl_late() {
  if constexpr (kLateWait) {
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    if constexpr (!release_first<ROLE>()) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  }
}

// The reduce kernels of splitk_reduce.cuh (shared with hgemm_mma.cu, which defines its own).
__device__ __forceinline__ void pdl_reduce_wait_then_release() { pdl_wait_then_release<kPdlReduce>(); }

// Early map prefetch (session 30; diagnostic builds only, benchmarks/gemm_build_ab.py): thread 0 prefetches the
// tensor maps before the PDL wait, instead of the threads that use them doing so after it. The maps are kernel
// parameters, which the previous grid cannot have written, so their fetch may overlap that grid's tail rather than
// sit in front of the first TMA of a latency-bound call. Session 20 tried a variant (warp 1 at kernel entry) and
// read it across two grids, not paired; off in the shipped library until a paired A/B says otherwise.
#ifdef CUDAOPT_EXPERIMENT_EARLY_MAP_PREFETCH
constexpr bool kEarlyMapPrefetch = true;
#else
constexpr bool kEarlyMapPrefetch = false;
#endif
// Exit after read (session 30; diagnostic builds only): a CTA's last wait on its TMA stores of C asks only that the
// staging buffer has been read (cp.async.bulk.wait_group.read, as the waits between its tiles already do), not that
// the writes have landed: nothing in the grid reads C, and the grid's completion, which the next kernel's PDL wait
// waits for, covers its bulk stores. The CTA's end, and so a latency-bound call's, may come earlier.
#ifdef CUDAOPT_EXPERIMENT_EXIT_AFTER_READ
constexpr bool kExitAfterRead = true;
#else
constexpr bool kExitAfterRead = false;
#endif

// Producer ring (written in session 38; the default since session 43): the one-CTA producer (produce_tiles) takes
// its barriers' and slots' shared addresses once (RingAt, as the consumers have since session 35) instead of
// converting generic pointers in every k-block. With the fresh ring's branch around the empty-slot wait the compiler
// rematerialised the shared window's base (S2UR SR_CgaCtaId and the alignment arithmetic) twice a k-block in the
// producer thread; session 38's A/B read the fresh ring 8-10% slower on the 32 x 64 and 64 x 64 kernels on long-K
// shapes of 1e9-1e10 FLOP, where a small tile's k-block is short and the one producer thread's issue rate can bound
// the loop. Session 43's two paired A/Bs over the grid (H100s, bitwise equal): 1.0085 / 1.0088 geomean, < 1e8 FLOP
// 1.023 / 1.026. CUDAOPT_EXPERIMENT_POINTER_PRODUCER (diagnostic builds only) builds the old producer, for an A/B.
#ifdef CUDAOPT_EXPERIMENT_POINTER_PRODUCER
constexpr bool kProducerRing = false;
#else
constexpr bool kProducerRing = true;
#endif

#include "splitk_reduce.cuh"  // the split-K reduce kernels, shared with hgemm_mma.cu
#include "wgmma_asm.cuh"      // the wgmma m64nNk16 instructions (generated)

// ---- thread-block clusters (the 2x1 cluster kernels only) -------------------------------------
// Multicast 2-D tile load: the box lands at the same CTA-relative shared-memory offset `dst` in
// every CTA of cta_mask, and completes `bytes` of transaction count on the mbarrier at the same
// offset `bar` in each of those CTAs.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, int c0, int c1,
                                                      uint64_t* bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar)), "h"(cta_mask)
      : "memory");
}
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_id_x() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_count_x() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster: release this thread's prior memory operations (mbarrier
// inits, remote arrivals) to the cluster, then wait for all threads of the cluster. Not .aligned:
// the producer and consumer warpgroups reach it from different code paths.
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// Arrive on the mbarrier at the same offset as `bar` in CTA `cta` of the cluster (mapa gives its
// shared::cluster address), with mbarrier.arrive's default semantics (release, CTA scope): the slot's
// reads were wgmma's, already waited for (wgmma.wait_group), and the peer refills it by TMA, the
// pattern CUTLASS's cluster barriers use. The .release.cluster form compiled to MEMBAR.ALL.CTA,
// MEMBAR.ALL.GPU, ERRBAR and CGAERRBAR before each arrive: two GPU-wide fences per k-block in every
// consumer warp (session 9's SASS comparison, when the cluster configs ran 1.7-2.6x slower than their
// twins). Strictly, the PTX memory model's CTA scope does not reach the peer; this leans on the
// async proxy's ordering as CUTLASS does, and the GPU tests check the results.
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(smem_u32(bar)),
      "r"(cta)
      : "memory");
}

// ---- wgmma --------------------------------------------------------------------------------------
// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 start address
// >> 4, 16-29 leading-dimension byte offset >> 4, 32-45 stride-dimension byte offset >> 4, 49-51
// base offset (0: slots are 1024-byte aligned), 62-63 swizzle mode (1 = 128-byte swizzle, 2 = 64-byte: the
// 160-wide tiles' B, whose 32-column chunks have 64-byte rows, session 26).
__device__ __forceinline__ uint64_t make_desc(uint32_t smem_addr, uint32_t lbo_bytes,
                                              uint32_t sbo_bytes, uint32_t swizzle = 1) {
  uint64_t d = 0;
  d |= (uint64_t)((smem_addr & 0x3FFFF) >> 4);
  d |= (uint64_t)((lbo_bytes & 0x3FFFF) >> 4) << 16;
  d |= (uint64_t)((sbo_bytes & 0x3FFFF) >> 4) << 32;
  d |= (uint64_t)swizzle << 62;
  return d;
}

// Uniform descriptors (session 34). Nsight's source counts at 512x1024x4096 had our 64 x 64 pair issue ~20 integer
// instructions a wgmma (LOP3, IMAD, SHF, R2UR: make_desc's masks and shifts per wgmma, in per-thread registers moved
// to uniform ones) where cuBLAS's kernel issues ~4 uniform ones. Now each slot's operand gets one descriptor and each
// wgmma adds its offset / 16 to the start-address field (bits 0-13 hold a shared address below 256 KB >> 4, so the add
// cannot carry into the fields above: the descriptors are bit for bit make_desc's), and the warpgroup index comes
// through a warp broadcast, which the compiler knows is warp-uniform, so the ring position, slot addresses and
// descriptors live in uniform registers (the 64 x 64 ping-pong's k-block: 60 instructions, no R2UR, from 93).
// Paired on the whole grid, bitwise equal (docs/gpu-runs.md, session 34): 1.9% faster in geomean, faster on 811 of
// 1,000 shapes.
// Session 35 (docs/gpu-runs.md, "Session 35"; paired on the whole grid against session 34's build, bitwise equal on
// 1000/1000 shapes: 1.0031x geomean, faster on 630, no work class slower) added four cuts, one form since session 37
// (their opt-out defines retired; db3d011 still builds the older forms):
// - ring addresses as shared addresses (RingAt, session 34's U32_SLOTS): the consumers' ring addresses converted
//   once, before the item loop. Converting each generic pointer where it is used let the compiler rematerialise the
//   shared window's base (S2UR SR_CgaCtaId and the 1 KB alignment) in every k-block, in front of the full barrier's
//   wait (the 64 x 64 ping-pong's k-block 60 instructions, 47 with it). (Through an opaque move: with plain values
//   the compiler still rematerialises them from S2UR in the loop.)
// - slot descriptors (SLOT_DESC): each operand's descriptor made once from the ring's base, the slot's offset (in
//   16-byte units) added to its start-address field like a k-step's (SmemDesc::at; the ring lies below 227 KB, so
//   the add cannot carry: the same descriptors) instead of masked and shifted from the slot's address in every
//   k-block: 4 instructions fewer a k-block in 164 of the 194 kernels.
// - the descriptors' high word (DESC_HI): stride and swizzle, a constant, ORed with base >> 30, which is 0 for every
//   shared address (the window is below 256 KB) but which the compiler cannot know. As a constant it was
//   rematerialised with two UMOVs in front of every HGMMA; as a run-time value made from the ring base it stays in
//   the descriptor registers: 6 instructions fewer a k-block in 164 kernels. The same descriptors bit for bit.
// - the split-K fixup's barrier result broadcast (SK_UNIFORM, named_bar_or below).
__device__ __forceinline__ int warpgroup_index() {
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
}
__device__ __forceinline__ uint32_t opaque_u32(uint32_t v) {
  uint32_t r;
  asm volatile("mov.b32 %0, %1;\n" : "=r"(r) : "r"(v));
  return r;
}
struct RingAt {
  uint32_t full, empty, a, b;  // the full and empty barriers' and the A and B slots' shared addresses
  RingAt() = default;           // (unset: produce_tiles without kProducerRing)
  __device__ __forceinline__ RingAt(const uint64_t* full_bars, const uint64_t* empty_bars, const unsigned char* slots_a,
                                    const unsigned char* slots_b)
      : full(opaque_u32(smem_u32(full_bars))), empty(opaque_u32(smem_u32(empty_bars))),
        a(opaque_u32(smem_u32(slots_a))), b(opaque_u32(smem_u32(slots_b))) {}
};
// The descriptors of the shared memory at base + off for one operand of one slot (off a multiple of 16).
template <uint32_t LBO, uint32_t SBO, uint32_t SWZ = 1>
struct SmemDesc {
  uint64_t d0;
  // (base >> 30 is 0: see "the descriptors' high word" above)
  __device__ __forceinline__ explicit SmemDesc(uint32_t base)
      : d0(make_desc(base, LBO, SBO, SWZ) | (static_cast<uint64_t>(base >> 30) << 32)) {}
  // units: a further offset already in 16-byte units (SLOT_DESC's slot offset: the compiler cannot fold a run-time
  // offset's shift into the compile-time one's, and would shift and add per wgmma)
  __device__ __forceinline__ uint64_t at(uint32_t off, uint32_t units = 0) const {
    const uint32_t lo = static_cast<uint32_t>(d0) + (off >> 4) + units;
    return (d0 & 0xFFFFFFFF00000000ull) | lo;
  }
};

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads/writes of an accumulator across the asynchronous window
// (the wgmma asm statements "write" the registers when issued; the hardware writes them later).
template <int R>
__device__ __forceinline__ void fence_operands(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The wgmma m64nNk16 instructions, one per N, are generated (wgmma_asm.cuh, scripts/gen_wgmma_asm.py) with the
// transposition flags as template immediates, with wgmma_m64nk16<N, TA, TB> picking the block of width N; the two
// wrappers below fix the flags of each operand frame.
//
// Our frame: D(64 x N, fp32) (+)= A(64 x 16, K-major smem) * B(16 x N, N-major smem): imm-trans-b = 1.
// `accumulate` = 0 overwrites D (the first K step of a tile), 1 adds to it. N = 192 (session 12): 128 x 192 and
// 64 x 192 tiles give 128 tiles on a 256 x 12288 or 128 x 12288 C, where 128 x 256 tiles leave 36 of 132 SMs idle
// (96 tiles). N = 160 (session 26): cuBLASLt's tile on 82 of the 113 large shapes where it beat the table is
// 128 x 160 (nvjet_sm90_hsh_128x160_64x5_2x1).
// TB = 0 (BT, session 39): B given K-major (B^T stored N x K row-major, the TN layout of cuBLAS and of nn.Linear's
// weight), its smem slot B^T's N rows laid out as A's rows are: imm-trans-b = 0.
template <int N, int TB = 1>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  static_assert(N == 64 || N == 128 || N == 160 || N == 192 || N == 256, "our frame: N = 64, 128, 160, 192, 256");
  wgmma_m64nk16<N, 0, TB>(d, desc_a, desc_b, accumulate);
}

// The swapped operands (session 26, SWAP in WgmmaTile2): D^T(64 x N) (+)= B^T(64 x 16, our B's 64-column chunk: M-major
// smem, imm-trans-a = 1) * A^T(16 x N, our A's N rows: K-major smem, imm-trans-b = 0). D's rows run along our N, its
// columns along our M: cuBLAS's frame for a row-major C, where its 128 x 160 tile is 160 rows of our M by 128 of N.
// Session 27: the other heights, 144 (8192 / 144 = 56.9 tile rows), 168 and 176 (cuBLAS's 168x128 and 176x128
// ping-pongs, session 15's notes) and 192. Session 28: 32 and 64, the narrow tiles of the small long-K shapes
// (cuBLASLt's fastest there is a 64x32 tile in its frame, 32 rows of our M: one wave without split-K). Session 29: 16,
// the narrowest (the latency-bound small shapes, where 32 rows beat the 64 x 64 tile by spreading over more SMs).
// TA = 0 (BT): B given K-major, wgmma's A is 64 of B^T's rows (K-major): imm-trans-a = 0.
template <int N, int TA = 1>
__device__ __forceinline__ void wgmma_m64k16_swapped(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b,
                                                     int accumulate) {
  static_assert(N == 16 || N == 32 || N == 64 || N == 144 || N == 160 || N == 168 || N == 176 || N == 192,
                "swapped: N = 16, 32, 64, 144, 160, 168, 176, 192");
  wgmma_m64nk16<N, TA, 0>(d, desc_a, desc_b, accumulate);
}

template <int BM, int BN, int CONSUMERS, int STAGES>
struct WgmmaTile {
  static constexpr int kThreads = (CONSUMERS + 1) * 128;
  static constexpr int kRowsPerConsumer = BM / CONSUMERS;
  static constexpr int kMI = kRowsPerConsumer / 64;  // m64 chains per consumer warpgroup
  static constexpr int kAcc = BN / 2;                // fp32 accumulators per thread per chain
  static constexpr int kSlotABytes = BM * kBK * 2;
  static constexpr int kChunkBBytes = 64 * kBK * 2;  // one 64-column chunk of the B slot
  static constexpr int kCols = 64, kChunks = BN / 64;  // (produce_tiles, shared with generation 2)
  static constexpr int kSlotBBytes = BN * kBK * 2;
  static constexpr int kSlotBytes = kSlotABytes + kSlotBBytes;
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + STAGES * kSlotBytes + 2 * STAGES * 8;
  static_assert(BM % (64 * CONSUMERS) == 0, "each consumer owns whole m64 blocks");
  static_assert(BN == 64 || BN == 128 || BN == 256, "wgmma wrappers exist for N = 64, 128, 256");
  static_assert(BM <= 256, "a TMA box has at most 256 rows");
  static_assert(CONSUMERS >= 1 && CONSUMERS <= 2, "register split assumes at most 3 warpgroups");
  static_assert(kSlotABytes % 1024 == 0 && kSlotBBytes % 1024 == 0, "slots must stay 1024-aligned");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per block is at most 227 KB");
};

// Grouped tile order: kGroupM tile-rows are swept column by column before moving down.
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int group_size = kGroupM * tiles_n;
  const int group = tile / group_size;
  const int first_m = group * kGroupM;
  const int rows = min(tiles_m - first_m, kGroupM);
  const int in_group = tile - group * group_size;
  tm = first_m + in_group % rows;
  tn = in_group / rows;
}

// 2x1 cluster schedule (the cluster kernels: kWgmmaConfigs entries with cluster 2). The two CTAs of
// a cluster compute vertically adjacent tiles (2p, n) and (2p + 1, n) of one tile column, so they
// share the B panel: each CTA loads its own A box and half of B's 64-column chunks, multicast to
// both. The unit of work is such a pair: units = ceil(tiles_m / 2) x tiles_n, walked in the grouped
// order of tile_coords over pair-rows (kGroupM pair-rows per column sweep); cluster c walks units c,
// c + #clusters, ..., and both CTAs of a cluster walk the same units (same k-blocks, same ring
// positions). With an odd tiles_m the last pair-row's rank-1 tile lies past M (tm == tiles_m): that
// CTA is "idle" for the unit but still takes full part in the protocol (it loads and multicasts its
// half of B, waits for every full barrier, releases every slot to both CTAs), it only skips its A
// load (its transaction count is the B bytes alone), the wgmmas and the epilogue. So the ring
// positions, barrier phases and turn barriers of the two CTAs never diverge. Host and device code
// (cudaopt_wgmma_cluster_tile exposes it to the CPU tests).
// cm = 4 (session 24, kClusterQuad): the same walk over groups of four tile rows, CTA r of the cluster on row
// 4p + r; the ranks past M (tiles_m % 4 != 0, last group) idle as rank 1 of an odd pair does.
constexpr int kClusterMax = 2;
constexpr int kClusterQuad = 4;
__host__ __device__ __forceinline__ void cluster_tile(int unit, int rank, int tiles_m, int tiles_n, int& tm,
                                                      int& tn, int cm = kClusterMax) {
  const int pairs_m = (tiles_m + cm - 1) / cm;
  const int group_size = kGroupM * tiles_n;
  const int group = unit / group_size;
  const int first_p = group * kGroupM;
  const int rows = pairs_m - first_p < kGroupM ? pairs_m - first_p : kGroupM;
  const int in_group = unit - group * group_size;
  tm = cm * (first_p + in_group % rows) + rank;
  tn = in_group / rows;
}

// B mode 5 (session 22): the pair along N. Its two CTAs compute horizontally adjacent tiles (m, 2p) and
// (m, 2p + 1) of one tile row and share A (each multicasts half of A's rows); the walk is cluster_tile's with
// the roles of M and N swapped (units = tiles_m x ceil(tiles_n / 2); rank 1 idles past N).
constexpr int kPairAlongN = 5;
// 6 (session 24, kAlongNTurn): a cluster along N whose CTAs multicast A's whole box in turn (CTA kt % CM at k-block
// kt), where 5 sends each CTA's share of A's rows every k-block.
constexpr int kAlongNTurn = 6;
__host__ __device__ constexpr bool along_n(int mc) { return mc == kPairAlongN || mc == kAlongNTurn; }
// A cluster's work units, cm CTAs each: groups of cm tile rows, or of cm tile columns for a cluster along N (B mode
// mc). The cluster body walks them (times splits with split-K); the host bounds its grid by them.
template <typename I>
__host__ __device__ constexpr I cluster_units(I tiles_m, I tiles_n, int cm, int mc) {
  return along_n(mc) ? tiles_m * ((tiles_n + cm - 1) / cm) : (tiles_m + cm - 1) / cm * tiles_n;
}
template <int MC, int CM = kClusterMax>
__host__ __device__ __forceinline__ void pair_tile(int unit, int rank, int tiles_m, int tiles_n, int& tm, int& tn) {
  if constexpr (along_n(MC))
    cluster_tile(unit, rank, tiles_n, tiles_m, tn, tm, CM);
  else
    cluster_tile(unit, rank, tiles_m, tiles_n, tm, tn, CM);
}

// Split-K work items (generation 2 with splits > 1). Item w of num_tiles x splits is split-major,
// w = split * num_tiles + tile, so the items running at once are mostly one split's neighbouring
// tiles (they share A and B panels in L2; two splits of one tile share nothing). Split s covers
// the k-blocks [s * KT / S, (s + 1) * KT / S): balanced (counts differ by at most 1) and, with
// S <= KT (checked on the host), at least one k-block each. S <= kWgmmaMaxSplits and KT < 2^25
// (K is an int) keep s * KT below 2^31. Host and device code: the producer, both consumers and the
// CPU tests (cudaopt_wgmma_work_item) all use this one function, so they agree on every item.
// 64 (was 16 until session 11): a matrix of one or two tiles with a long K (64 x 128 x 16384) runs
// on at most splits CTAs, so 16 left 116 of 132 SMs idle.
constexpr int kWgmmaMaxSplits = 64;
constexpr int kCsplitMaxSplits = 8;  // cluster split-K: a portable cluster holds at most 8 CTAs
struct WorkItem {
  int tile, split, kb_first, kb_count;
};
__host__ __device__ __forceinline__ WorkItem work_item(int w, int num_tiles, int splits, int k_tiles) {
  WorkItem it;
  it.split = w / num_tiles;
  it.tile = w - it.split * num_tiles;
  it.kb_first = it.split * k_tiles / splits;
  it.kb_count = (it.split + 1) * k_tiles / splits - it.kb_first;
  return it;
}

// Stream-K tail (SK, session 47): a persistent launch of `grid` CTAs over T tiles whose last wave is partial
// (r = T % grid tiles) leaves grid - r SMs idle for a whole tile's time; the wave probe (benchmarks/
// gemm_wave_probe.py) measured on an H100 that the tail costs about a whole wave. Here CTA b runs tiles b, b + grid,
// ... of the W = T / grid whole waves as the plain kernel does, then the r tail tiles are split along K into s
// splits each (s = sk_tail_splits: grid / r, at most k_tiles and a cap) and CTA b < r s takes split b / r of tail
// tile b % r (work_item(b, r, s, KT): its item b of r tiles x s splits, balanced k-block ranges): the tail takes 1 / s of a
// tile's time plus the fixup. All tail items run at once, split j of every tail tile at the same k-blocks, so A and
// B are read once from L2 as in the plain kernel. (The first form, one contiguous stream-K stretch of the last
// 1-2 waves' k-blocks per CTA, measured 1.41x the plain kernel's time on 39 H100 table shapes: concurrent CTAs at
// staggered k-offsets read the operands' panels several times over; docs/gemm.md "Session 47".)
// s == 1 is exactly the plain kernel's schedule. Host and device code; the CPU tests (cudaopt_wgmma_sk_item) and
// configs.sk_items mirror it.
struct SkSeg {
  int tile, kb_first, kb_count, split;  // split: the K split of a tail tile cut s ways (s > 1), else -1
};
// Work items of CTA b: its W whole-wave tiles, then at most one tail item.
__host__ __device__ __forceinline__ int sk_items(int b, int grid, int num_tiles, int splits) {
  const int waves = num_tiles / grid, r = num_tiles - waves * grid;
  return waves + (b < r * splits ? 1 : 0);
}
__host__ __device__ __forceinline__ SkSeg sk_item(int b, int j, int grid, int num_tiles, int k_tiles, int splits) {
  const int waves = num_tiles / grid, r = num_tiles - waves * grid;
  if (j < waves || splits == 1) return SkSeg{b + j * grid, 0, k_tiles, -1};
  const WorkItem w = work_item(b, r, splits, k_tiles);
  return SkSeg{waves * grid + w.tile, w.kb_first, w.kb_count, w.split};
}
// The tail's split count for a launch: grid / r (r = the tail tiles), at most k_tiles and `most`; 1 without a tail.
__host__ __device__ __forceinline__ int sk_tail_splits(int grid, int num_tiles, int k_tiles, int most) {
  const int r = num_tiles % grid;
  int s = r == 0 ? 1 : grid / r;
  s = s < k_tiles ? s : k_tiles;
  s = s < most ? s : most;
  return s > 1 ? s : 1;
}

// Cluster split-K (CSPLIT, session 12): a cluster of `splits` CTAs along x computes the splits of one
// tile, CTA rank s (= blockIdx.x % splits) split s, one item per block (grid = tiles x splits). The
// item index in work_item's split-major numbering:
__device__ __forceinline__ int csplit_item(int num_tiles, int splits) {
  return (int)(blockIdx.x % splits) * num_tiles + (int)(blockIdx.x / splits);
}
// 16 bytes of CTA `cta`'s shared memory at the offset `local` has in this CTA's (DSMEM).
__device__ __forceinline__ float4 ld_dsmem_f4(uint32_t local, uint32_t cta) {
  float4 v;
  asm volatile(
      "{\n.reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %4, %5;\n"
      "ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [ra];\n}\n"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "r"(local), "r"(cta)
      : "memory");
  return v;
}

// An item's k-blocks and tile, as the TMA producers (produce_tiles*) work them out; with the late producer wait
// (kLateWait) the first item's before the PDL wait and each later one's after the previous item's loads. MC >= 0: the
// cluster producer's (pair_tile of the cluster's rank), else the one-CTA tile_coords.
struct ItemAt {
  int kb_first, kb_count, tm, tn;
};
template <bool SPLITK, int MC = -1, int CM = kClusterMax>
__device__ __forceinline__ ItemAt item_at(int item, int num_units, int splits, int k_tiles, int tiles_m, int tiles_n,
                                          int rank = 0) {
  ItemAt it{0, k_tiles, 0, 0};
  int unit = item;
  if constexpr (SPLITK) {
    const WorkItem w = work_item(item, num_units, splits, k_tiles);
    unit = w.tile;
    it.kb_first = w.kb_first;
    it.kb_count = w.kb_count;
  }
  if constexpr (MC >= 0)
    pair_tile<MC, CM>(unit, rank, tiles_m, tiles_n, it.tm, it.tn);
  else
    tile_coords(unit, tiles_m, tiles_n, it.tm, it.tn);
  return it;
}

// SK: this CTA's item j (sk_item) in the producers' form.
__device__ __forceinline__ ItemAt sk_item_at(int j, int num_tiles, int k_tiles, int tiles_m, int tiles_n, int splits) {
  const SkSeg s = sk_item(blockIdx.x, j, gridDim.x, num_tiles, k_tiles, splits);
  ItemAt it{s.kb_first, s.kb_count, 0, 0};
  tile_coords(s.tile, tiles_m, tiles_n, it.tm, it.tn);
  return it;
}

// The producer warpgroup's one thread (both generations): the block's work items in order (items =
// tiles without split-K), each item's k-blocks in order, one TMA load of A and BN/64 of B into each
// ring slot once its consumers freed it. The ring position simply advances by one per k-block
// loaded, whatever each item's k-block count.
// B3D (session 17): map_b is 3-D (64 columns x K x N/64 chunks, see tensor_map) and each k-block's B
// chunks come in one box: two TMA instructions a k-block instead of 1 + BN/64, the slot's chunk-major
// layout unchanged. Nsight, 64 x 128 ping-pong at 1024x1024x8192: tensor pipe 81% against 71%.
// KB = 2 (with B3D): 128-deep slots, A's two k-chunks in one box of a 3-D map of A (64 columns x M x
// K/64 chunks) and B's chunks in one 128-row box: two TMA instructions per 128 of K.
// LATE (kLateWait, generation 2): this thread's PDL wait (pdl_late, role ROLE) follows its first item's coordinates,
// and each later item's coordinates are worked out once the previous item's loads are issued.
// BT (session 39): map_b is B^T's (N rows x K columns), and a k-block's B is one box of 64 columns x BN rows, which
// lands as the slot's BN rows of 128 bytes in TMA's 128B swizzle (A's slot layout).
template <class T, int BM, int BN, int STAGES, bool SPLITK = false, bool CSPLIT = false, bool B3D = false, int KB = 1,
          bool LATE = false, PdlRole ROLE = kPdlGemm, bool BT = false>
__device__ __forceinline__ void produce_tiles(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                              unsigned char* slots_a, unsigned char* slots_b,
                                              uint64_t* full, uint64_t* empty, int tiles_m, int tiles_n,
                                              int num_tiles, int k_tiles, int splits = 1) {
  if constexpr (!kEarlyMapPrefetch) {
    tma_prefetch_map(map_a);
    tma_prefetch_map(map_b);
  }
  int slot = 0;
  uint32_t phase = 0;
  const int num_items = SPLITK ? num_tiles * splits : num_tiles;
  // CSPLIT: one item per block, the cluster's splits of one tile (csplit_item)
  const int first = CSPLIT ? csplit_item(num_tiles, splits) : (int)blockIdx.x;
  const int step = CSPLIT ? num_items : (int)gridDim.x;
  [[maybe_unused]] bool wrapped = false;  // (kFreshRing) the ring has been round once
  [[maybe_unused]] ItemAt next{0, 0, 0, 0};
  // The ring's shared addresses: taken once (kProducerRing) or converted from the pointers where they are used.
  [[maybe_unused]] RingAt ring;
  if constexpr (kProducerRing) ring = RingAt(full, empty, slots_a, slots_b);
  auto empty_at = [&](int s) { return kProducerRing ? ring.empty + s * 8 : smem_u32(&empty[s]); };
  auto full_at = [&](int s) { return kProducerRing ? ring.full + s * 8 : smem_u32(&full[s]); };
  auto a_at = [&](int s) {
    return kProducerRing ? ring.a + s * T::kSlotABytes : smem_u32(slots_a + s * T::kSlotABytes);
  };
  auto b_at = [&](int s, int j) {
    return kProducerRing ? ring.b + s * T::kSlotBBytes + j * T::kChunkBBytes
                         : smem_u32(slots_b + s * T::kSlotBBytes + j * T::kChunkBBytes);
  };
  if constexpr (LATE) {
    if (first < num_items) next = item_at<SPLITK>(first, num_tiles, splits, k_tiles, tiles_m, tiles_n);
    pdl_late<ROLE>();
  }
  for (int item = first; item < num_items; item += step) {
    // (LATE: worked out before the wait, or after the previous item's loads)
    const ItemAt it = LATE ? next : item_at<SPLITK>(item, num_tiles, splits, k_tiles, tiles_m, tiles_n);
    const int kb_first = it.kb_first, kb_count = it.kb_count;
    const int m0 = it.tm * BM, n0 = it.tn * BN;
    for (int kt = 0; kt < kb_count; ++kt) {
      // A fresh barrier counts as having completed the phase before phase 0, so the first
      // pass over the ring (parity 1) does not wait (kFreshRing: is not asked).
      if (!kFreshRing || wrapped) mbar_wait_at(empty_at(slot), phase ^ 1);
      mbar_expect_tx_at(full_at(slot), T::kSlotBytes);  // OOB-filled boxes still count in full
      const int k0 = (kb_first + kt) * kBK * KB;
      if constexpr (KB == 1) {
        tma_load_2d_at(a_at(slot), map_a, k0, m0, full_at(slot));
      } else {
        static_assert(B3D, "128-deep slots load B through the 3-D map too");
        tma_load_3d_at(a_at(slot), map_a, 0, m0, k0 / 64, full_at(slot));
      }
      if constexpr (BT) {
        static_assert(KB == 1 && !B3D && BN <= 256, "B^T: 64-deep slots, one box of at most 256 rows");
        tma_load_2d_at(b_at(slot, 0), map_b, k0, n0, full_at(slot));
      } else if constexpr (B3D) {
        static_assert(T::kCols == 64, "the 3-D map of B has 64-column chunks");
        tma_load_3d_at(b_at(slot, 0), map_b, 0, k0, n0 / 64, full_at(slot));
      } else {
#pragma unroll
        for (int j = 0; j < T::kChunks; ++j)
          tma_load_2d_at(b_at(slot, j), map_b, n0 + j * T::kCols, k0, full_at(slot));
      }
      if (++slot == STAGES) {
        slot = 0;
        phase ^= 1;
        if constexpr (kFreshRing) wrapped = true;
      }
    }
    if constexpr (LATE) {
      if (item + step < num_items) next = item_at<SPLITK>(item + step, num_tiles, splits, k_tiles, tiles_m, tiles_n);
    }
  }
}

// The stream-K kernel's producer (SK, see sk_item): produce_tiles' TMA loop over this CTA's own items (64-deep
// slots, 2-D B), a copy so that produce_tiles' kernels keep the SASS they were measured with.
template <class T, int BM, int BN, int STAGES, bool LATE, PdlRole ROLE>
__device__ __forceinline__ void produce_tiles_sk(const CUtensorMap* map_a, const CUtensorMap* map_b, uint64_t* full,
                                                 uint64_t* empty, unsigned char* slots_a, unsigned char* slots_b,
                                                 int tiles_m, int tiles_n, int num_tiles, int k_tiles, int splits) {
  if constexpr (!kEarlyMapPrefetch) {
    tma_prefetch_map(map_a);
    tma_prefetch_map(map_b);
  }
  const RingAt ring(full, empty, slots_a, slots_b);
  const int num_items = sk_items(blockIdx.x, gridDim.x, num_tiles, splits);
  int slot = 0;
  uint32_t phase = 0;
  bool wrapped = false;  // (kFreshRing) the ring has been round once
  // (LATE, as produce_tiles: the first item's coordinates before the PDL wait, each next one after an item's loads,
  // so no division stands between the wait and the first load)
  ItemAt next = sk_item_at(0, num_tiles, k_tiles, tiles_m, tiles_n, splits);
  if constexpr (LATE) {
    // (the values as inputs of an asm that precedes the wait: the compiler may not sink their divisions past it)
    asm volatile("" ::"r"(next.kb_first), "r"(next.kb_count), "r"(next.tm), "r"(next.tn), "r"(num_items));
    pdl_late<ROLE>();
  }
  for (int item = 0; item < num_items; ++item) {
    const ItemAt it = next;
    const int m0 = it.tm * BM, n0 = it.tn * BN;
    for (int kt = 0; kt < it.kb_count; ++kt) {
      if (!kFreshRing || wrapped) mbar_wait_at(ring.empty + slot * 8, phase ^ 1);
      const uint32_t full_at = ring.full + slot * 8;
      mbar_expect_tx_at(full_at, T::kSlotBytes);
      const int k0 = (it.kb_first + kt) * kBK;
      tma_load_2d_at(ring.a + slot * T::kSlotABytes, map_a, k0, m0, full_at);
#pragma unroll
      for (int j = 0; j < T::kChunks; ++j)
        tma_load_2d_at(ring.b + slot * T::kSlotBBytes + j * T::kChunkBBytes, map_b, n0 + j * T::kCols, k0, full_at);
      if (++slot == STAGES) {
        slot = 0;
        phase ^= 1;
        wrapped = true;
      }
    }
    if (item + 1 < num_items) next = sk_item_at(item + 1, num_tiles, k_tiles, tiles_m, tiles_n, splits);
  }
}

// The producer of a 2x1 cluster kernel (one thread per CTA): the cluster's units in order (see
// cluster_tile), k_tiles k-blocks each. Per slot: wait until the slot's empty barrier has collected
// the releases of BOTH CTAs' consumers (this producer's multicast writes into the peer's slot too),
// expect this CTA's slot bytes on its own full barrier (A box + every B chunk: its own half of B
// arrives from its own multicast, the other half from the peer's; an idle CTA expects B only), load
// its A box locally and multicast its half of B's chunks to both CTAs. A peer's bytes may land
// before this producer's expect_tx (the transaction count goes transiently negative, which the
// mbarrier allows; the phase cannot complete while this producer's arrival is pending), never in an
// earlier phase: the peer refills slot s only after this CTA's consumers released it, i.e. after
// this CTA's full barrier completed the slot's previous phase.
// KB = 2 (session 17): 128-deep slots; A's two k-chunks in one box of a 3-D map of A, this CTA's B chunks
// as 128-row boxes of a 2-D map (the host encodes both).
// MC (session 21, BN == 64 pairs only): how B reaches the pair. 0: half of B's rows per CTA, multicast (above);
// 1: no multicast, each CTA loads the whole B box for itself (a diagnostic: the pair's coupling without the
// multicast); 2: whole B boxes multicast by the two CTAs in turn, CTA kt % 2 at k-block kt (one 8 KB box per
// request, as the plain kernel's, where 0 sends two 4 KB halves); 3: as 1, and each CTA's slots are released by
// its own consumers alone (no remote arrivals: nothing of the pair is left but the cluster launch; a diagnostic);
// 4: as 3 without the cluster barriers at the start and the end (no CTA touches its peer; a diagnostic).
// The host encodes kBK-row B boxes for 1-4. 5 (session 22, kPairAlongN, BN == 64 pairs too): the pair along N, the
// roles swapped: each CTA multicasts half of A's rows (the host encodes BM / 2-row A boxes) and loads its own B.
// LEAN (session 21): after its last load the producer waits until every slot's last fill was released by
// both CTAs' consumers (the peer's remote arrivals on this CTA's barriers have all landed), the tail that lets
// the lean cluster body end without a cluster barrier (see wgmma2_cluster_body).
// CM = 4 (session 24, B modes 0, 2 and 5 only): four CTAs share the one operand; each multicasts a quarter of its
// rows (B: kBK / 4 = 16 rows of each chunk; A along N: BM / 4 rows), 2 KB boxes, still whole 128B-swizzle atoms;
// B mode 2: CTA kt % 4 multicasts k-block kt's whole B box (one 8 KB request, as cuBLAS's L2 sector count suggests).
// SPLITK (session 28, pairs): the items are units x splits in work_item's split-major order over the units; item
// (unit, split) loads the unit's k-blocks of that split, so both CTAs of a cluster walk the same k-blocks.
// LATE, ROLE: as produce_tiles'.
template <class T, int BM, int BN, int STAGES, int KB = 1, int MC = 0, bool LEAN = false, int CM = kClusterMax,
          bool SPLITK = false, bool LATE = false, PdlRole ROLE = kPdlGemm>
__device__ __forceinline__ void produce_tiles_cluster(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                                      unsigned char* slots_a, unsigned char* slots_b,
                                                      uint64_t* full, uint64_t* empty, int tiles_m,
                                                      int tiles_n, int num_units, int k_tiles, int rank,
                                                      int cid, int ncl, int splits = 1) {
  // BN = 128 or 256: each CTA multicasts a whole, equal share of B's 64-column chunks. BN = 64 (session 20) or
  // 192 (session 22), an odd number of chunks: every chunk split along K instead: CTA r multicasts its rows
  // [r, r + 1) x kBK / 2 of each chunk of the k-block (the host encodes B's boxes kBK / 2 rows high for such a
  // config); 32 rows of 128 B are 4 KB, a whole number of 128B-swizzle atoms, so the two half boxes land
  // exactly as one 64-row box would.
  constexpr bool kPairN = along_n(MC);  // B local, A's rows halved and multicast (6: A's whole box, in turn)
  constexpr bool kHalfRows = !kPairN && T::kChunks % CM != 0;
  constexpr uint16_t kMask = (uint16_t)((1u << CM) - 1);  // every CTA of the cluster
  static_assert(MC == 0 || BN == 64 || kPairN, "the other B modes are for the 64-wide pair");
  static_assert(CM == kClusterMax || (CM == kClusterQuad && (MC == 0 || MC == 2 || kPairN)), "quads: B modes 0, 2, 5");
  static_assert(!kPairN || (KB == 1 && ((BM / CM) % 8 == 0 || MC == kAlongNTurn)),
                "the pair along N: 64-deep slots, A's rows per CTA a whole number of 8-row swizzle atoms");
  constexpr int kChunksPerCta = T::kChunks / CM;  // (0 where kHalfRows: that branch does not use it)
  static_assert(!kHalfRows || (KB == 1 && (kBK / CM) % 8 == 0), "part-row boxes: 64-deep slots, whole atoms");
  if constexpr (!kEarlyMapPrefetch) {
    tma_prefetch_map(map_a);
    tma_prefetch_map(map_b);
  }
  int slot = 0;
  uint32_t phase = 0;
  const int num_items = SPLITK ? num_units * splits : num_units;
  [[maybe_unused]] bool wrapped = false;  // (kFreshRing) the ring has been round once
  [[maybe_unused]] ItemAt next{0, 0, 0, 0};
  if constexpr (LATE) {
    if (cid < num_items) next = item_at<SPLITK, MC, CM>(cid, num_units, splits, k_tiles, tiles_m, tiles_n, rank);
    pdl_late<ROLE>();
  }
  for (int item = cid; item < num_items; item += ncl) {
    // (LATE: worked out before the wait, or after the previous item's loads)
    const ItemAt it = LATE ? next : item_at<SPLITK, MC, CM>(item, num_units, splits, k_tiles, tiles_m, tiles_n, rank);
    const int kb_first = it.kb_first, kb_end = it.kb_first + it.kb_count, tm = it.tm, tn = it.tn;
    const bool live = kPairN ? tn < tiles_n : tm < tiles_m;
    const int m0 = tm * BM, n0 = tn * BN;
    for (int kt = kb_first; kt < kb_end; ++kt) {
      // (plain: its .acquire.cluster form added an L1 invalidate; kFreshRing: not asked on the ring's first pass)
      if (!kFreshRing || wrapped) mbar_wait(&empty[slot], phase ^ 1);
      mbar_expect_tx(&full[slot], live ? T::kSlotBytes : (kPairN ? T::kSlotABytes : T::kSlotBBytes));
      const int k0 = kt * kBK * KB;
      if constexpr (kPairN) {  // this CTA's half of A's rows to both CTAs; its own B chunks, where live
        constexpr int kHalfA = BM / CM;
        if constexpr (MC == kAlongNTurn) {
          if (kt % CM == rank) tma_load_2d_multicast(slots_a + slot * T::kSlotABytes, map_a, k0, m0, &full[slot], kMask);
        } else {
          tma_load_2d_multicast(slots_a + slot * T::kSlotABytes + rank * kHalfA * 128, map_a, k0, m0 + rank * kHalfA,
                                &full[slot], kMask);
        }
        if (live) {
#pragma unroll
          for (int j = 0; j < T::kChunks; ++j)
            tma_load_2d(slots_b + slot * T::kSlotBBytes + j * T::kChunkBBytes, map_b, n0 + j * T::kCols, k0,
                        &full[slot]);
        }
      } else {
        if constexpr (KB == 1) {
          if (live) tma_load_2d(slots_a + slot * T::kSlotABytes, map_a, k0, m0, &full[slot]);
        } else {
          if (live) tma_load_3d(slots_a + slot * T::kSlotABytes, map_a, 0, m0, k0 / 64, &full[slot]);
        }
        if constexpr (kHalfRows && (MC == 1 || MC >= 3)) {
          tma_load_2d(slots_b + slot * T::kSlotBBytes, map_b, n0, k0, &full[slot]);
        } else if constexpr (kHalfRows && MC == 2) {
          if (kt % CM == rank)
            tma_load_2d_multicast(slots_b + slot * T::kSlotBBytes, map_b, n0, k0, &full[slot], kMask);
        } else if constexpr (kHalfRows) {
          constexpr int kHalf = kBK / CM;  // rows of this CTA's box
#pragma unroll
          for (int chunk = 0; chunk < T::kChunks; ++chunk)
            tma_load_2d_multicast(
                slots_b + slot * T::kSlotBBytes + chunk * T::kChunkBBytes + rank * kHalf * T::kRowBytes, map_b,
                n0 + chunk * T::kCols, k0 + rank * kHalf, &full[slot], kMask);
        } else {
#pragma unroll
          for (int j = 0; j < kChunksPerCta; ++j) {
            const int chunk = rank * kChunksPerCta + j;
            tma_load_2d_multicast(slots_b + slot * T::kSlotBBytes + chunk * T::kChunkBBytes, map_b,
                                  n0 + chunk * T::kCols, k0, &full[slot], kMask);
          }
        }
      }
      if (++slot == STAGES) {
        slot = 0;
        phase ^= 1;
        if constexpr (kFreshRing) wrapped = true;
      }
    }
    if constexpr (LATE) {
      if (item + ncl < num_items)
        next = item_at<SPLITK, MC, CM>(item + ncl, num_units, splits, k_tiles, tiles_m, tiles_n, rank);
    }
  }
  if constexpr (LEAN) {
    for (int i = 0; i < STAGES; ++i) {  // (a slot never filled passes at once: the first wait's parity)
      mbar_wait(&empty[slot], phase ^ 1);
      if (++slot == STAGES) {
        slot = 0;
        phase ^= 1;
      }
    }
  }
}

template <int BM, int BN, int CONSUMERS, int STAGES>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a,
                       const __grid_constant__ CUtensorMap map_b, half* __restrict__ C, int M,
                       int N, int K, int ldc) {
  using T = WgmmaTile<BM, BN, CONSUMERS, STAGES>;
  extern __shared__ unsigned char smem_raw[];
  // 128B-swizzled TMA writes and the wgmma descriptors (base offset 0) need 1024-aligned slots.
  const uint32_t raw = smem_u32(smem_raw);
  unsigned char* smem = smem_raw + ((1024 - (raw & 1023)) & 1023);
  unsigned char* slots_a = smem;
  unsigned char* slots_b = smem + STAGES * T::kSlotABytes;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * T::kSlotBytes);
  uint64_t* empty = full + STAGES;

  const int warpgroup = warpgroup_index();
  const int wg_thread = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);                 // the producer's arrive.expect_tx
      mbar_init(&empty[s], CONSUMERS * 4);    // one arrival per consumer warp
    }
    if constexpr (kEarlyMapPrefetch) {
      tma_prefetch_map(&map_a);
      tma_prefetch_map(&map_b);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  pdl_wait_then_release();  // before any global or TMA access

  const int tiles_m = (M + BM - 1) / BM;
  const int tiles_n = (N + BN - 1) / BN;
  const int num_tiles = tiles_m * tiles_n;
  const int k_tiles = (K + kBK - 1) / kBK;

  if (warpgroup == 0) {
    // Producer warpgroup: one thread drives TMA; the rest only give their registers away.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    if (wg_thread == 0)
      produce_tiles<T, BM, BN, STAGES>(&map_a, &map_b, slots_a, slots_b, full, empty, tiles_m, tiles_n,
                                       num_tiles, k_tiles);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    const int consumer = warpgroup - 1;
    const int warp = wg_thread / 32, lane = wg_thread % 32;
    float acc[T::kMI][T::kAcc];
#pragma unroll
    for (int mi = 0; mi < T::kMI; ++mi)
#pragma unroll
      for (int i = 0; i < T::kAcc; ++i) acc[mi][i] = 0.f;
    int slot = 0;
    uint32_t phase = 0;
    for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
      int tm, tn;
      tile_coords(tile, tiles_m, tiles_n, tm, tn);
      const int m0 = tm * BM, n0 = tn * BN;
      for (int kt = 0; kt < k_tiles; ++kt) {
        mbar_wait(&full[slot], phase);
        const uint32_t a_base =
            smem_u32(slots_a + slot * T::kSlotABytes) + consumer * T::kRowsPerConsumer * 128;
        const uint32_t b_base = smem_u32(slots_b + slot * T::kSlotBBytes);
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kBK / 16; ++kk) {
          // B: 16 K-rows further per step; LBO = one 64-column chunk; SBO = 8 K-rows.
          const uint64_t desc_b = make_desc(b_base + kk * 16 * 128, T::kChunkBBytes, 8 * 128);
#pragma unroll
          for (int mi = 0; mi < T::kMI; ++mi) {
            // A: 16 halves = 32 bytes further along the swizzled row; LBO unused (1); SBO = 8 rows.
            const uint64_t desc_a = make_desc(a_base + mi * 64 * 128 + kk * 32, 16, 8 * 128);
            wgmma_m64k16<BN>(acc[mi], desc_a, desc_b, (kt | kk) != 0);
          }
        }
        wgmma_commit();
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
        wgmma_wait<0>();  // this slot's reads are done: hand it back to the producer
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
        if (lane == 0) mbar_arrive(&empty[slot]);
        if (++slot == STAGES) {
          slot = 0;
          phase ^= 1;
        }
      }

      // Epilogue. wgmma m64nN f32 fragment: warp w of the warpgroup holds rows 16w..16w+15;
      // element 4j+e sits at row lane/4 (+8 for e >= 2), column 8j + 2*(lane%4) + (e%2).
      const int row_base = m0 + consumer * T::kRowsPerConsumer + warp * 16 + lane / 4;
      const int col_base = n0 + (lane % 4) * 2;
#pragma unroll
      for (int mi = 0; mi < T::kMI; ++mi) {
        const int r0 = row_base + mi * 64;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int col = col_base + j * 8;
          if (col >= N) continue;
          if (r0 < M)
            *reinterpret_cast<half2*>(C + (size_t)r0 * ldc + col) =
                __floats2half2_rn(acc[mi][4 * j], acc[mi][4 * j + 1]);
          if (r0 + 8 < M)
            *reinterpret_cast<half2*>(C + (size_t)(r0 + 8) * ldc + col) =
                __floats2half2_rn(acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
        }
      }
    }
  }
}

// ---- second generation: pipelined mainloop, TMA-store epilogue, optional ping-pong -------------
//
// Added beside hgemm_wgmma_kernel (whose configs keep their behaviour). Differences, each aimed at a
// measured gap (docs/gemm.md, "Hopper path, generation 2"):
// - mainloop keeps one k-block of wgmma in flight (wait_group 1) and releases the previous slot,
//   instead of draining the tensor cores after every slot (wait_group 0);
// - epilogue converts to fp16 into a 128B-swizzled shared-memory buffer (conflict-free half2
//   writes) and one thread TMA-stores it (full-line writes, clipped at M/N by the TMA unit); the
//   consumer goes on to its next tile while the store drains;
// - SCHED 2 (ping-pong): each consumer warpgroup owns whole BM x BN tiles, alternating; their
//   mainloops take turns (two named barriers), so one consumer's epilogue overlaps the other's MMAs.
constexpr int kSchedCoopTma = 1;
constexpr int kSchedPingPong = 2;
constexpr int kBarOrder = 1;     // named barriers 1, 2: ping-pong turn of consumer 0, 1
constexpr int kBarEpilogue = 3;  // named barriers 3, 4 (, 5): epilogue of consumer 0, 1 (, 2)
constexpr int kBarCsplit = 6;    // named barrier 6: every consumer past its mainloop (cluster split-K)
constexpr int kBarKsFull = 7;    // named barriers 7, 8 (KS): consumer 1's partial is in shared memory; consumer 0
constexpr int kBarKsFree = 8;    //   has read it (the buffer may take the next one)

__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Atomic add at GPU scope with acquire-release semantics; returns the old value.
__device__ __forceinline__ int atom_add_acq_rel_gpu(int* p, int v) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
// Load at GPU scope with acquire semantics (the spread fixup's wait for every split of a tile).
__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Named barrier that also ORs a predicate over its threads (bar.red.or.pred): every thread learns
// whether any thread passed true.
// The result comes back through a warp broadcast (session 35's SK_UNIFORM; alone 0.9999x on the grid). An
// inline asm's output is divergent to the compiler, so the in-kernel fixup's branch on it made the split-K kernels'
// item loop divergent, and ptxas kept the consumers' ring state in per-thread registers: session 34's uniform
// descriptors never reached the 40 split-K kernels (their k-block still has 16 R2UR; 71 instructions in the 64 x 64
// ping-pong's, 55 with this, 44 with U32_SLOTS as well; scripts/gemm_sass.py). The barrier gives every thread the
// same value, so the broadcast changes no result; the other 154 kernels' code is unchanged instruction for
// instruction.
__device__ __forceinline__ bool named_bar_or(int id, int threads, bool pred) {
  uint32_t r;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n bar.red.or.pred q, %2, %3, p;\n"
      " selp.u32 %0, 1, 0, q;\n}\n"
      : "=r"(r)
      : "r"((uint32_t)pred), "r"(id), "r"(threads)
      : "memory");
  return __shfl_sync(0xffffffffu, r, 0) != 0;
}
// Makes this thread's generic-proxy shared-memory writes visible to the async proxy (TMA store).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, int c0, int c1, const void* src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(smem_u32(src))
               : "memory");
}
// Four 8x8 fp16 matrices from the mma fragment layout (register i: matrix i, row lane / 4, columns 2 (lane % 4) + 0..1),
// each stored transposed: lane 8i + r gives the shared address of row r of stored matrix i (16 bytes).
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
__device__ __forceinline__ void stmatrix_x2_trans(uint32_t addr, uint32_t r0, uint32_t r1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};\n" ::"r"(addr), "r"(r0), "r"(r1) : "memory");
}
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until at most N bulk groups are still reading shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- cp.async producer (session 14) ---------------------------------------------------------
// TMA reads a row whose start is not 128-byte aligned (a row stride that is a multiple of 16 bytes but
// not of 128: K or N not a multiple of 64) at a fraction of its aligned speed: benchmarks/
// gemm_alignment.py measured ours at 0.58-0.92x of cuBLAS there, and at full speed with the same
// operands in storage whose rows were padded to 64 halves. This producer fills the same ring slots in
// the same 128B-swizzled layouts with 16-byte cp.async copies instead (all 128 producer threads),
// so the consumers are unchanged. src.a == nullptr: the TMA producer. Measured: bitwise TMA's output,
// but 0.31x of torch on every shape, aligned or not (3x slower than TMA; one warpgroup of 16-byte
// copies keeps too few bytes in flight), so it is off by default (cudaopt_wgmma_set_cpasync).
struct CpSrc {
  const half* a;
  const half* b;
  int lda, ldb;
};
// 16 bytes global -> shared, bypassing L1; `bytes` = 0 reads nothing and zero-fills (out of bounds:
// K % 8 == 0 and N % 8 == 0 keep every 16-byte piece wholly in or wholly out).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
// The barrier receives one arrival from this thread once all its earlier cp.async copies have landed
// (.noinc: the 128 producer threads are counted in the barrier's initial count).
__device__ __forceinline__ void cp_async_arrive(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
// The 128B swizzle TMA writes (CU_TENSOR_MAP_SWIZZLE_128B): in each 1024-byte group of 8 rows of 128
// bytes, 16-byte piece c of row r sits at piece c ^ (r % 8). Slots and B chunks start on 1024 bytes.
__device__ __forceinline__ uint32_t swizzle128(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

// The cp.async twin of produce_tiles (no cluster split-K): the same items and ring order, run by the
// producer warpgroup's 128 threads (t = thread in the warpgroup). A slot's full barrier (initialised
// to 128 arrivals) receives each thread's arrival from the hardware once that thread's copies into it
// have landed, so copies for every free slot are in flight at once. wgmma reads shared memory through
// the async proxy, so the consumers fence (fence.proxy.async) after their full-barrier wait.
// (A first version waited for its own copies and fenced in the producer, 2 slots in flight; it was
// no slower than this one, so the barrier protocol is not what limits it.)
template <class T, int BM, int BN, int STAGES, bool SPLITK>
__device__ __forceinline__ void produce_tiles_cpasync(const CpSrc& src, unsigned char* slots_a,
                                                      unsigned char* slots_b, uint64_t* full, uint64_t* empty,
                                                      int tiles_m, int tiles_n, int num_tiles, int k_tiles,
                                                      int splits, int M, int N, int K, int t) {
  static_assert((BM * 8) % 128 == 0 && (BN * 8) % 128 == 0, "whole rounds of 128 pieces");
  static_assert(T::kCols == 64, "the cp.async producer writes 64-column chunks in the 128B swizzle");
  int slot = 0;
  uint32_t phase = 0;
  const int num_items = SPLITK ? num_tiles * splits : num_tiles;
  for (int item = blockIdx.x; item < num_items; item += gridDim.x) {
    int tile = item, kb_first = 0, kb_count = k_tiles;
    if constexpr (SPLITK) {
      const WorkItem w = work_item(item, num_tiles, splits, k_tiles);
      tile = w.tile;
      kb_first = w.kb_first;
      kb_count = w.kb_count;
    }
    int tm, tn;
    tile_coords(tile, tiles_m, tiles_n, tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    for (int kt = 0; kt < kb_count; ++kt) {
      mbar_wait(&empty[slot], phase ^ 1);
      const int k0 = (kb_first + kt) * kBK;
      const uint32_t sa = smem_u32(slots_a + slot * T::kSlotABytes);
      const uint32_t sb = smem_u32(slots_b + slot * T::kSlotBBytes);
#pragma unroll 1  // the producer has 40 registers (setmaxnreg)
      for (int i = t; i < BM * 8; i += 128) {  // A: BM rows x 8 pieces of 8 halves along K
        const int r = i >> 3, c = i & 7, gm = m0 + r, gk = k0 + c * 8;
        const bool in = gm < M && gk < K;
        cp_async16(sa + swizzle128(r, c), in ? src.a + (size_t)gm * src.lda + gk : src.a, in ? 16 : 0);
      }
#pragma unroll 1
      for (int i = t; i < BN * 8; i += 128) {  // B: BN/64 chunks x 64 K-rows x 8 pieces along N
        const int j = i >> 9, r = (i >> 3) & 63, c = i & 7, gk = k0 + r, gn = n0 + j * 64 + c * 8;
        const bool in = gk < K && gn < N;
        cp_async16(sb + j * T::kChunkBBytes + swizzle128(r, c), in ? src.b + (size_t)gk * src.ldb + gn : src.b,
                   in ? 16 : 0);
      }
      cp_async_arrive(&full[slot]);
      if (++slot == STAGES) {
        slot = 0;
        phase ^= 1;
      }
    }
  }
}

// EPI: C staging per consumer. 0 = the whole rows_per_consumer x BN slab (one barrier pair and one
// store burst per tile). n > 0 = n buffers of one 64-column chunk, reused round-robin: the tile is
// staged and stored chunk by chunk, each chunk's buffer free once the store issued n chunks earlier
// has read it. That frees shared memory for a deeper ring (a 128x256 cooperative tile takes 4 slots
// with 2 buffers, where the whole slab leaves room for 3), at the cost of waiting on TMA's reads.
// SHEPI (session 15): one set of staging buffers shared by the two ping-pong consumers, whose epilogues
// take turns (an mbarrier hands the buffers over), so that the ring gets the memory of the other set.
// KB (session 17): 64-wide k-chunks per ring slot (2: 128-deep slots, A and B each in one 3-D box, see
// produce_tiles); the slot holds A as KB chunks of BM rows x 128 B, B as BN/64 chunks of 64*KB rows x 128 B.
// SWAP (session 26): the operands' roles swapped (wgmma_m64k16_swapped): each m64 chain covers one 64-column chunk of
// B (kMI = BN / 64), its N is BM (kAcc = BM / 2), so BM need not be a multiple of 64 (160: cuBLAS's 128 x 160 tile in
// its frame); the epilogue stores D transposed (stmatrix .trans). Ping-pong, chunked epilogue, 64-deep slots.
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0, bool SHEPI = false, int KB = 1,
          bool SWAP = false>
struct WgmmaTile2 {
  static constexpr bool kPingPong = SCHED == kSchedPingPong;
  static constexpr int kThreads = (CONSUMERS + 1) * 128;
  static constexpr int kRowsPerConsumer = kPingPong ? BM : BM / CONSUMERS;  // C rows one consumer stores
  static constexpr int kMI = SWAP ? BN / 64 : kRowsPerConsumer / 64;
  static constexpr int kAcc = SWAP ? BM / 2 : BN / 2;
  static_assert(!SWAP || (kPingPong && EPI > 0 && KB == 1 && !SHEPI && BN % 64 == 0 && BM % 8 == 0),
                "swapped operands: ping-pong, chunked epilogue, 64-deep slots, 64-column chunks, 8-row steps");
  static constexpr int kSlotABytes = BM * kBK * 2 * KB;
  static constexpr int kChunkABytes = BM * kBK * 2;       // one 64-wide k-chunk of the A slot
  // B and C in column chunks of kCols: 64 (128-byte rows, 128B swizzle) where they divide BN, else 32 (64-byte
  // rows, 64B swizzle: the 160-wide tiles of session 26, five chunks). kSwizzle: the descriptor's mode.
  static constexpr int kCols = BN % 64 == 0 ? 64 : 32;
  static constexpr int kRowBytes = kCols * 2;
  static constexpr int kChunks = BN / kCols;
  static constexpr uint32_t kSwizzle = kCols == 64 ? 1 : 2;
  static constexpr int kChunkBBytes = kCols * kBK * 2 * KB;  // one column chunk of the B slot
  static constexpr int kSlotBBytes = BN * kBK * 2 * KB;
  static constexpr int kSlotBytes = kSlotABytes + kSlotBBytes;
  static_assert(KB == 1 || KB == 2, "64- or 128-deep slots");
  static_assert(kCols == 64 || (KB == 1 && EPI > 0), "32-column chunks: 64-deep slots, a chunked epilogue");
  static constexpr int kEpiChunkBytes = kRowsPerConsumer * kRowBytes;  // one column chunk of C
  static constexpr int kEpiChunks = EPI == 0 ? kChunks : EPI;         // staging buffers per consumer
  static constexpr int kEpiBytesPerConsumer = kEpiChunks * kEpiChunkBytes;
  static constexpr int kEpiBytes = (SHEPI ? 1 : CONSUMERS) * kEpiBytesPerConsumer;
  // slack, ring, staging, full and empty barriers per slot (+ the staging hand-over barrier)
  static constexpr int kSmemBytes = 1024 + STAGES * kSlotBytes + kEpiBytes + 2 * STAGES * 8 + (SHEPI ? 8 : 0);
  static_assert(!SHEPI || (kPingPong && EPI > 0), "shared staging: ping-pong consumers, chunked epilogue");
  static_assert(SCHED == kSchedCoopTma || SCHED == kSchedPingPong, "unknown schedule");
  static_assert(kPingPong ? CONSUMERS == 2 : BM % (64 * CONSUMERS) == 0, "consumers own whole m64 blocks");
  // 192 accumulators: the 128 x 192 ping-pong (session 15), cuBLAS's fastest kernels on short-K large
  // shapes being ping-pongs of 160-176 accumulators a thread; everything else keeps at most 128.
  static_assert((SWAP || kRowsPerConsumer % 64 == 0) && kMI * kAcc <= (kPingPong && CONSUMERS == 2 ? 192 : 128),
                "at most 128 accumulators per thread (192 for a two-consumer ping-pong)");
  static_assert(SWAP ? (BM == 16 || BM == 32 || BM == 64 || BM == 144 || BM == 160 || BM == 168 || BM == 176 ||
                        BM == 192)
                     : (BN == 64 || BN == 128 || BN == 160 || BN == 192 || BN == 256),
                "wgmma wrappers exist for N = 64, 128, 160, 192, 256 (swapped: 16, 32, 64, 144, 160, 168, 176, 192)");
  static_assert(BM <= 256 && kRowsPerConsumer <= 256, "a TMA box has at most 256 rows");
  // Three cooperative consumers (192-row tiles, session 12): 4 warpgroups of 128 threads launch with
  // 128 registers each; the producer gives back to 40, the consumers take 152 (128 x 40 + 384 x 152 =
  // 63,488 <= 65,536). Two consumers keep the measured split (kProducerRegs, kConsumerRegs).
  static_assert(kPingPong ? CONSUMERS == 2 : (CONSUMERS >= 1 && CONSUMERS <= 3), "at most 3 consumer warpgroups");
  static constexpr int kProducerRegsT = kProducerRegs;
  static constexpr int kConsumerRegsT = CONSUMERS == 3 ? 152 : kConsumerRegs;
  static_assert((CONSUMERS == 3 ? 128 * kProducerRegsT + 384 * kConsumerRegsT : 65536) <= 65536,
                "the register file holds the 3-consumer split");
  // Chunk c of every tile uses buffer c % kEpiChunks, so the buffer a store last read is always the
  // one committed kEpiChunks groups earlier, across tiles too. Where the buffers do not divide the
  // chunks (two for the 128 x 192 ping-pong's three, session 16) the plain body counts the chunks it
  // has staged instead (kEpiRunning), which keeps that invariant across tiles.
  static constexpr bool kEpiRunning = kChunks % kEpiChunks != 0;
  static_assert(EPI >= 0 && kEpiChunks <= kChunks && (!kEpiRunning || EPI > 0),
                "at most one staging buffer per column chunk");
  // wait_group 1 keeps two slots held by a consumer (the k-block in flight and the one being
  // issued); with one slot the producer would wait for a release that needs its own next fill.
  static_assert(STAGES >= 2, "the wait_group 1 mainloop needs at least two slots");
  static_assert(kSlotABytes % 1024 == 0 && kSlotBBytes % 1024 == 0 && kEpiChunkBytes % 1024 == 0,
                "slots and staging chunks must stay 1024-aligned for the swizzle");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per block is at most 227 KB");
  // Where TMA's swizzle puts 16-byte unit u of row r (r % 8 = rsub) of a staging chunk: 128B swizzle XORs the
  // unit with r % 8, 64B swizzle (four units a row) with (r / 2) % 4; rows r and r + 8 share it.
  static __device__ __forceinline__ int swz(int u, int rsub) { return kCols == 64 ? u ^ rsub : u ^ ((rsub >> 1) & 3); }
};

// The swapped operands' k-step and epilogue (SWAP; the plain and cluster bodies both call them).
// One 16-deep k-step: wgmma's A is B's chunk mi (M-major, 128B swizzle), its B all BM rows of A (K-major). a_base
// and b_base are the ring's, a_off and b_off the slot's offsets in 16-byte units (SmemDesc::at).
// BT (session 39): the slot holds B^T's BN rows of 128 bytes (K-major), so wgmma's A is rows 64 mi.. of it, in A's
// descriptor form (the same 8 KB offset a chunk has in the N-major slot).
template <class T, int BM, bool BT = false>
__device__ __forceinline__ void swapped_k_step(float (&acc)[T::kMI][T::kAcc], uint32_t a_base, uint32_t b_base, int kk,
                                               int accumulate, uint32_t a_off, uint32_t b_off) {
  const uint64_t desc_at = SmemDesc<16, 8 * 128>(a_base).at(kk * 32, a_off);
#pragma unroll
  for (int mi = 0; mi < T::kMI; ++mi) {
    if constexpr (BT) {
      static_assert(T::kChunkBBytes == 64 * 128, "64 rows of B^T where the N-major slot has a 64-column chunk");
      const uint64_t desc_b = SmemDesc<16, 8 * 128>(b_base).at(mi * 64 * 128 + kk * 32, b_off);
      wgmma_m64k16_swapped<BM, 0>(acc[mi], desc_b, desc_at, accumulate);
    } else {
      const uint64_t desc_bt =
          SmemDesc<T::kChunkBBytes, 8 * 128>(b_base).at(mi * T::kChunkBBytes + kk * 16 * 128, b_off);
      wgmma_m64k16_swapped<BM>(acc[mi], desc_bt, desc_at, accumulate);
    }
  }
}
// Chain c holds D^T for C's 64-column chunk c: thread (warp, lane) has D rows (C columns) 16 warp + lane / 4 (+ 8) and
// D columns (C rows) 8 j + 2 (lane % 4) + 0..1, the mma fragment layout of 8x8 blocks, which stmatrix .trans stores as
// 8 C rows of 8 columns (16 bytes, one swizzle unit) each. A chunk is BM rows x 128 B in TMA's 128B swizzle (unit u
// of row r at u ^ (r % 8)); chunk c takes buffer (first + c) % kEpiChunks after waiting for the store that last read it,
// as the chunked epilogue does.
template <class T, int BM>
__device__ __forceinline__ void swapped_epilogue(float (&acc)[T::kMI][T::kAcc], unsigned char* my_epi, int first,
                                                 int warp, int lane, int wg_thread, int consumer,
                                                 const CUtensorMap* map_c, int m0, int n0, int M, int N) {
  const int q = lane / 8, r = lane % 8;  // this lane's stored matrix and its row
  const int unit = 2 * warp + (q & 1);   // C columns 16 warp (+ 8) of the chunk, in 16-byte units
#pragma unroll
  for (int c = 0; c < T::kChunks; ++c) {
    unsigned char* buf = my_epi + ((first + c) % T::kEpiChunks) * T::kEpiChunkBytes;
    if (wg_thread == 0) bulk_wait_read<T::kEpiChunks - 1>();
    named_bar_sync(kBarEpilogue + consumer, 128);
    const uint32_t base = smem_u32(buf) + ((unit ^ r) * 16);
#pragma unroll
    for (int j = 0; j + 1 < BM / 8; j += 2) {  // C rows 8 j .. 8 j + 15: four 8x8 matrices
      const int row = 8 * (j + (q >> 1)) + r;
      stmatrix_x4_trans(base + row * 128, pack_half2(acc[c][4 * j], acc[c][4 * j + 1]),
                        pack_half2(acc[c][4 * j + 2], acc[c][4 * j + 3]), pack_half2(acc[c][4 * j + 4], acc[c][4 * j + 5]),
                        pack_half2(acc[c][4 * j + 6], acc[c][4 * j + 7]));
    }
    if constexpr ((BM / 8) % 2 == 1) {  // an odd last 8-row group (168 rows): its two matrices, lanes 0-15's rows
      constexpr int j = BM / 8 - 1;
      stmatrix_x2_trans(base + (8 * j + r) * 128, pack_half2(acc[c][4 * j], acc[c][4 * j + 1]),
                        pack_half2(acc[c][4 * j + 2], acc[c][4 * j + 3]));
    }
    fence_proxy_async_smem();
    named_bar_sync(kBarEpilogue + consumer, 128);
    if (wg_thread == 0) {
      if (m0 < M && n0 + c * 64 < N) tma_store_2d(map_c, n0 + c * 64, m0, buf);
      bulk_commit();
    }
  }
}

// Generation-2 kernel body, shared by the plain kernel (SPLITK = false: one work item per tile over
// all of K, fp16 C through the TMA-store epilogue; the code generation-2 configs were measured with)
// and the split-K kernel (SPLITK = true: work items = tiles x splits, see work_item; each item's
// fp32 partial goes to partials[split][M][N] with plain stores, and a second kernel sums the splits).
//
// Ring accounting with items of different k-block counts (SPLITK): the producer's ring position
// advances by one per k-block it loads, so item j of the block's sequence occupies positions
// P(j) .. P(j) + kb(j) - 1 with P(j) = kb(0) + ... + kb(j - 1). Cooperative consumers walk the same
// sequence, so their position is the same running count. A ping-pong consumer owns every other
// item: consumer 1 starts at P(1) = kb(0); after its own item j it skips the other consumer's item
// j + 1 by adding kb(j + 1) (read from work_item, which every role evaluates identically), landing
// on P(j + 2). The parity test stays unambiguous for any counts: a consumer starts item j + 2 only
// after the turn barrier says the other consumer issued (so waited for) every k-block of item
// j + 1, and it waited itself for item j's; so every position before the one it waits for has
// landed (the slot's barrier is at most one phase behind), and the position STAGES further on
// cannot be filled before this consumer releases the slot (at most one phase ahead).
//
// Split-K with an in-kernel fixup (counters != nullptr): after writing its partial, each consumer
// of an item takes a ticket on its (tile, consumer) counter; the one that draws splits - 1 is the
// last, sums every split's partial in split order 0, 1, ... (the same order whoever is last, so the
// result is deterministic), stores C through the fp16 epilogue, and puts the counter back to 0 for
// the next call. Nobody waits for anybody, so no co-residency is assumed. Counters must be zero
// when the kernel starts (the caller's workspace contract); without counters the partials are
// summed by a reduce kernel afterwards.
//
// The spread fixup (spread != 0, session 12; the host sets it only when every work item is its
// block's only one, grid == items <= #SMs, launched cooperatively so that all blocks are resident):
// each consumer of an item writes its partial, adds 1 to its (tile, consumer) counter and waits
// until all `splits` have; then split s sums slice s of the consumer's rows x BN region over every
// split in order 0, 1, ... (bitwise the serial reduce kernel's sums) and stores it as fp16 straight
// to C (c_ptr, ldc). The reduction is spread over the tile's splits instead of falling to the last
// one (the ticket fixup above, 0.37x of the reduce kernel in session 12). The counter's high half
// counts the items done reading it; the last one puts it back to 0 for the next call (nobody is
// still waiting on it then).
//
// CSPLIT (cluster split-K, session 12; split-K kernels launched with a cluster of `splits` CTAs, see
// csplit_item): no fp32 partials in global memory. Each CTA keeps its split's accumulators, writes
// them to its own shared memory (the ring, free once every consumer is past its mainloop) as an fp32
// BM x (BN + 8) tile, and after a cluster barrier CTA s sums slice s of the tile over the cluster's
// CTAs in rank order 0, 1, ... (bitwise the serial reduce kernel's sums) through distributed shared
// memory and stores it as fp16 to C (c_ptr, ldc); a second cluster barrier keeps every CTA's shared
// memory alive until its peers have read it.
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, bool SPLITK, int EPI = 0, bool CSPLIT = false,
          bool CPA = false, bool SHEPI = false, bool B3D = false, int KB = 1, bool SWAP = false, bool KS = false,
          bool BT = false, bool SK = false>
__device__ __forceinline__ void wgmma2_body(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                            const CUtensorMap* map_c, float* partials, int M, int N,
                                            int K, int splits, int* counters = nullptr,
                                            half* c_ptr = nullptr, int ldc = 0, int spread = 0,
                                            CpSrc src = CpSrc{}) {
  using T = WgmmaTile2<BM, BN, CONSUMERS, STAGES, SCHED, EPI, SHEPI, KB, SWAP>;
  static_assert(KB == 1 || (B3D && !SPLITK && !CSPLIT && !CPA), "128-deep slots: plain B3D kernels only");
  static_assert(!SWAP || (!SPLITK && !CPA && !B3D), "swapped operands: plain TMA kernels only");
  static_assert(!SHEPI || (!SPLITK && !CSPLIT), "shared staging: plain kernels only");
  static_assert(!KS || (T::kPingPong && !SPLITK && !CSPLIT && !CPA && !SHEPI && !B3D && KB == 1 && T::kAcc % 4 == 0),
                "k-split consumers: the plain ping-pong's TMA kernel only");
  static_assert(!BT || (!CSPLIT && !CPA && !B3D && KB == 1 && !KS),
                "B^T (K-major B): the TMA kernels only (plain or split-K in our frame, plain swapped)");
  static_assert(!SK || (SCHED == kSchedCoopTma && !SPLITK && !CSPLIT && !CPA && !SHEPI && !B3D && KB == 1 && !SWAP &&
                        !KS && !BT),
                "stream-K: the cooperative plain TMA kernel only");
  // KS: both consumers on every item, alternating k-blocks (not ping-pong's alternating items).
  constexpr bool kPP = T::kPingPong && !KS;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  unsigned char* smem = smem_raw + ((1024 - (raw & 1023)) & 1023);
  unsigned char* slots_a = smem;
  unsigned char* slots_b = smem + STAGES * T::kSlotABytes;
  unsigned char* epi = smem + STAGES * T::kSlotBytes;
  uint64_t* full = reinterpret_cast<uint64_t*>(epi + T::kEpiBytes);
  uint64_t* empty = full + STAGES;
  // SHEPI: completes a phase when an epilogue's stores have read the shared staging buffers; the
  // block's epilogues run in item order (ping-pong consumers alternate), the t-th waits for phase t - 1.
  uint64_t* epi_free = empty + STAGES;

  const int warpgroup = warpgroup_index();
  const int wg_thread = threadIdx.x % 128;
  // The cp.async producer (every producer thread arrives): compiled into the CPA instantiations only.
  // Session 15 measured the kernels that carried it as a runtime option 4% slower on the grid's
  // smallest shapes (1.7% at 1e8-1e9 FLOP) than the same kernels before it, with cuBLAS unchanged.
  const bool cp = CPA && !CSPLIT && src.a != nullptr;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], cp ? 128 : 1);
      // Ping-pong: a slot belongs to one consumer's tile, so only its 4 warps release it.
      mbar_init(&empty[s], (T::kPingPong ? 1 : CONSUMERS) * 4);
    }
    if constexpr (SHEPI) mbar_init(epi_free, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    if constexpr (kEarlyMapPrefetch) {
      if (!cp) {  // (the cp.async producer reads through pointers, not maps)
        tma_prefetch_map(map_a);
        tma_prefetch_map(map_b);
      }
      if constexpr (!SPLITK) tma_prefetch_map(map_c);
    }
  }
  __syncthreads();
  constexpr PdlRole kRole = SPLITK ? kPdlSplitK : kPdlGemm;
  pdl_top<kRole>();  // before any global or TMA access (kLateWait: the release alone; each role waits below)

  const int tiles_m = (M + BM - 1) / BM;
  const int tiles_n = (N + BN - 1) / BN;
  const int num_tiles = tiles_m * tiles_n;
  const int k_tiles = (K + kBK * KB - 1) / (kBK * KB);  // ring slots a tile takes (k-blocks of 64 * KB)
  // SK: this CTA's own items 0, 1, ... (sk_items)
  const int num_items =
      SK ? sk_items(blockIdx.x, gridDim.x, num_tiles, splits) : SPLITK ? num_tiles * splits : num_tiles;

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(T::kProducerRegsT));
    if constexpr (CPA && !CSPLIT) {
      if (cp) {
        pdl_late<kRole>();
        produce_tiles_cpasync<T, BM, BN, STAGES, SPLITK>(src, slots_a, slots_b, full, empty, tiles_m, tiles_n,
                                                         num_tiles, k_tiles, splits, M, N, K, wg_thread);
      }
    }
    if (!cp && wg_thread == 0)  // (kLateWait: waits once its first item's coordinates are known)
      if constexpr (SK)
        produce_tiles_sk<T, BM, BN, STAGES, kLateWait, kRole>(map_a, map_b, full, empty, slots_a, slots_b, tiles_m,
                                                              tiles_n, num_tiles, k_tiles, splits);
      else
        produce_tiles<T, BM, BN, STAGES, SPLITK, CSPLIT, B3D, KB, kLateWait, kRole, BT>(
            map_a, map_b, slots_a, slots_b, full, empty, tiles_m, tiles_n, num_tiles, k_tiles, splits);
    else if (!cp)
      pdl_late<kRole>();
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(T::kConsumerRegsT));
    const int consumer = warpgroup - 1;
    const int warp = wg_thread / 32, lane = wg_thread % 32;
    if constexpr (!SPLITK && !kEarlyMapPrefetch) {
      if (wg_thread == 0) tma_prefetch_map(map_c);
    }
    pdl_late<kRole>();
    unsigned char* my_epi = epi + (SHEPI ? 0 : consumer) * T::kEpiBytesPerConsumer;
    [[maybe_unused]] int epi_seq = 0;  // kEpiRunning: column chunks this consumer has staged so far
    const int a_row_off = T::kPingPong ? 0 : consumer * T::kRowsPerConsumer;
    float acc[T::kMI][T::kAcc];
#pragma unroll
    for (int mi = 0; mi < T::kMI; ++mi)
#pragma unroll
      for (int i = 0; i < T::kAcc; ++i) acc[mi][i] = 0.f;
    // Ring position of this consumer's next k-block (see above). Without split-K every item has
    // k_tiles k-blocks: ping-pong item j fills positions j*k_tiles .. j*k_tiles + k_tiles - 1.
    uint32_t pos = kPP ? consumer * k_tiles : 0;
    // KS: consumer c takes k-blocks c, c + 2, ... of every item; the item's first k-block sits at ring position ks_base.
    [[maybe_unused]] uint32_t ks_base = 0;
    // (kt_first is KS ? consumer : 0; written that way it changes the cooperative cluster split-K kernels' SASS, session 34)
    constexpr int kKtFirstScale = KS ? 1 : 0, kKtStep = KS ? 2 : 1;
    const int kt_first = kKtFirstScale * consumer;
    if constexpr (SPLITK) {
      pos = (T::kPingPong && consumer == 1) ? work_item(blockIdx.x, num_tiles, splits, k_tiles).kb_count
                                             : 0;
    }
    int first = kPP ? blockIdx.x + consumer * gridDim.x : blockIdx.x;
    int step = kPP ? 2 * gridDim.x : gridDim.x;
    if constexpr (CSPLIT) {  // the block's one item: both cooperative consumers, or ping-pong consumer 0
      first = (T::kPingPong && consumer == 1) ? num_items : csplit_item(num_tiles, splits);
      step = num_items;
    }
    if constexpr (SK) {
      first = 0;
      step = 1;
    }
    const RingAt ring(full, empty, slots_a, slots_b);
    for (int item = first; item < num_items; item += step) {
      int tile = item, split = 0, kb_count = k_tiles;
      if constexpr (SPLITK) {
        const WorkItem w = work_item(item, num_tiles, splits, k_tiles);
        tile = w.tile;
        split = w.split;
        kb_count = w.kb_count;
      }
      if constexpr (SK) {
        const SkSeg sg = sk_item(blockIdx.x, item, gridDim.x, num_tiles, k_tiles, splits);
        tile = sg.tile;
        kb_count = sg.kb_count;
        split = sg.split;
      }
      int tm, tn;
      tile_coords(tile, tiles_m, tiles_n, tm, tn);
      const int m0 = tm * BM, n0 = tn * BN;
      // (the block's first item goes without; a cluster split-K block's one item likewise)
      if (kPP && item != (CSPLIT ? first : (int)blockIdx.x)) named_bar_sync(kBarOrder + consumer, 256);
      uint32_t prev_slot = 0;
      if constexpr (KS) pos = ks_base + consumer;
      for (int kt = kt_first; kt < kb_count; kt += kKtStep) {
        const uint32_t slot = pos % STAGES;
        mbar_wait_at(ring.full + slot * 8, (pos / STAGES) & 1);
        if (cp) fence_proxy_async_smem();  // cp.async wrote the slot through the generic proxy
        const uint32_t a_base = ring.a, b_base = ring.b;  // (the descriptors' slot offsets, in 16-byte units)
        const uint32_t a_off = slot * (T::kSlotABytes / 16) + a_row_off * 8, b_off = slot * (T::kSlotBBytes / 16);
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < KB * kBK / 16; ++kk) {  // (KB = 2: A's k-chunk kk / 4, B's rows 16 kk..)
          if constexpr (SWAP) {
            swapped_k_step<T, BM, BT>(acc, a_base, b_base, kk, ((kt - kt_first) | kk) != 0, a_off, b_off);
          } else if constexpr (BT) {  // B^T's BN rows of 128 bytes: A's descriptor form, 32 bytes a k-step
            const uint64_t desc_b = SmemDesc<16, 8 * 128>(b_base).at(kk * 32, b_off);
#pragma unroll
            for (int mi = 0; mi < T::kMI; ++mi) {
              const uint64_t desc_a = SmemDesc<16, 8 * 128>(a_base).at(mi * 64 * 128 + kk * 32, a_off);
              wgmma_m64k16<BN, 0>(acc[mi], desc_a, desc_b, ((kt - kt_first) | kk) != 0);
            }
          } else {
          const uint64_t desc_b =
              SmemDesc<T::kChunkBBytes, 8 * T::kRowBytes, T::kSwizzle>(b_base).at(kk * 16 * T::kRowBytes, b_off);
#pragma unroll
          for (int mi = 0; mi < T::kMI; ++mi) {
            const uint64_t desc_a =
                SmemDesc<16, 8 * 128>(a_base).at((kk / 4) * T::kChunkABytes + mi * 64 * 128 + (kk % 4) * 32, a_off);
            wgmma_m64k16<BN>(acc[mi], desc_a, desc_b, ((kt - kt_first) | kk) != 0);
          }
          }
        }
        wgmma_commit();
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
        wgmma_wait<1>();  // the previous k-block is done: its slot can be refilled
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
        if (kt > kt_first && lane == 0) mbar_arrive_at(ring.empty + prev_slot * 8);
        prev_slot = slot;
        pos += kKtStep;
      }
      // Ping-pong: every MMA of this item is issued; the other consumer may start its mainloop.
      // Arrive only when it has a next item, so no barrier is left half-arrived at exit.
      if (kPP && item + (int)gridDim.x < num_items)
        named_bar_arrive(kBarOrder + (consumer ^ 1), 256);
      wgmma_wait<0>();
#pragma unroll
      for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
      if (kb_count > kt_first && lane == 0) mbar_arrive(&empty[prev_slot]);
      if constexpr (KS) {
        // Consumer 1 hands its partial to consumer 0, which adds it and stores the tile. Thread t of both holds the
        // same fragment positions, so the sum is elementwise; float4 slot q * 128 + t keeps a warp's stores on
        // consecutive 16-byte units. With one k-block consumer 1 had none (its accumulators are not this item's).
        ks_base += k_tiles;
        const bool has_partial = k_tiles > 1;
        // consumer 1's fp32 partial: ks_red_bytes past the barriers, 16-byte aligned (CUDAOPT_WGMMA_CFG2K)
        float4* ks_red = reinterpret_cast<float4*>((reinterpret_cast<uintptr_t>(epi_free + 1) + 15) & ~uintptr_t(15));
        const auto ks_slot = [&](int mi, int i) { return (mi * (T::kAcc / 4) + i / 4) * 128 + wg_thread; };
        if (consumer == 1) {
          if (item != (int)blockIdx.x) named_bar_sync(kBarKsFree, 256);  // consumer 0 has read the last one
          if (has_partial) {
#pragma unroll
            for (int mi = 0; mi < T::kMI; ++mi)
#pragma unroll
              for (int i = 0; i < T::kAcc; i += 4)
                ks_red[ks_slot(mi, i)] = make_float4(acc[mi][i], acc[mi][i + 1], acc[mi][i + 2], acc[mi][i + 3]);
          }
          named_bar_arrive(kBarKsFull, 256);
          continue;
        }
        named_bar_sync(kBarKsFull, 256);
        if (has_partial) {
#pragma unroll
          for (int mi = 0; mi < T::kMI; ++mi)
#pragma unroll
            for (int i = 0; i < T::kAcc; i += 4) {
              const float4 v = ks_red[ks_slot(mi, i)];
              acc[mi][i] += v.x;
              acc[mi][i + 1] += v.y;
              acc[mi][i + 2] += v.z;
              acc[mi][i + 3] += v.w;
            }
        }
        if (item + (int)gridDim.x < num_items) named_bar_arrive(kBarKsFree, 256);
      }
      if (kPP) {  // skip the other consumer's item
        if constexpr (SPLITK) {
          if (item + (int)gridDim.x < num_items)
            pos += work_item(item + gridDim.x, num_tiles, splits, k_tiles).kb_count;
        } else {
          pos += k_tiles;
        }
      }

      bool store_c = !SPLITK;
      if constexpr (SPLITK && !CSPLIT) {
        // fp32 partial of this split, straight from the accumulator fragment (element 4j+e at row
        // 16*warp + lane/4 (+8 for e >= 2), column 8j + 2*(lane%4) + e%2): a warp's float2 store
        // writes 8 rows x 32 contiguous bytes, whole sectors. Rows >= M and columns >= N are
        // clipped (N % 8 == 0 keeps a pair in or out together).
        float* part = partials + (size_t)split * M * N;
        const int col_base = n0 + (lane % 4) * 2;
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) {
          const int r0 = m0 + a_row_off + mi * 64 + warp * 16 + lane / 4;
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            const int col = col_base + j * 8;
            if (col >= N) continue;
            if (r0 < M)
              *reinterpret_cast<float2*>(part + (size_t)r0 * N + col) =
                  make_float2(acc[mi][4 * j], acc[mi][4 * j + 1]);
            if (r0 + 8 < M)
              *reinterpret_cast<float2*>(part + (size_t)(r0 + 8) * N + col) =
                  make_float2(acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
          }
        }
        if (counters != nullptr && spread) {  // the spread fixup (see above the function)
          named_bar_sync(kBarEpilogue + consumer, 128);  // the warpgroup's partial stores, then its add
          const int ctr = T::kPingPong ? tile : tile * CONSUMERS + consumer;
          if (wg_thread == 0) {
            atom_add_acq_rel_gpu(&counters[ctr], 1);
            while ((ld_acquire_gpu(&counters[ctr]) & 0xFFFF) < splits) {
            }
          }
          named_bar_sync(kBarEpilogue + consumer, 128);  // every split's partial is visible
          const int row0 = m0 + a_row_off;
          const int rows = min(T::kRowsPerConsumer, M - row0), quads = min(BN, N - n0) / 4;
          if (rows > 0 && quads > 0) {
            const int units = rows * quads;
            const int u_end = (split + 1) * units / splits;
            for (int u = split * units / splits + wg_thread; u < u_end; u += 128) {
              const int r = u / quads;
              const size_t off = (size_t)(row0 + r) * N + n0 + 4 * (u - r * quads);
              float4 sum = __ldcg(reinterpret_cast<const float4*>(partials + off));
              for (int z = 1; z < splits; ++z)
                add4(sum, __ldcg(reinterpret_cast<const float4*>(partials + (size_t)z * M * N + off)));
              store_half4(c_ptr + (size_t)(row0 + r) * ldc + n0 + 4 * (u - r * quads), sum);
            }
          }
          if (wg_thread == 0 && (atomicAdd(&counters[ctr], 1 << 16) >> 16) == splits - 1)
            counters[ctr] = 0;  // every split has passed its wait: clean for the next call
        } else if (counters != nullptr) {  // in-kernel fixup (see above the function)
          // One ticket per consumer: the barrier orders the warpgroup's partial stores before thread
          // 0's acq_rel add at GPU scope, whose release side publishes them (cumulativity) and whose
          // acquire side, for the last ticket, makes every other item's partial visible to the reads
          // after the next barrier. (The first form had all 128 threads run __threadfence, a
          // sequentially consistent fence each; measured 0.35x of the reduce kernel, session 11.)
          named_bar_sync(kBarEpilogue + consumer, 128);
          const int ctr = T::kPingPong ? tile : tile * CONSUMERS + consumer;
          bool last = false;
          if (wg_thread == 0) {
            last = atom_add_acq_rel_gpu(&counters[ctr], 1) == splits - 1;
            if (last) counters[ctr] = 0;  // every split has arrived: clean for the next call
          }
          if (named_bar_or(kBarEpilogue + consumer, 128, last)) {
            // Split by split, all of this thread's fragment at once: the loads of one split are
            // independent, so they are in flight together (session 11's first form looped over the
            // splits innermost, one L2 round trip after another, and was 2x slower than the reduce
            // kernel). L2 reads (other SMs wrote them): __ldcg.
#pragma unroll
            for (int mi = 0; mi < T::kMI; ++mi)
#pragma unroll
              for (int i = 0; i < T::kAcc; ++i) acc[mi][i] = 0.f;
            for (int z = 0; z < splits; ++z) {
              const float* pz = partials + (size_t)z * M * N;
#pragma unroll
              for (int mi = 0; mi < T::kMI; ++mi) {
                const int r0 = m0 + a_row_off + mi * 64 + warp * 16 + lane / 4;
                const bool lo_in = r0 < M, hi_in = r0 + 8 < M;
                const float* row_lo = pz + (size_t)(lo_in ? r0 : 0) * N;
                const float* row_hi = pz + (size_t)(hi_in ? r0 + 8 : 0) * N;
#pragma unroll
                for (int j = 0; j < BN / 8; ++j) {
                  const int col = col_base + j * 8;
                  if (col < N) {
                    const float2 lo = lo_in ? __ldcg(reinterpret_cast<const float2*>(row_lo + col)) : make_float2(0.f, 0.f);
                    const float2 hi = hi_in ? __ldcg(reinterpret_cast<const float2*>(row_hi + col)) : make_float2(0.f, 0.f);
                    acc[mi][4 * j] += lo.x;
                    acc[mi][4 * j + 1] += lo.y;
                    acc[mi][4 * j + 2] += hi.x;
                    acc[mi][4 * j + 3] += hi.y;
                  }
                }
              }
            }
            store_c = true;
          }
        }
      }
      if constexpr (SK) {
        // The tail's fixup (split >= 0: this CTA's split of a tail tile cut `splits` ways), per consumer warpgroup:
        // every split stores its fp32 accumulators to its CTA's slot (float4 q x 128 + thread: a warp's stores on
        // consecutive 16-byte units), then takes a ticket on the tile's counter (tail tile x CONSUMERS + consumer);
        // the last sums the splits' slots in split order 0, 1, ... (whoever is last: deterministic, the split-K
        // reduce's order) and stores C, and puts the counter back to 0 for the next call. Nobody waits for anybody.
        // The barrier orders the warpgroup's stores before thread 0's acq_rel add, whose release publishes them and
        // whose acquire (for the last) makes every other split's visible to the reads after the next barrier.
        if (split >= 0) {
          // (the grid size read afresh: kept from the prologue, it was the one register the twins spilled)
          uint32_t grid_now;
          asm volatile("mov.u32 %0, %%nctaid.x;\n" : "=r"(grid_now));
          const int r = num_tiles % (int)grid_now;
          const int ctr = (tile - (num_tiles - r)) * CONSUMERS + consumer;
          constexpr int kSlotF4 = T::kMI * T::kAcc / 4 * 128;  // float4s of one consumer's slot
          const auto slot_of = [&](int cta) {
            return reinterpret_cast<float4*>(partials) + ((size_t)cta * CONSUMERS + consumer) * kSlotF4;
          };
          const auto sk_at = [&](int mi, int i) { return (mi * (T::kAcc / 4) + i / 4) * 128 + wg_thread; };
          float4* mine = slot_of(blockIdx.x);
#pragma unroll
          for (int mi = 0; mi < T::kMI; ++mi)
#pragma unroll
            for (int i = 0; i < T::kAcc; i += 4)
              __stcg(mine + sk_at(mi, i), make_float4(acc[mi][i], acc[mi][i + 1], acc[mi][i + 2], acc[mi][i + 3]));
          named_bar_sync(kBarEpilogue + consumer, 128);
          bool last = false;
          if (wg_thread == 0) {
            last = atom_add_acq_rel_gpu(&counters[ctr], 1) == splits - 1;
            if (last) counters[ctr] = 0;  // every split has arrived: clean for the next call
          }
          store_c = named_bar_or(kBarEpilogue + consumer, 128, last);
          if (store_c) {
#pragma unroll
            for (int mi = 0; mi < T::kMI; ++mi)
#pragma unroll
              for (int i = 0; i < T::kAcc; ++i) acc[mi][i] = 0.f;
            const int t = blockIdx.x % r;  // the tail tile's index: split z of it is CTA t + z r
            for (int z = 0; z < splits; ++z) {
              const float4* pz = slot_of(t + z * r);
#pragma unroll
              for (int mi = 0; mi < T::kMI; ++mi)
#pragma unroll
                for (int i = 0; i < T::kAcc; i += 4) {
                  const float4 v = __ldcg(pz + sk_at(mi, i));
                  acc[mi][i] += v.x;
                  acc[mi][i + 1] += v.y;
                  acc[mi][i + 2] += v.z;
                  acc[mi][i + 3] += v.w;
                }
            }
          }
        }
      }
      if (!store_c) {
        // a split-K item whose tile another item (or the reduce kernel) finishes; SK: a tail split not the last
      } else if constexpr (SWAP) {
        swapped_epilogue<T, BM>(acc, my_epi, T::kEpiRunning ? epi_seq : 0, warp, lane, wg_thread, consumer, map_c, m0,
                                n0, M, N);
        if constexpr (T::kEpiRunning) epi_seq += T::kChunks;
      } else if constexpr (EPI > 0) {
        // Chunked epilogue (EPI buffers of one 64-column chunk, see WgmmaTile2): per chunk, wait
        // until the store that last read its buffer (EPI groups back) is done reading, stage, store.
        // Fragment and swizzle as in the whole-slab epilogue below. An empty commit keeps the group
        // count per chunk at one where a chunk lies past M or N.
        // SHEPI: the block's t-th epilogue first waits until the (t-1)-th one's stores (the other
        // consumer's) have read the shared buffers; the first chunk's named barrier passes that on.
        if constexpr (SHEPI) {
          const int seq = (item - (int)blockIdx.x) / (int)gridDim.x;
          if (wg_thread == 0 && seq > 0) mbar_wait(epi_free, (seq - 1) & 1);
        }
        const int rsub = lane / 4;
#pragma unroll
        for (int c = 0; c < T::kChunks; ++c) {
          unsigned char* buf = my_epi + ((T::kEpiRunning ? epi_seq + c : c) % T::kEpiChunks) * T::kEpiChunkBytes;
          if (wg_thread == 0) bulk_wait_read<T::kEpiChunks - 1>();
          named_bar_sync(kBarEpilogue + consumer, 128);
#pragma unroll
          for (int mi = 0; mi < T::kMI; ++mi) {
            const int r = mi * 64 + warp * 16 + rsub;
#pragma unroll
            for (int jj = 0; jj < T::kCols / 8; ++jj) {
              const int j = c * (T::kCols / 8) + jj;
              unsigned char* p = buf + r * T::kRowBytes + T::swz(jj, rsub) * 16 + (lane % 4) * 4;
              *reinterpret_cast<half2*>(p) = __floats2half2_rn(acc[mi][4 * j], acc[mi][4 * j + 1]);
              *reinterpret_cast<half2*>(p + 8 * T::kRowBytes) =
                  __floats2half2_rn(acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
            }
          }
          fence_proxy_async_smem();
          named_bar_sync(kBarEpilogue + consumer, 128);
          if (wg_thread == 0) {
            if (m0 + a_row_off < M && n0 + c * T::kCols < N) tma_store_2d(map_c, n0 + c * T::kCols, m0 + a_row_off, buf);
            bulk_commit();
          }
        }
        if constexpr (T::kEpiRunning) epi_seq += T::kChunks;
        if constexpr (SHEPI) {
          if (wg_thread == 0) {
            bulk_wait_read<0>();  // every chunk of this epilogue has been read: hand the buffers over
            mbar_arrive(epi_free);
          }
        }
      } else {
        // Epilogue: the staging buffer is free once this consumer's previous TMA store read it.
        if (wg_thread == 0) bulk_wait_read<0>();
        named_bar_sync(kBarEpilogue + consumer, 128);
        // Fragment: element 4j+e at row 16*warp + lane/4 (+8 for e >= 2), column 8j + 2*(lane%4) + e%2.
        // Staging: 64-column chunks of kRowsPerConsumer rows x 128 B, 16-byte unit u of row r stored at
        // unit u ^ (r % 8) (TMA's 128B swizzle); a warp's 8 rows then hit 8 different bank groups.
        const int rsub = lane / 4;  // == row % 8 for every row this thread holds
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) {
          const int r = mi * 64 + warp * 16 + rsub;
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            unsigned char* p = my_epi + (j / 8) * T::kEpiChunkBytes + r * 128 +
                               (((j % 8) ^ rsub) * 16) + (lane % 4) * 4;
            *reinterpret_cast<half2*>(p) = __floats2half2_rn(acc[mi][4 * j], acc[mi][4 * j + 1]);
            *reinterpret_cast<half2*>(p + 8 * 128) =
                __floats2half2_rn(acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
          }
        }
        fence_proxy_async_smem();
        named_bar_sync(kBarEpilogue + consumer, 128);
        if (wg_thread == 0) {
          // Boxes partly past M or N are clipped by the TMA unit. Boxes wholly outside C (a cooperative
          // consumer's rows past M, 64-column chunks past N) are not issued at all: nothing to write,
          // and no reliance on how the unit treats an all-out-of-bounds store. An empty commit is legal.
          if (m0 + a_row_off < M) {
#pragma unroll
            for (int j = 0; j < BN / 64; ++j)
              if (n0 + j * 64 < N)
                tma_store_2d(map_c, n0 + j * 64, m0 + a_row_off, my_epi + j * T::kEpiChunkBytes);
          }
          bulk_commit();
        }
      }
    }
    if (wg_thread == 0) {  // the staging buffer must outlive the last store
      if constexpr (kExitAfterRead) bulk_wait_read<0>(); else bulk_wait<0>();
    }
    if constexpr (CSPLIT) {
      // Every consumer is past its mainloop (so no wgmma reads the ring any more, and every TMA load
      // into it has landed) before the ring is overwritten with this split's fp32 tile.
      named_bar_sync(kBarCsplit, CONSUMERS * 128);
      if (first < num_items) {
        float* red = reinterpret_cast<float*>(smem);
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) {
          const int r = a_row_off + mi * 64 + warp * 16 + lane / 4;
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            const int col = j * 8 + (lane % 4) * 2;
            *reinterpret_cast<float2*>(red + r * (BN + 8) + col) = make_float2(acc[mi][4 * j], acc[mi][4 * j + 1]);
            *reinterpret_cast<float2*>(red + (r + 8) * (BN + 8) + col) =
                make_float2(acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
          }
        }
      }
    }
  }
  if constexpr (CSPLIT) {
    static_assert(BM * (BN + 8) * 4 <= STAGES * T::kSlotBytes, "the fp32 tile must fit in the ring");
    cluster_sync_all();  // every CTA's tile is written and visible to the cluster
    if (warpgroup > 0) {
      const int split = blockIdx.x % splits;
      int tm, tn;
      tile_coords(blockIdx.x / splits, tiles_m, tiles_n, tm, tn);
      const int m0 = tm * BM, n0 = tn * BN;
      constexpr int kQuads = BN / 4;
      const int units = BM * kQuads;
      const int u_end = (split + 1) * units / splits;
      const uint32_t red = smem_u32(smem);
      for (int u = split * units / splits + (threadIdx.x - 128); u < u_end; u += CONSUMERS * 128) {
        const int r = u / kQuads, c = (u % kQuads) * 4;
        if (m0 + r >= M || n0 + c >= N) continue;
        const uint32_t at = red + (uint32_t)(r * (BN + 8) + c) * 4;
        float4 sum = ld_dsmem_f4(at, 0);
        for (int z = 1; z < splits; ++z) add4(sum, ld_dsmem_f4(at, z));
        store_half4(c_ptr + (size_t)(m0 + r) * ldc + n0 + c, sum);
      }
    }
    cluster_sync_all();  // no CTA's shared memory goes away while a peer may still read it
  }
}

// The 2x1 cluster kernel's body: wgmma2_body (above) with the changes below. A separate copy, so
// that the measured generation-2 kernels compile to exactly the SASS they had (a shared body with a
// cluster flag changed their instruction schedule), at the cost of duplicated mainloop code: a fix
// to one mainloop must be made to both.
//
// CM = 2: the 2x1 cluster kernel (cluster_tile, produce_tiles_cluster): units are pairs of tiles
// sharing B, walked per cluster; each slot's empty barrier collects the releases of both CTAs'
// consumers (2 x the one-CTA count; every consumer warp arrives on its own CTA's barrier and on the
// peer's through its shared::cluster address, see mbar_arrive_cluster); an idle CTA (its tile past M) waits and releases but issues no wgmma and
// no store. Barrier init is published to the cluster (fence.mbarrier_init + cluster barrier) before
// any thread of either CTA may touch them, and no CTA exits before a final cluster barrier: until
// then the peer may still arrive on its empty barriers. Without split-K only.
//
// UNCOND (session 16; measured in session 17: 48 recovers about half of 40's loss to its twin, 49 loses to
// 22; both retired, configs.RETIRED_WGMMA_IDS): issue every k-block's wgmmas whether or not the CTA is idle
// for the unit (an idle CTA's A slot holds stale data; its results are never stored, and the next unit's
// first k-block restarts the accumulators). Nsight's per-instruction samples of the 128 x 128 cluster
// kernel (40) at 2048x1024x8192, which keeps the tensor pipe 81.8% busy where its twin (27) reaches 93.5%:
// the `live` branch around the wgmma block leaves the full-barrier wait in a BSSY/BSYNC region and every
// descriptor computation after it, so the k-block's first wgmma waits on them (172 samples there against
// 20 in the twin, whose compiler hoists that work above the wait).
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, bool SPLITK, int CM, int EPI = 0, bool UNCOND = false,
          int KB = 1, int MC = 0, bool LEAN = false, bool SWAP = false>
__device__ __forceinline__ void wgmma2_cluster_body(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                            const CUtensorMap* map_c, float* partials, int M, int N,
                                            int K, int splits) {
  using T = WgmmaTile2<BM, BN, CONSUMERS, STAGES, SCHED, EPI, false, KB, SWAP>;
  static_assert((CM == kClusterMax || CM == kClusterQuad) && (!SPLITK || (CM == kClusterMax && !SWAP && KB == 1)),
                "clusters of 2 or 4; split-K (session 28) for pairs in our frame with 64-deep slots");
  static_assert(!T::kEpiRunning, "the cluster body's chunked epilogue reuses buffer c % kEpiChunks");
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  unsigned char* smem = smem_raw + ((1024 - (raw & 1023)) & 1023);
  unsigned char* slots_a = smem;
  unsigned char* slots_b = smem + STAGES * T::kSlotABytes;
  unsigned char* epi = smem + STAGES * T::kSlotBytes;
  uint64_t* full = reinterpret_cast<uint64_t*>(epi + T::kEpiBytes);
  uint64_t* empty = full + STAGES;

  // B modes 3-4 (diagnostics): each CTA's slots released by its own consumers alone; 4: no cluster barriers.
  constexpr bool kRemoteRelease = CM > 1 && (MC < 3 || along_n(MC));
  constexpr bool kClusterBarriers = CM > 1 && MC != 4;
  const int warpgroup = warpgroup_index();
  const int wg_thread = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      // Ping-pong: a slot belongs to one consumer's tile, so only its 4 warps release it.
      mbar_init(&empty[s], (T::kPingPong ? 1 : CONSUMERS) * 4 * (kRemoteRelease ? CM : 1));
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    if constexpr (kEarlyMapPrefetch) {
      tma_prefetch_map(map_a);
      tma_prefetch_map(map_b);
      if constexpr (!SPLITK) tma_prefetch_map(map_c);
    }
  }
  __syncthreads();
  // the peer's barriers are initialised before first use (LEAN: relaxed arrival, the init fence above orders them)
  if constexpr (kClusterBarriers) {
    if constexpr (LEAN)
      asm volatile("barrier.cluster.arrive.relaxed;\nbarrier.cluster.wait;\n" ::: "memory");
    else
      cluster_sync_all();
  }
  constexpr PdlRole kRole = SPLITK ? kPdlSplitK : kPdlGemm;
  pdl_top<kRole>();  // before any global or TMA access (kLateWait: the release alone; each role waits below)

  const int tiles_m = (M + BM - 1) / BM;
  const int tiles_n = (N + BN - 1) / BN;
  const int num_tiles = tiles_m * tiles_n;
  const int k_tiles = (K + kBK * KB - 1) / (kBK * KB);  // ring slots a tile takes
  // The sequence this CTA walks: items seq0, seq0 + seq_step, ... (one block's, or one cluster's).
  // (SPLITK: work_item's items over the cluster's units, num_units x splits of them)
  const int num_units = CM > 1 ? cluster_units(tiles_m, tiles_n, CM, MC) : num_tiles;
  const int num_items = SPLITK ? num_units * splits : num_units;
  const int seq0 = CM > 1 ? (int)cluster_id_x() : (int)blockIdx.x;
  const int seq_step = CM > 1 ? (int)cluster_count_x() : (int)gridDim.x;
  const int rank = CM > 1 ? (int)cluster_ctarank() : 0;

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(T::kProducerRegsT));
    if (wg_thread == 0) {  // (kLateWait: waits once its first item's coordinates are known)
      if constexpr (CM > 1)
        produce_tiles_cluster<T, BM, BN, STAGES, KB, MC, LEAN, CM, SPLITK, kLateWait, kRole>(
            map_a, map_b, slots_a, slots_b, full, empty, tiles_m, tiles_n, num_units, k_tiles, rank, seq0, seq_step,
            splits);
      else
        produce_tiles<T, BM, BN, STAGES, SPLITK, false, false, 1, kLateWait, kRole>(
            map_a, map_b, slots_a, slots_b, full, empty, tiles_m, tiles_n, num_tiles, k_tiles, splits);
    } else {
      pdl_late<kRole>();
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(T::kConsumerRegsT));
    const int consumer = warpgroup - 1;
    const int warp = wg_thread / 32, lane = wg_thread % 32;
    if constexpr (!SPLITK && !kEarlyMapPrefetch) {
      if (wg_thread == 0) tma_prefetch_map(map_c);
    }
    pdl_late<kRole>();
    unsigned char* my_epi = epi + consumer * T::kEpiBytesPerConsumer;
    const int a_row_off = T::kPingPong ? 0 : consumer * T::kRowsPerConsumer;
    float acc[T::kMI][T::kAcc];
#pragma unroll
    for (int mi = 0; mi < T::kMI; ++mi)
#pragma unroll
      for (int i = 0; i < T::kAcc; ++i) acc[mi][i] = 0.f;
    // Ring position of this consumer's next k-block (see above). Without split-K every item has
    // k_tiles k-blocks: ping-pong item j fills positions j*k_tiles .. j*k_tiles + k_tiles - 1.
    uint32_t pos = T::kPingPong ? consumer * k_tiles : 0;
    if constexpr (SPLITK) {
      pos = (T::kPingPong && consumer == 1) ? work_item(seq0, num_units, splits, k_tiles).kb_count : 0;
    }
    // Slot release: this CTA's empty barrier, and with a cluster also the peers' (their producers
    // multicast into this CTA's slot too).
    auto release = [&](uint32_t s) {
      if constexpr (kRemoteRelease) {
#pragma unroll
        for (int r = 0; r < CM; ++r) mbar_arrive_cluster(&empty[s], r);
      } else {
        mbar_arrive(&empty[s]);
      }
    };
    const int first = T::kPingPong ? seq0 + consumer * seq_step : seq0;
    const int step = T::kPingPong ? 2 * seq_step : seq_step;
    const RingAt ring(full, empty, slots_a, slots_b);
    for (int item = first; item < num_items; item += step) {
      int tile = item, split = 0, kb_count = k_tiles;  // (tile: the cluster's unit)
      if constexpr (SPLITK) {
        const WorkItem w = work_item(item, num_units, splits, k_tiles);
        tile = w.tile;
        split = w.split;
        kb_count = w.kb_count;
      }
      int tm, tn;
      bool live = true;  // cluster: false for an idle CTA (its tile of the pair lies past M, or N for a pair along N)
      if constexpr (CM > 1) {
        pair_tile<MC, CM>(tile, rank, tiles_m, tiles_n, tm, tn);
        live = along_n(MC) ? tn < tiles_n : tm < tiles_m;
      } else {
        tile_coords(tile, tiles_m, tiles_n, tm, tn);
      }
      const int m0 = tm * BM, n0 = tn * BN;
      if (T::kPingPong && item != seq0) named_bar_sync(kBarOrder + consumer, 256);
      uint32_t prev_slot = 0;
      for (int kt = 0; kt < kb_count; ++kt) {
        const uint32_t slot = pos % STAGES;
        mbar_wait_at(ring.full + slot * 8, (pos / STAGES) & 1);
        const uint32_t a_base = ring.a, b_base = ring.b;  // (the descriptors' slot offsets, in 16-byte units)
        const uint32_t a_off = slot * (T::kSlotABytes / 16) + a_row_off * 8, b_off = slot * (T::kSlotBBytes / 16);
        if (UNCOND || live) {
#pragma unroll
          for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
          wgmma_fence();
#pragma unroll
          for (int kk = 0; kk < KB * kBK / 16; ++kk) {  // (KB = 2: A's k-chunk kk / 4, B's rows 16 kk..)
            if constexpr (SWAP) {
              swapped_k_step<T, BM>(acc, a_base, b_base, kk, (kt | kk) != 0, a_off, b_off);
            } else {
            const uint64_t desc_b =
                SmemDesc<T::kChunkBBytes, 8 * T::kRowBytes, T::kSwizzle>(b_base).at(kk * 16 * T::kRowBytes, b_off);
#pragma unroll
            for (int mi = 0; mi < T::kMI; ++mi) {
              const uint64_t desc_a =
                  SmemDesc<16, 8 * 128>(a_base).at((kk / 4) * T::kChunkABytes + mi * 64 * 128 + (kk % 4) * 32, a_off);
              wgmma_m64k16<BN>(acc[mi], desc_a, desc_b, (kt | kk) != 0);
            }
            }
          }
          wgmma_commit();
        }
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
        wgmma_wait<1>();  // the previous k-block is done: its slot can be refilled
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
        if (kt > 0 && lane == 0) release(prev_slot);
        prev_slot = slot;
        ++pos;
      }
      // Ping-pong: every MMA of this item is issued; the other consumer may start its mainloop.
      // Arrive only when it has a next item, so no barrier is left half-arrived at exit.
      if (T::kPingPong && item + seq_step < num_items)
        named_bar_arrive(kBarOrder + (consumer ^ 1), 256);
      wgmma_wait<0>();
#pragma unroll
      for (int mi = 0; mi < T::kMI; ++mi) fence_operands(acc[mi]);
      if (kb_count > 0 && lane == 0) release(prev_slot);
      if (T::kPingPong) {  // skip the other consumer's item
        if constexpr (SPLITK) {
          if (item + seq_step < num_items)
            pos += work_item(item + seq_step, num_units, splits, k_tiles).kb_count;
        } else {
          pos += k_tiles;
        }
      }
      if (!live) continue;  // idle cluster CTA: nothing to store (uniform over the warpgroup)

      if constexpr (SPLITK) {
        // fp32 partial of this split, straight from the accumulator fragment (element 4j+e at row
        // 16*warp + lane/4 (+8 for e >= 2), column 8j + 2*(lane%4) + e%2): a warp's float2 store
        // writes 8 rows x 32 contiguous bytes, whole sectors. Rows >= M and columns >= N are
        // clipped (N % 8 == 0 keeps a pair in or out together).
        float* part = partials + (size_t)split * M * N;
        const int col_base = n0 + (lane % 4) * 2;
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) {
          const int r0 = m0 + a_row_off + mi * 64 + warp * 16 + lane / 4;
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            const int col = col_base + j * 8;
            if (col >= N) continue;
            if (r0 < M)
              *reinterpret_cast<float2*>(part + (size_t)r0 * N + col) =
                  make_float2(acc[mi][4 * j], acc[mi][4 * j + 1]);
            if (r0 + 8 < M)
              *reinterpret_cast<float2*>(part + (size_t)(r0 + 8) * N + col) =
                  make_float2(acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
          }
        }
      } else if constexpr (SWAP) {
        swapped_epilogue<T, BM>(acc, my_epi, 0, warp, lane, wg_thread, consumer, map_c, m0, n0, M, N);
      } else if constexpr (EPI > 0) {
        // Chunked epilogue: wgmma2_body's, copied (see there; session 15: the cluster twins of the
        // chunked configs, whose deeper ring gives the pair more slack than the whole-slab staging).
        const int rsub = lane / 4;
#pragma unroll
        for (int c = 0; c < T::kChunks; ++c) {
          unsigned char* buf = my_epi + (c % T::kEpiChunks) * T::kEpiChunkBytes;
          if (wg_thread == 0) bulk_wait_read<T::kEpiChunks - 1>();
          named_bar_sync(kBarEpilogue + consumer, 128);
#pragma unroll
          for (int mi = 0; mi < T::kMI; ++mi) {
            const int r = mi * 64 + warp * 16 + rsub;
#pragma unroll
            for (int jj = 0; jj < T::kCols / 8; ++jj) {
              const int j = c * (T::kCols / 8) + jj;
              unsigned char* p = buf + r * T::kRowBytes + T::swz(jj, rsub) * 16 + (lane % 4) * 4;
              *reinterpret_cast<half2*>(p) = __floats2half2_rn(acc[mi][4 * j], acc[mi][4 * j + 1]);
              *reinterpret_cast<half2*>(p + 8 * T::kRowBytes) =
                  __floats2half2_rn(acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
            }
          }
          fence_proxy_async_smem();
          named_bar_sync(kBarEpilogue + consumer, 128);
          if (wg_thread == 0) {
            if (m0 + a_row_off < M && n0 + c * T::kCols < N) tma_store_2d(map_c, n0 + c * T::kCols, m0 + a_row_off, buf);
            bulk_commit();
          }
        }
      } else {
        // Epilogue: the staging buffer is free once this consumer's previous TMA store read it.
        if (wg_thread == 0) bulk_wait_read<0>();
        named_bar_sync(kBarEpilogue + consumer, 128);
        // Fragment: element 4j+e at row 16*warp + lane/4 (+8 for e >= 2), column 8j + 2*(lane%4) + e%2.
        // Staging: 64-column chunks of kRowsPerConsumer rows x 128 B, 16-byte unit u of row r stored at
        // unit u ^ (r % 8) (TMA's 128B swizzle); a warp's 8 rows then hit 8 different bank groups.
        const int rsub = lane / 4;  // == row % 8 for every row this thread holds
#pragma unroll
        for (int mi = 0; mi < T::kMI; ++mi) {
          const int r = mi * 64 + warp * 16 + rsub;
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            unsigned char* p = my_epi + (j / 8) * T::kEpiChunkBytes + r * 128 +
                               (((j % 8) ^ rsub) * 16) + (lane % 4) * 4;
            *reinterpret_cast<half2*>(p) = __floats2half2_rn(acc[mi][4 * j], acc[mi][4 * j + 1]);
            *reinterpret_cast<half2*>(p + 8 * 128) =
                __floats2half2_rn(acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
          }
        }
        fence_proxy_async_smem();
        named_bar_sync(kBarEpilogue + consumer, 128);
        if (wg_thread == 0) {
          // Boxes partly past M or N are clipped by the TMA unit. Boxes wholly outside C (a cooperative
          // consumer's rows past M, 64-column chunks past N) are not issued at all: nothing to write,
          // and no reliance on how the unit treats an all-out-of-bounds store. An empty commit is legal.
          if (m0 + a_row_off < M) {
#pragma unroll
            for (int j = 0; j < BN / 64; ++j)
              if (n0 + j * 64 < N)
                tma_store_2d(map_c, n0 + j * 64, m0 + a_row_off, my_epi + j * T::kEpiChunkBytes);
          }
          bulk_commit();
        }
      }
    }
    if constexpr (!SPLITK) {
      if (wg_thread == 0) {  // the staging buffer must outlive the last store
        if constexpr (kExitAfterRead) bulk_wait_read<0>(); else bulk_wait<0>();
      }
    }
  }
  // Cluster: no CTA leaves while the peer may still arrive on its empty barriers (the peer's
  // multicasts into this CTA have all landed: this CTA's consumers waited for every full phase).
  // LEAN: the producer's tail waited for those arrivals, so the CTA ends when its threads do (its idle warps
  // early, as the one-CTA kernels' do) and no thread waits on the peer at the end.
  if constexpr (kClusterBarriers && !LEAN) cluster_sync_all();
}

// Without split-K: C (fp16) through its tensor map. The configs measured in session 6.
// CPA: the cp.async producer's instantiation (src.a != nullptr selects it at run time); without it the
// kernel is TMA only and `src` is unused.
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0, bool CPA = false, bool SHEPI = false>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_kernel(const __grid_constant__ CUtensorMap map_a,
                        const __grid_constant__ CUtensorMap map_b,
                        const __grid_constant__ CUtensorMap map_c, int M, int N, int K, CpSrc src) {
  wgmma2_body<BM, BN, CONSUMERS, STAGES, SCHED, false, EPI, false, CPA, SHEPI>(&map_a, &map_b, &map_c, nullptr, M, N,
                                                                               K, 1, nullptr, nullptr, 0, 0, src);
}

// The stream-K tail kernel (SK, session 47; see sk_item): a cooperative plain kernel's tiles, the last partial
// wave's tiles split along K over the idle CTAs (splits: the tail's split count, sk_tail_splits). partials /
// counters: the fixup's slots (cudaopt_wgmma_streamk_workspace_bytes); the split-K signature, c_ptr, ldc and spread
// unused.
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_streamk_kernel(const __grid_constant__ CUtensorMap map_a,
                                const __grid_constant__ CUtensorMap map_b,
                                const __grid_constant__ CUtensorMap map_c, float* partials, int* counters, int M,
                                int N, int K, int splits, half*, int, int, CpSrc) {
  wgmma2_body<BM, BN, CONSUMERS, STAGES, SCHED, false, EPI, false, false, false, false, 1, false, false, false, true>(
      &map_a, &map_b, &map_c, partials, M, N, K, splits, counters, nullptr, 0, 0, CpSrc{});
}

// B^T twins of the plain kernel (BT, session 39): B given K-major (the caller's B^T, N x K row-major); TMA only, in
// our frame or (SWAP) the swapped one.
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0, bool SWAP = false>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_bt_kernel(const __grid_constant__ CUtensorMap map_a,
                           const __grid_constant__ CUtensorMap map_b,
                           const __grid_constant__ CUtensorMap map_c, int M, int N, int K, CpSrc) {
  wgmma2_body<BM, BN, CONSUMERS, STAGES, SCHED, false, EPI, false, false, false, false, 1, SWAP, false, true>(
      &map_a, &map_b, &map_c, nullptr, M, N, K, 1, nullptr, nullptr, 0, 0, CpSrc{});
}

// ... and of the split-K kernel (the reduce kernel sums its partials; no in-kernel fixup).
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_splitk_bt_kernel(const __grid_constant__ CUtensorMap map_a,
                                  const __grid_constant__ CUtensorMap map_b,
                                  const __grid_constant__ CUtensorMap map_c, float* partials,
                                  int* counters, int M, int N, int K, int splits, half* c_ptr, int ldc,
                                  int spread, CpSrc) {
  wgmma2_body<BM, BN, CONSUMERS, STAGES, SCHED, true, EPI, false, false, false, false, 1, false, false, true>(
      &map_a, &map_b, &map_c, partials, M, N, K, splits, counters, c_ptr, ldc, spread, CpSrc{});
}

// B3D twins of the plain and split-K kernels (produce_tiles: B's chunks in one 3-D box), TMA only; the
// host launches them with a 3-D map of B, only where N % 64 == 0 (elsewhere the twin's 2-D kernels).
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0, int KB = 1>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_b3d_kernel(const __grid_constant__ CUtensorMap map_a,
                            const __grid_constant__ CUtensorMap map_b,
                            const __grid_constant__ CUtensorMap map_c, int M, int N, int K, CpSrc) {
  wgmma2_body<BM, BN, CONSUMERS, STAGES, SCHED, false, EPI, false, false, false, true, KB>(
      &map_a, &map_b, &map_c, nullptr, M, N, K, 1, nullptr, nullptr, 0, 0, CpSrc{});
}
// The swapped-operand kernel (SWAP, session 26): plain, TMA only.
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_swap_kernel(const __grid_constant__ CUtensorMap map_a,
                             const __grid_constant__ CUtensorMap map_b,
                             const __grid_constant__ CUtensorMap map_c, int M, int N, int K, CpSrc) {
  wgmma2_body<BM, BN, CONSUMERS, STAGES, SCHED, false, EPI, false, false, false, false, 1, true>(
      &map_a, &map_b, &map_c, nullptr, M, N, K, 1, nullptr, nullptr, 0, 0, CpSrc{});
}
// The k-split ping-pong (KS, session 33): both consumers on each tile, alternating k-blocks, consumer 1's partial
// added by consumer 0 through shared memory; plain, TMA only, in our frame or (SWAP) the swapped one.
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI, bool SWAP>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_ks_kernel(const __grid_constant__ CUtensorMap map_a,
                           const __grid_constant__ CUtensorMap map_b,
                           const __grid_constant__ CUtensorMap map_c, int M, int N, int K, CpSrc) {
  wgmma2_body<BM, BN, CONSUMERS, STAGES, SCHED, false, EPI, false, false, false, false, 1, SWAP, true>(
      &map_a, &map_b, &map_c, nullptr, M, N, K, 1, nullptr, nullptr, 0, 0, CpSrc{});
}
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_splitk_b3d_kernel(const __grid_constant__ CUtensorMap map_a,
                                   const __grid_constant__ CUtensorMap map_b,
                                   const __grid_constant__ CUtensorMap map_c, float* partials,
                                   int* counters, int M, int N, int K, int splits, half* c_ptr, int ldc,
                                   int spread, CpSrc) {
  wgmma2_body<BM, BN, CONSUMERS, STAGES, SCHED, true, EPI, false, false, false, true>(
      &map_a, &map_b, &map_c, partials, M, N, K, splits, counters, c_ptr, ldc, spread, CpSrc{});
}

// 2x1 cluster (launched with cudaLaunchKernelEx and a cluster dimension of 2 along x; the grid is a
// multiple of 2): pairs of vertically adjacent tiles share B through TMA multicast (cluster_tile).
// CM = 4 (session 24): clusters of four along x, each CTA on one tile of a group of four (cluster_tile).
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0, bool UNCOND = false, int MC = 0,
          bool LEAN = false, int CM = kClusterMax, bool SWAP = false>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_cluster_kernel(const __grid_constant__ CUtensorMap map_a,
                                const __grid_constant__ CUtensorMap map_b,
                                const __grid_constant__ CUtensorMap map_c, int M, int N, int K,
                                CpSrc) {  // (TMA only: the argument keeps one signature for `kernel2`)
  wgmma2_cluster_body<BM, BN, CONSUMERS, STAGES, SCHED, false, CM, EPI, UNCOND, 1, MC, LEAN, SWAP>(
      &map_a, &map_b, &map_c, nullptr, M, N, K, 1);
}

// The lean 2x1 pair with split-K (session 28): items = the pair's units x splits (work_item over units), each CTA's
// fp32 partial of its tile to partials[split][M][N], summed by the reduce kernel as the one-CTA split-K's are; the
// same k ranges as its one-CTA twin's split-K, so the same partials. For the small long-K shapes the table splits
// over 64 x 128 and 128 x 128 tiles, where cuBLASLt splits over 2x1 clusters.
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI, int MC>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_cluster_splitk_kernel(const __grid_constant__ CUtensorMap map_a,
                                       const __grid_constant__ CUtensorMap map_b,
                                       const __grid_constant__ CUtensorMap map_c, float* partials, int*, int M,
                                       int N, int K, int splits, half*, int, int, CpSrc) {
  wgmma2_cluster_body<BM, BN, CONSUMERS, STAGES, SCHED, true, kClusterMax, EPI, true, 1, MC, true>(
      &map_a, &map_b, &map_c, partials, M, N, K, splits);
}

// The 2x1 cluster kernel with 128-deep slots (KB = 2, session 17): A through a 3-D map of A, B through a
// 2-D map of 128-row boxes (the host launches it where K % 64 == 0; the 64-deep cluster kernel elsewhere).
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_cluster_deep_kernel(const __grid_constant__ CUtensorMap map_a,
                                     const __grid_constant__ CUtensorMap map_b,
                                     const __grid_constant__ CUtensorMap map_c, int M, int N, int K, CpSrc) {
  wgmma2_cluster_body<BM, BN, CONSUMERS, STAGES, SCHED, false, kClusterMax, EPI, true, 2>(&map_a, &map_b, &map_c,
                                                                                         nullptr, M, N, K, 1);
}

// Split-K: fp32 partials of `splits` K ranges into partials[splits][M][N] (dense, ld = N); C is
// written by the last item of each tile (counters given: the in-kernel fixup, through map_c and the
// staging buffer) or by a reduce kernel afterwards (counters null). Same shared-memory
// layout as the plain kernel, so one smem size per config.
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0, bool CPA = false>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_splitk_kernel(const __grid_constant__ CUtensorMap map_a,
                               const __grid_constant__ CUtensorMap map_b,
                               const __grid_constant__ CUtensorMap map_c, float* partials,
                               int* counters, int M, int N, int K, int splits, half* c_ptr, int ldc,
                               int spread, CpSrc src) {
  wgmma2_body<BM, BN, CONSUMERS, STAGES, SCHED, true, EPI, false, CPA>(&map_a, &map_b, &map_c, partials, M, N, K,
                                                                       splits, counters, c_ptr, ldc, spread, src);
}

// Cluster split-K (CSPLIT in wgmma2_body): launched with a cluster of `splits` (2..8) CTAs along x,
// grid = tiles x splits; the same arguments as the split-K kernel (partials, counters, map_c unused).
template <int BM, int BN, int CONSUMERS, int STAGES, int SCHED, int EPI = 0>
__global__ void __launch_bounds__((CONSUMERS + 1) * 128, 1)
    hgemm_wgmma2_csplit_kernel(const __grid_constant__ CUtensorMap map_a,
                               const __grid_constant__ CUtensorMap map_b,
                               const __grid_constant__ CUtensorMap map_c, float* partials,
                               int* counters, int M, int N, int K, int splits, half* c_ptr, int ldc,
                               int spread, CpSrc) {  // (TMA only)
  wgmma2_body<BM, BN, CONSUMERS, STAGES, SCHED, true, EPI, true>(&map_a, &map_b, &map_c, partials, M, N, K,
                                                                 splits, nullptr, c_ptr, ldc, 0);
}

// The session-6 reduce (the default until session 12; CUDAOPT_GEMM_REDUCE_CHUNKED=0 selects it): sums the `splits`
// fp32 partials [splits][M][N] into fp16 C (leading dimension ldc), splits in order 0, 1, ...
// (deterministic), one thread looping over every split. 8 columns per thread (N % 8 == 0): two float4 loads per split,
// one 16-byte store (C and ldc are 16-byte aligned, checked on the host).
__global__ void __launch_bounds__(256)
    wgmma_splitk_reduce_serial_kernel(const float* __restrict__ partials, half* __restrict__ C, int M, int N,
                               int ldc, int splits) {
  pdl_reduce_wait_then_release();  // the split-K kernel's partials are complete and visible
  const size_t octs = (size_t)M * N / 8;
  const size_t stride = (size_t)M * N;
  for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < octs;
       q += (size_t)gridDim.x * blockDim.x) {
    const float4* p = reinterpret_cast<const float4*>(partials) + 2 * q;
    float4 lo = p[0], hi = p[1];
    for (int z = 1; z < splits; ++z) {
      const float4* pz = reinterpret_cast<const float4*>(partials + z * stride) + 2 * q;
      const float4 a = pz[0], b = pz[1];
      lo.x += a.x; lo.y += a.y; lo.z += a.z; lo.w += a.w;
      hi.x += b.x; hi.y += b.y; hi.z += b.z; hi.w += b.w;
    }
    const float4 sums[2] = {lo, hi};
    store_lane<2>(C, N, ldc, q, sums);
  }
}

// ---- host side ------------------------------------------------------------------------------------

using KernelFn = void (*)(const CUtensorMap, const CUtensorMap, half*, int, int, int, int);
using Kernel2Fn = void (*)(const CUtensorMap, const CUtensorMap, const CUtensorMap, int, int, int, CpSrc);
using Kernel2SplitFn = void (*)(const CUtensorMap, const CUtensorMap, const CUtensorMap, float*, int*, int,
                               int, int, int, half*, int, int, CpSrc);

// schedule 0: generation 1 (`kernel`, no split-K); 1 and 2: generation 2 (`kernel2`, C through a
// tensor map with boxes of 64 columns x c_box_rows rows; `kernel2_splitk` for splits > 1).
// cluster 2: `kernel2` is a 2x1 cluster kernel (hgemm_wgmma2_cluster_kernel, no split-K), launched
// with a cluster dimension through cudaLaunchKernelExC.
struct WgmmaEntry {
  int bm, bn, bk, consumers, stages, smem_bytes, threads, schedule, c_box_rows;
  KernelFn kernel;
  Kernel2Fn kernel2;
  Kernel2SplitFn kernel2_splitk;
  int cluster;
  Kernel2SplitFn kernel2_csplit;  // cluster split-K (generation 2 without clusters; null elsewhere)
  int csplit_only;  // 1: splits > 1 always take kernel2_csplit (at most kCsplitMaxSplits), see below
  // The cp.async producer's instantiations of kernel2 / kernel2_splitk (CPA; null: TMA only), launched
  // where cpasync_src selects that producer.
  Kernel2Fn kernel2_cp;
  Kernel2SplitFn kernel2_splitk_cp;
  // B3D instantiations (session 17; null elsewhere): launched instead of kernel2 / kernel2_splitk, with
  // a 3-D map of B, where N % 64 == 0 and the TMA producer runs.
  Kernel2Fn kernel2_b3d;
  Kernel2SplitFn kernel2_splitk_b3d;
  int b_mc;  // 64-wide 2x1 pairs: how B reaches the pair (MC of produce_tiles_cluster; 0 elsewhere)
  // The L2 promotion (index into kL2Promotions) this config's operand maps are encoded with, whatever the library
  // setting (cudaopt_wgmma_set_l2_promotion); -1: the library setting (session 24: the quads' multicast read each
  // shared byte three times from L2 under 256 B promotion, once under 128 B or none).
  int l2_promo = -1;
};

#define CUDAOPT_WGMMA_CFG(BM, BN, CONS, ST)                                               \
  WgmmaEntry {                                                                            \
    BM, BN, kBK, CONS, ST, WgmmaTile<BM, BN, CONS, ST>::kSmemBytes,                       \
        WgmmaTile<BM, BN, CONS, ST>::kThreads, 0, 0, hgemm_wgmma_kernel<BM, BN, CONS, ST>, \
        nullptr, nullptr, 1                                                               \
  }
// The fields of a generation-2 entry with split-K (plain, split-K, cluster split-K and cp.async kernels);
// CSPLIT_ONLY: splits > 1 always take the cluster split-K kernel (CFG2CS below).
#define CUDAOPT_WGMMA_CFG2_FIELDS(BM, BN, CONS, ST, SCHED, EPI, CSPLIT_ONLY)                      \
  BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kSmemBytes,                    \
      WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kThreads, SCHED,                                  \
      WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kRowsPerConsumer, nullptr,                        \
      hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI>,                                          \
      hgemm_wgmma2_splitk_kernel<BM, BN, CONS, ST, SCHED, EPI>, 1,                                \
      hgemm_wgmma2_csplit_kernel<BM, BN, CONS, ST, SCHED, EPI>, CSPLIT_ONLY,                      \
      hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI, true>,                                    \
      hgemm_wgmma2_splitk_kernel<BM, BN, CONS, ST, SCHED, EPI, true>
#define CUDAOPT_WGMMA_CFG2(BM, BN, CONS, ST, SCHED) \
  WgmmaEntry { CUDAOPT_WGMMA_CFG2_FIELDS(BM, BN, CONS, ST, SCHED, 0, 0) }
// Generation 2 with a chunked C epilogue (EPI staging buffers of 64 columns, see WgmmaTile2).
#define CUDAOPT_WGMMA_CFG2E(BM, BN, CONS, ST, SCHED, EPI) \
  WgmmaEntry { CUDAOPT_WGMMA_CFG2_FIELDS(BM, BN, CONS, ST, SCHED, EPI, 0) }
// Cluster split-K variant of a generation-2 config (session 12): the same kernels, but its splits (2..8)
// always run as hgemm_wgmma2_csplit_kernel, a cluster of `splits` CTAs per tile summing through
// distributed shared memory, whatever CUDAOPT_GEMM_SPLITK_FIXUP says; a refused cluster launch is an
// error, not a fallback (the tuner must time what the label says).
#define CUDAOPT_WGMMA_CFG2CS(BM, BN, CONS, ST, SCHED, EPI) \
  WgmmaEntry { CUDAOPT_WGMMA_CFG2_FIELDS(BM, BN, CONS, ST, SCHED, EPI, 1) }
// 2x1 cluster variant of a generation-2 config (same tile, stages, smem; CM = 2 along M).
#define CUDAOPT_WGMMA_CLUSTER(BM, BN, CONS, ST, SCHED, CM)                                        \
  WgmmaEntry {                                                                                    \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED>::kSmemBytes,                       \
        WgmmaTile2<BM, BN, CONS, ST, SCHED>::kThreads, SCHED,                                     \
        WgmmaTile2<BM, BN, CONS, ST, SCHED>::kRowsPerConsumer, nullptr,                           \
        hgemm_wgmma2_cluster_kernel<BM, BN, CONS, ST, SCHED>, nullptr, CM                         \
  }
// Generation 2 with a chunked C epilogue and no split-K kernel (session 15: the 128 x 192 ping-pong,
// whose split-K kernel spills at 192 accumulators a thread; max_splits is then 1).
#define CUDAOPT_WGMMA_CFG2P(BM, BN, CONS, ST, SCHED, EPI)                                         \
  WgmmaEntry {                                                                                    \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kSmemBytes,                  \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kThreads, SCHED,                                \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kRowsPerConsumer, nullptr,                      \
        hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI>, nullptr, 1, nullptr, 0,                \
        hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI, true>, nullptr                          \
  }
// A plain-only ping-pong whose two consumers share one set of EPI staging chunks (SHEPI, session 15).
#define CUDAOPT_WGMMA_CFG2PS(BM, BN, CONS, ST, SCHED, EPI)                                        \
  WgmmaEntry {                                                                                    \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, true>::kSmemBytes,            \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, true>::kThreads, SCHED,                          \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, true>::kRowsPerConsumer, nullptr,                \
        hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI, false, true>, nullptr, 1, nullptr, 0,   \
        hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI, true, true>, nullptr                    \
  }
// A 2x1 cluster config whose consumers issue every k-block's wgmmas, idle or not (UNCOND, session 16).
#define CUDAOPT_WGMMA_CLUSTERU(BM, BN, CONS, ST, SCHED, CM, EPI)                                  \
  WgmmaEntry {                                                                                    \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kSmemBytes,                  \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kThreads, SCHED,                                \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kRowsPerConsumer, nullptr,                      \
        hgemm_wgmma2_cluster_kernel<BM, BN, CONS, ST, SCHED, EPI, true>, nullptr, CM              \
  }
// 2x1 cluster twin of a chunked-epilogue config (session 15): same tile, stages, staging and smem.
#define CUDAOPT_WGMMA_CLUSTERE(BM, BN, CONS, ST, SCHED, CM, EPI)                                  \
  WgmmaEntry {                                                                                    \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kSmemBytes,                  \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kThreads, SCHED,                                \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kRowsPerConsumer, nullptr,                      \
        hgemm_wgmma2_cluster_kernel<BM, BN, CONS, ST, SCHED, EPI>, nullptr, CM                    \
  }
// Session 21's cluster entries: a 2x1 cluster kernel with B mode MC (see produce_tiles_cluster), UNCOND and LEAN
// (the relaxed start barrier, no end barrier: the producer's tail instead). Named below by what they set.
#define CUDAOPT_WGMMA_CLUSTER_MODES(BM, BN, CONS, ST, SCHED, CM, EPI, UNCOND, MC, LEAN)                     \
  WgmmaEntry {                                                                                              \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kSmemBytes,                            \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kThreads, SCHED,                                          \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kRowsPerConsumer, nullptr,                                \
        hgemm_wgmma2_cluster_kernel<BM, BN, CONS, ST, SCHED, EPI, UNCOND, MC, LEAN, CM>, nullptr, CM, nullptr, \
        0, nullptr, nullptr, nullptr, nullptr, MC                                                           \
  }
// A lean cluster entry (CLUSTERL below) whose operand maps use L2 promotion PROMO (an index of kL2Promotions); with
// SWAP (session 26) its CTAs run the swapped-operand ping-pong: CLUSTERLPS.
#define CUDAOPT_WGMMA_CLUSTERLP_SW(BM, BN, CONS, ST, SCHED, CM, EPI, MC, PROMO, SWAP)                                  \
  WgmmaEntry {                                                                                                       \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 1, SWAP>::kSmemBytes,                     \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 1, SWAP>::kThreads, SCHED,                                   \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 1, SWAP>::kRowsPerConsumer, nullptr,                         \
        hgemm_wgmma2_cluster_kernel<BM, BN, CONS, ST, SCHED, EPI, true, MC, true, CM, SWAP>, nullptr, CM, nullptr, 0, \
        nullptr, nullptr, nullptr, nullptr, MC, PROMO                                                                \
  }
// A lean pair (our frame, CM = 2) at L2 promotion PROMO with a split-K kernel of its own (session 28); CLUSTERLP's
// arguments.
#define CUDAOPT_WGMMA_CLUSTERLPK(BM, BN, CONS, ST, SCHED, CM, EPI, MC, PROMO)                                      \
  WgmmaEntry {                                                                                                  \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kSmemBytes,                                \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kThreads, SCHED,                                              \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kRowsPerConsumer, nullptr,                                    \
        hgemm_wgmma2_cluster_kernel<BM, BN, CONS, ST, SCHED, EPI, true, MC, true, kClusterMax>,                 \
        hgemm_wgmma2_cluster_splitk_kernel<BM, BN, CONS, ST, SCHED, EPI, MC>, CM, nullptr, 0, nullptr,          \
        nullptr, nullptr, nullptr, MC, PROMO                                                                    \
  }
#define CUDAOPT_WGMMA_CLUSTERLP(BM, BN, CONS, ST, SCHED, CM, EPI, MC, PROMO) \
  CUDAOPT_WGMMA_CLUSTERLP_SW(BM, BN, CONS, ST, SCHED, CM, EPI, MC, PROMO, false)
#define CUDAOPT_WGMMA_CLUSTERLPS(BM, BN, CONS, ST, SCHED, CM, EPI, MC, PROMO) \
  CUDAOPT_WGMMA_CLUSTERLP_SW(BM, BN, CONS, ST, SCHED, CM, EPI, MC, PROMO, true)
// The 64-wide pair (CLUSTERE) with another B mode MC; the same with UNCOND; UNCOND and LEAN.
#define CUDAOPT_WGMMA_CLUSTERM(BM, BN, CONS, ST, SCHED, CM, EPI, MC) \
  CUDAOPT_WGMMA_CLUSTER_MODES(BM, BN, CONS, ST, SCHED, CM, EPI, false, MC, false)
#define CUDAOPT_WGMMA_CLUSTERMU(BM, BN, CONS, ST, SCHED, CM, EPI, MC) \
  CUDAOPT_WGMMA_CLUSTER_MODES(BM, BN, CONS, ST, SCHED, CM, EPI, true, MC, false)
#define CUDAOPT_WGMMA_CLUSTERL(BM, BN, CONS, ST, SCHED, CM, EPI, MC) \
  CUDAOPT_WGMMA_CLUSTER_MODES(BM, BN, CONS, ST, SCHED, CM, EPI, true, MC, true)

// A plain-only generation-2 config with the TMA producer alone (session 26: the 160-wide tiles, whose 32-column
// chunks the cp.async producer does not write).
#define CUDAOPT_WGMMA_CFG2T(BM, BN, CONS, ST, SCHED, EPI)                                        \
  WgmmaEntry {                                                                                   \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kSmemBytes,                 \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kThreads, SCHED,                               \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kRowsPerConsumer, nullptr,                     \
        hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI>, nullptr, 1                            \
  }

// The swapped-operand ping-pong (SWAP, session 26): plain only, TMA only.
#define CUDAOPT_WGMMA_CFG2S(BM, BN, CONS, ST, SCHED, EPI)                                        \
  WgmmaEntry {                                                                                   \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 1, true>::kSmemBytes, \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 1, true>::kThreads, SCHED,               \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 1, true>::kRowsPerConsumer, nullptr,     \
        hgemm_wgmma2_swap_kernel<BM, BN, CONS, ST, SCHED, EPI>, nullptr, 1                       \
  }

// The k-split ping-pong (KS, session 33), plain only, TMA only: the shared memory of its tile plus consumer 1's fp32
// partial (BM x BN floats) and 16 bytes to align it past the barriers (wgmma2_body's ks_red). SWAP: 0 or 1.
constexpr int ks_red_bytes(int bm, int bn) { return 16 + bm * bn * 4; }
#define CUDAOPT_WGMMA_CFG2K(BM, BN, CONS, ST, SCHED, EPI, SWAP)                                                    \
  WgmmaEntry {                                                                                                    \
    BM, BN, kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 1, SWAP>::kSmemBytes + ks_red_bytes(BM, BN), \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 1, SWAP>::kThreads, SCHED,                                \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 1, SWAP>::kRowsPerConsumer, nullptr,                      \
        hgemm_wgmma2_ks_kernel<BM, BN, CONS, ST, SCHED, EPI, SWAP>, nullptr, 1                                    \
  }

// A generation-2 config whose TMA producer loads B's chunks in one 3-D box where N % 64 == 0 (B3D,
// session 17); its twin's kernels (cp.async ones included) everywhere else, and for cluster split-K.
#define CUDAOPT_WGMMA_CFG2B(BM, BN, CONS, ST, SCHED, EPI)                               \
  WgmmaEntry {                                                                          \
    CUDAOPT_WGMMA_CFG2_FIELDS(BM, BN, CONS, ST, SCHED, EPI, 0),                         \
        hgemm_wgmma2_b3d_kernel<BM, BN, CONS, ST, SCHED, EPI>,                          \
        hgemm_wgmma2_splitk_b3d_kernel<BM, BN, CONS, ST, SCHED, EPI>                    \
  }

// A 64 x N ping-pong with 128-deep slots (KB = 2, session 17): where N and K are multiples of 64, its plain
// kernel loads A's two k-chunks and B's chunks each in one 3-D box (two TMA instructions per 128 of K); its
// split-K runs the 64-deep B3D kernels of the same ring depth in slots, and elsewhere the 64-deep 2-D ones.
// bk = 128 in the entry; the shared memory is the 128-deep ring's (the 64-deep kernels use half of it).
#define CUDAOPT_WGMMA_CFG2B2(BM, BN, CONS, ST, SCHED, EPI)                                        \
  WgmmaEntry {                                                                                    \
    BM, BN, 2 * kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 2>::kSmemBytes,    \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kThreads, SCHED,                                \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kRowsPerConsumer, nullptr,                      \
        hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI>,                                        \
        hgemm_wgmma2_splitk_kernel<BM, BN, CONS, ST, SCHED, EPI>, 1, nullptr, 0,                  \
        hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI, true>,                                  \
        hgemm_wgmma2_splitk_kernel<BM, BN, CONS, ST, SCHED, EPI, true>,                           \
        hgemm_wgmma2_b3d_kernel<BM, BN, CONS, ST, SCHED, EPI, 2>,                                 \
        hgemm_wgmma2_splitk_b3d_kernel<BM, BN, CONS, ST, SCHED, EPI>                              \
  }

// The UNCOND pair with 128-deep slots (session 17): kernel2_b3d holds the 128-deep cluster kernel, launched
// where K % 64 == 0; kernel2 the 64-deep one of the same slot count. bk = 128 in the entry.
#define CUDAOPT_WGMMA_CLUSTERU2(BM, BN, CONS, ST, SCHED, CM, EPI)                                 \
  WgmmaEntry {                                                                                    \
    BM, BN, 2 * kBK, CONS, ST, WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI, false, 2>::kSmemBytes,    \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kThreads, SCHED,                                \
        WgmmaTile2<BM, BN, CONS, ST, SCHED, EPI>::kRowsPerConsumer, nullptr,                      \
        hgemm_wgmma2_cluster_kernel<BM, BN, CONS, ST, SCHED, EPI, true>, nullptr, CM, nullptr, 0, \
        nullptr, nullptr, hgemm_wgmma2_cluster_deep_kernel<BM, BN, CONS, ST, SCHED, EPI>, nullptr \
  }

// The wgmma family. Order is the index the Python side mirrors (configs.py, kind="wgmma"): append only.
const WgmmaEntry kWgmmaConfigs[] = {
    CUDAOPT_WGMMA_CFG(128, 128, 2, 6),  // 0: 2 consumers of m64n128
    CUDAOPT_WGMMA_CFG(128, 256, 2, 4),  // 1: 2 consumers of m64n256 (128 accumulators/thread)
    CUDAOPT_WGMMA_CFG(256, 128, 2, 4),  // 2: 2 consumers of 2 x m64n128
    CUDAOPT_WGMMA_CFG(128, 64, 2, 8),   // 3: 2 consumers of m64n64, more tiles for mid sizes
    // Generation 2 (measured, session 6): schedule 1 = cooperative + TMA-store epilogue, 2 = ping-pong.
    CUDAOPT_WGMMA_CFG2(128, 256, 2, 3, 1),  // 4: as 1, pipelined, C staged in 64 KB
    CUDAOPT_WGMMA_CFG2(256, 128, 2, 3, 1),  // 5: as 2, pipelined, C staged in 64 KB
    CUDAOPT_WGMMA_CFG2(64, 256, 2, 4, 2),   // 6: ping-pong, each consumer one m64n256 tile
    CUDAOPT_WGMMA_CFG2(128, 128, 2, 5, 2),  // 7: ping-pong, each consumer 2 x m64n128
    CUDAOPT_WGMMA_CFG2(64, 128, 2, 8, 2),   // 8: ping-pong, small tiles for mid sizes
    // 2x1 clusters along M with B multicast (written after session 6, not yet run on a GPU).
    CUDAOPT_WGMMA_CLUSTER(128, 256, 2, 3, 1, 2),  // 9: as 4; a pair shares the 32 KB B slot
    CUDAOPT_WGMMA_CLUSTER(128, 128, 2, 5, 2, 2),  // 10: as 7; a pair shares the 16 KB B slot
    // Chunked C epilogue, one ring slot more (session 11: short-K large shapes lost 10-15% to
    // cuBLASLt, the tile-start refill of a 3-slot ring the suspect).
    CUDAOPT_WGMMA_CFG2E(128, 256, 2, 4, 1, 2),  // 11: as 4 with 4 slots, C in 2 x 8 KB per consumer
    CUDAOPT_WGMMA_CFG2E(256, 128, 2, 4, 1, 1),  // 12: as 5 with 4 slots, C in 1 x 16 KB per consumer
    CUDAOPT_WGMMA_CFG2E(128, 128, 2, 6, 2, 1),  // 13: as 7 with 6 slots, C in 1 x 16 KB per consumer
    // N = 192 tiles (session 12): 128 tiles where 256-wide ones make 96 (M = 256 or 128, N = 12288).
    CUDAOPT_WGMMA_CFG2E(128, 192, 2, 5, 1, 1),  // 14: cooperative, 2 consumers of m64n192, 5 slots
    CUDAOPT_WGMMA_CFG2E(64, 192, 2, 6, 2, 1),   // 15: ping-pong, each consumer one m64n192 tile, 6 slots
    // M = 192 tiles, three cooperative consumers (session 12, first run in session 13): the mirror of 14-15
    // for M = 12288 (64 tile rows): 128 tiles on N = 256 (192 x 128) and on N = 128 (192 x 64).
    CUDAOPT_WGMMA_CFG2E(192, 128, 3, 5, 1, 1),  // 16: 3 consumers of m64n128, 5 slots
    CUDAOPT_WGMMA_CFG2E(192, 64, 3, 6, 1, 1),   // 17: 3 consumers of m64n64, 6 slots
    // Cluster split-K twins (session 12, first run as configs in session 13; before, as mode 4):
    // bigger tiles with split-K but no fp32 partials in global memory, for the long-K shapes of about
    // a million outputs whose 64 x 128 tiles are bound by L2 operand traffic (docs/gemm.md).
    CUDAOPT_WGMMA_CFG2CS(128, 256, 2, 4, 1, 2),  // 18: as 11
    CUDAOPT_WGMMA_CFG2CS(128, 192, 2, 5, 1, 1),  // 19: as 14
    CUDAOPT_WGMMA_CFG2CS(128, 128, 2, 6, 2, 1),  // 20: as 13
    CUDAOPT_WGMMA_CFG2CS(64, 128, 2, 8, 2, 0),   // 21: as 8
    // N = 64 in generation 2 (session 13, not yet run on a GPU): split-K for the M x 64 x K shapes that
    // generation 1's 128 x 64 (3) runs on half the SMs.
    CUDAOPT_WGMMA_CFG2E(128, 64, 2, 8, 1, 1),  // 22: 2 consumers of m64n64, 8 slots, C in 1 x 8 KB each
    CUDAOPT_WGMMA_CFG2E(64, 64, 2, 8, 2, 1),   // 23: ping-pong, each consumer one m64n64 tile, 8 slots
    // Cooperative 128 x 128 (session 13, not yet run on a GPU): both consumers on a split-K block's one item.
    CUDAOPT_WGMMA_CFG2E(128, 128, 2, 6, 1, 1),  // 24: 2 consumers of m64n128, 6 slots, C in 1 x 8 KB each
    // 2x1 cluster twins of the chunked-epilogue configs (session 15): 9 and 10 (3 and 5 slots) waited on
    // their pair at every slot (Nsight: barrier stalls 2x their twins'); one slot more each. Measured:
    // bitwise equal to their twins, 0.993-0.995x their speed (the ping-pong one 0.913x).
    CUDAOPT_WGMMA_CLUSTERE(128, 256, 2, 4, 1, 2, 2),  // 25: as 11, B shared by a pair of tile rows
    CUDAOPT_WGMMA_CLUSTERE(128, 128, 2, 6, 2, 2, 1),  // 26: as 13
    CUDAOPT_WGMMA_CLUSTERE(256, 128, 2, 4, 1, 2, 1),  // 27: as 12
    // A wider ping-pong tile (session 15): cuBLASLt's fastest kernels on the grid's short-K large shapes
    // (nvjet 128x160 / 168x128 / 176x128 ping-pongs, 5 stages) ran 10-14% ahead of our 128 x 128
    // ping-pong (13). 192 accumulators a thread, 4 slots of 40 KB. Measured: 0.970x cuBLASLt where 13
    // read 0.901x (10 large shapes); tensor pipe 80.9% against 69.7% at 16384x12288x256.
    CUDAOPT_WGMMA_CFG2P(128, 192, 2, 4, 2, 1),  // 28: ping-pong, each consumer 2 x m64n192, no split-K
    CUDAOPT_WGMMA_CFG2P(192, 128, 2, 4, 2, 1),  // 29: its mirror, each consumer 3 x m64n128 (12288 = 64 x 192)
    // The same two with a fifth slot, paid for by one staging chunk the consumers share (session 15, not
    // yet run on a GPU): cuBLASLt's fastest short-K kernels (128x160, 176x128 ping-pongs) run 5 stages;
    // 64-row staging chunks bought the slot too, but their serial stores cost more (measured, reverted).
    CUDAOPT_WGMMA_CFG2PS(128, 192, 2, 5, 2, 1),  // 30
    CUDAOPT_WGMMA_CFG2PS(192, 128, 2, 5, 2, 1),  // 31
    // Cluster split-K twin of the cooperative 128 x 128 (24; session 16): the long-K shapes of about a
    // million outputs, where one 64 x 128 tile a block leaves one consumer warpgroup issuing (tensor pipe
    // 72% busy, cuBLAS's kernel 88-89.5%): 128 x 128 tiles, both consumers, K split over a cluster.
    // Measured 0.859x of the table on 12 of them, faster on none (retired; docs/gemm.md, session 16).
    CUDAOPT_WGMMA_CFG2CS(128, 128, 2, 6, 1, 1),  // 32: as 24
    // The 128 x 192 ping-pong (28) with two staging buffers a consumer (session 16): with one, each
    // 64-column chunk waits until TMA has read the last before it is staged (Nsight at 16384x12288x256:
    // barrier stalls 2.70 a issue, the largest); 4 slots + 2 x 2 x 16 KB fit in 227 KB. Measured 4.7%
    // faster than 28 under Nsight's locked clocks, 0.4% slower at the card's clocks (power cap): retired.
    CUDAOPT_WGMMA_CFG2P(128, 192, 2, 4, 2, 2),  // 33: as 28
    // Cluster configs whose consumers issue their wgmmas unconditionally (UNCOND, session 16, not yet run
    // on a GPU): 40's twin (26), to see whether the 12 points it loses to its one-CTA twin come back;
    // and the 2x1 cluster twin of the 64 x 128 ping-pong (8) for the long-K shapes of about a million
    // outputs, whose tiles are short of operands (24 KB a MFLOP; a pair sharing B requests 16).
    CUDAOPT_WGMMA_CLUSTERU(128, 128, 2, 6, 2, 2, 1),  // 34: as 26
    CUDAOPT_WGMMA_CLUSTERU(64, 128, 2, 8, 2, 2, 0),   // 35: as 8, a pair sharing B
    // B3D twins of the 64-row ping-pongs (session 17; 36 kept, 37-38 retired: configs.py): a diagnostic build whose
    // producers loaded B's chunks in one 3-D box ran the 64 x 128 ping-pong (8) 2.5-4% faster at the
    // card's clocks on the long-K shapes (tensor pipe 81% against 71% under Nsight), where those tiles
    // wait on their operands; more, smaller boxes made the cluster pair 8% slower.
    CUDAOPT_WGMMA_CFG2B(64, 128, 2, 8, 2, 0),  // 36: as 8
    CUDAOPT_WGMMA_CFG2B(64, 192, 2, 6, 2, 1),  // 37: as 15
    CUDAOPT_WGMMA_CFG2B(64, 256, 2, 4, 2, 0),  // 38: as 6
    // 36 with 128-deep slots (session 17): 4 slots of 48 KB, the same 192 KB in flight, half the TMA
    // instructions, barrier waits and releases per FLOP. Measured: 1.6% faster than 36 on long-K shapes.
    CUDAOPT_WGMMA_CFG2B2(64, 128, 2, 4, 2, 0),  // 39
    // The 64 x 128 pair sharing B (35) with 39's 128-deep slots (session 17, not yet run): each CTA asks for
    // half of the bytes 39 asks for, in two TMA instructions a slot (its A box, its multicast B box).
    CUDAOPT_WGMMA_CLUSTERU2(64, 128, 2, 4, 2, 2, 0),  // 40
    // The 64 x 64 ping-pong (23) as a 2x1 pair sharing B (session 20): on the one-wave long-K shapes
    // (about 128 tiles of 64 x 64, K 1024-4096; 512x1024x4096 ran 12.5 us against cuBLASLt's 10.5) 64-wide
    // tiles read A and B from L2 N/64 + M/64 times over; cuBLASLt's fastest algorithm there is a 64 x 64
    // tile in a 2-CTA cluster, one wave. B is one 64-column chunk: each CTA multicasts half its rows.
    CUDAOPT_WGMMA_CLUSTERE(64, 64, 2, 8, 2, 2, 1),  // 41
    // Measured (session 20): correct, bitwise 23's results, 0.64x its speed; Nsight at 512x1024x4096: 27.9 us
    // against 23's 18.4 and cuBLAS's nvjet_sm90_hsh_64x64_64x13_2x1_v_bz 14.1 (L2 bytes 106 / 101 / 68 MB).
    // That nvjet kernel runs a 13-deep ring of 64 x 64 tiles: 23 with 13 slots (230,608 B of shared memory)
    // keeps more operand bytes in flight per SM on these L2-bound one-wave shapes. Measured (session 20):
    // correct, 0.947x 23's speed over those 122 shapes (paired): retired (configs.py).
    CUDAOPT_WGMMA_CFG2E(64, 64, 2, 13, 2, 1),  // 42
    // 41's B modes (session 21): 41 moved as many L2 bytes as 23 (Nsight), where cuBLAS's pair moves 0.66x.
    // 43 loads B without multicast (the pair's coupling alone, a diagnostic); 44 multicasts whole B boxes,
    // the two CTAs in turn (one 8 KB request a k-block where 41 sends two of 4 KB).
    CUDAOPT_WGMMA_CLUSTERM(64, 64, 2, 8, 2, 2, 1, 1),  // 43
    CUDAOPT_WGMMA_CLUSTERM(64, 64, 2, 8, 2, 2, 1, 2),  // 44
    // Measured (session 21): 43 as slow as 41 and 44 (0.67x 23), so the multicast is not what costs. 45 keeps the
    // cluster launch alone (diagnostic); 46-47 are 44 and 41 with 13 slots (cuBLAS's pair runs 13): if the
    // pair's ring waits on a longer round trip (remote releases), more slots hide it.
    CUDAOPT_WGMMA_CLUSTERM(64, 64, 2, 8, 2, 2, 1, 3),   // 45
    CUDAOPT_WGMMA_CLUSTERM(64, 64, 2, 13, 2, 2, 1, 2),  // 46
    CUDAOPT_WGMMA_CLUSTERE(64, 64, 2, 13, 2, 2, 1),     // 47
    // Measured (session 21): 45 as slow as 41; 23's own kernel launched in clusters of 2 as fast as 23. 48: 45
    // without the cluster barriers (its idle warps exit, as 23's do); 49: 45 without the `live` branch (UNCOND).
    CUDAOPT_WGMMA_CLUSTERM(64, 64, 2, 8, 2, 2, 1, 4),  // 48
    CUDAOPT_WGMMA_CLUSTERMU(64, 64, 2, 8, 2, 2, 1, 3),  // 49
    // Measured (session 21): 48 0.92x and 49 1.24x of 45's speed (45: 0.69x 23). The lean pair: UNCOND, a relaxed
    // start barrier, no end barrier (produce_tiles_cluster's tail), idle warps leave at once. 50: B halves
    // multicast (41's); 51: whole B boxes in turn (44's); 52: no multicast, own releases (45's; the yardstick:
    // 23's work in the lean pair's code); 53: 51 with 13 slots.
    CUDAOPT_WGMMA_CLUSTERL(64, 64, 2, 8, 2, 2, 1, 0),   // 50
    CUDAOPT_WGMMA_CLUSTERL(64, 64, 2, 8, 2, 2, 1, 2),   // 51
    CUDAOPT_WGMMA_CLUSTERL(64, 64, 2, 8, 2, 2, 1, 3),   // 52
    CUDAOPT_WGMMA_CLUSTERL(64, 64, 2, 13, 2, 2, 1, 2),  // 53
    // Measured (session 21): the lean pair ran 0.95-0.97x of 23 with or without multicast (50-52; 41: 0.67x), so
    // the cluster kernels' loss was their barriers and `live` branch. The lean twins of the large cluster configs
    // 25, 27, 26 (0.993-0.995x of their one-CTA twins 11, 12, 13 in session 15).
    CUDAOPT_WGMMA_CLUSTERL(128, 256, 2, 4, 1, 2, 2, 0),  // 54
    CUDAOPT_WGMMA_CLUSTERL(256, 128, 2, 4, 1, 2, 1, 0),  // 55
    CUDAOPT_WGMMA_CLUSTERL(128, 128, 2, 6, 2, 2, 1, 0),  // 56
    // Measured (session 21): 54 and 55 1.005x and 1.003x of 11 and 12 (geomean, 8 large shapes; 1.06x of 11 at
    // 1024x4096x16384, one wave of 128 x 256 tiles); 56 0.993x of 13. 43-53 and 56 are retired (configs.py).
    // Pairs for the skinny shapes M = 128 (session 22): cuBLAS's kernel there (Nsight at 128x12288x4096:
    // nvjet_sm90_hsh_192x64_64x6_1x2) splits the 128 rows over the two CTAs of a cluster, each 64 x 192 (in our
    // frame), and multicasts the streamed B panel: 128 CTAs where one CTA a 128 x 192 tile makes 64 (ours: 14 here,
    // 28 in configs.py, 0.80x of cuBLASLt). The lean 64-row ping-pong pairs: 57 as 15 (B halves of each of three chunks), 58 as
    // 8 and 59 as 6 (each CTA multicasts whole chunks).
    CUDAOPT_WGMMA_CLUSTERL(64, 192, 2, 6, 2, 2, 1, 0),  // 57
    CUDAOPT_WGMMA_CLUSTERL(64, 128, 2, 8, 2, 2, 0, 0),  // 58
    CUDAOPT_WGMMA_CLUSTERL(64, 256, 2, 4, 2, 2, 0, 0),  // 59
    // Their mirror for N = 128 (cuBLAS at 12288x128x8192: nvjet_sm90_hsh_64x192_64x6_2x1, 192 x 64 a CTA in our
    // frame): the pair along N (B mode 5: two horizontally adjacent tiles, each CTA multicasting half of the
    // streamed A's rows), lean, as 17, 22 and 23.
    CUDAOPT_WGMMA_CLUSTERL(192, 64, 3, 6, 1, 2, 1, 5),  // 60 (B mode 5: kPairAlongN)
    CUDAOPT_WGMMA_CLUSTERL(128, 64, 2, 8, 1, 2, 1, 5),  // 61
    CUDAOPT_WGMMA_CLUSTERL(64, 64, 2, 8, 2, 2, 1, 5),   // 62
    // Cluster split-K twins of 15, 17, 22, 23 (session 23): on the 64-wide skinny shapes these tiles make 32-64 CTAs
    // where cuBLASLt runs 128; two splits in a cluster make 128 with the one-CTA tile's L2 traffic and no partials
    // in global memory. The same kernels mode 4 launches for those configs (no new instantiation).
    CUDAOPT_WGMMA_CFG2CS(64, 192, 2, 6, 2, 1),  // 63
    CUDAOPT_WGMMA_CFG2CS(192, 64, 3, 6, 1, 1),  // 64
    CUDAOPT_WGMMA_CFG2CS(128, 64, 2, 8, 1, 1),  // 65
    CUDAOPT_WGMMA_CFG2CS(64, 64, 2, 8, 2, 1),   // 66
    // 60's pair along N for M = 16384, N = 128 (session 23, not yet run): 256 x 64 tiles make 64 pairs = 128 CTAs where
    // 192-row tiles make 172. 67: the one-CTA tile (two cooperative consumers of 128 rows, 4 slots of 40 KB, C in
    // 1 x 16 KB each), 68: its lean pair.
    CUDAOPT_WGMMA_CFG2E(256, 64, 2, 4, 1, 1),            // 67
    CUDAOPT_WGMMA_CLUSTERL(256, 64, 2, 4, 1, 2, 1, 5),   // 68
    // Clusters of four sharing the small operand of the 64-wide skinny shapes (session 24; cuBLAS at 64x12288x8192
    // runs nvjet_sm90_hsh_128x64_64x8_4x1, at 12288x64x8192 ..._64x128_64x8_1x4: 96 CTAs, 4-CTA clusters, about 20%
    // fewer L2-to-SM bytes than ours). 69: four 64 x 128 tiles along N share A (M <= 64), twin 8; 70: four 128 x 64
    // tiles along M share B (N <= 64), twin 22. Both lean.
    CUDAOPT_WGMMA_CLUSTERL(64, 128, 2, 8, 2, 4, 0, 5),   // 69
    CUDAOPT_WGMMA_CLUSTERL(128, 64, 2, 8, 1, 4, 1, 0),   // 70
    // Measured (session 24): 69-70 6-9% faster than their twins where their 24 quads make one wave (64 x 12288,
    // 12288 x 64), still 7-12% behind cuBLASLt; under Nsight their L2-to-SM read sectors are 22% above cuBLAS's, whose
    // equal one read of each operand byte per cluster. 71: 70 with whole B boxes multicast in turn (B mode 2).
    CUDAOPT_WGMMA_CLUSTERL(128, 64, 2, 8, 1, 4, 1, 2),   // 71
    CUDAOPT_WGMMA_CLUSTERL(64, 128, 2, 8, 2, 4, 0, 6),   // 72: 69 with A's whole box multicast in turn (kAlongNTurn)
    // Measured (session 24): 71-72 no faster than 69-70, the same L2 read sectors. Under Nsight at 12288x64x8192 the
    // quads read exactly cuBLAS's L2 sectors (each operand byte once per cluster) with the maps' L2 promotion at 128 B
    // or none, and 53 us against 56.5 at 256 B (cuBLAS 54-55). 73-74: 69-70 with 128 B promotion (index 3).
    CUDAOPT_WGMMA_CLUSTERLP(64, 128, 2, 8, 2, 4, 0, 5, 3),   // 73
    CUDAOPT_WGMMA_CLUSTERLP(128, 64, 2, 8, 1, 4, 1, 0, 3),   // 74
    // Measured (session 24): 73-74 3-6% faster than 69-70 on the one-wave shapes, 8-10% behind cuBLASLt there
    // (configs.RETIRED_WGMMA_IDS: 83-88). 75-76: the lean 64-row pairs 57-58 (adopted at M = 128) with 128 B promotion
    // (session 23's setting test: 57 at 128x12288x8192 53.3 -> 51.6 us).
    CUDAOPT_WGMMA_CLUSTERLP(64, 192, 2, 6, 2, 2, 1, 0, 3),   // 75
    CUDAOPT_WGMMA_CLUSTERLP(64, 128, 2, 8, 2, 2, 0, 0, 3),   // 76
    // Measured (session 24): 75-76 adopted on 7 M = 128 shapes. Session 25: the large shapes of mid K (M x N >= 2^25,
    // K 256-2048) trail cuBLASLt by 3-8% and are bound by operand panels read from L2; the large pairs 54-56 were
    // measured (session 22) at 256 B promotion, which triples a multicast operand's L2 reads. 77-79: 54-56 with
    // 128 B promotion; 80-81: lean pairs of the 128 x 192 ping-pong 28 (the table's kernel on 116 large shapes,
    // 0.985x of cuBLASLt there) and of its mirror 29, sharing the streamed panel; 82: 60 (pair along N) at 128 B.
    CUDAOPT_WGMMA_CLUSTERLP(128, 256, 2, 4, 1, 2, 2, 0, 3),  // 77
    CUDAOPT_WGMMA_CLUSTERLP(256, 128, 2, 4, 1, 2, 1, 0, 3),  // 78
    CUDAOPT_WGMMA_CLUSTERLP(128, 128, 2, 6, 2, 2, 1, 0, 3),  // 79
    CUDAOPT_WGMMA_CLUSTERLP(128, 192, 2, 4, 2, 2, 1, 0, 3),  // 80
    CUDAOPT_WGMMA_CLUSTERLP(192, 128, 2, 4, 2, 2, 1, 0, 3),  // 81
    CUDAOPT_WGMMA_CLUSTERLP(192, 64, 3, 6, 1, 2, 1, 5, 3),   // 82
    // Measured (session 25): 77-82 correct; on those shapes 0.95-0.98x the table (geomean), none faster at K <= 512,
    // 82 equal to 60 (configs.py: 93, 95, 96 retired).
    // 160-wide tiles (session 26): cuBLASLt's kernel on 82 of the 113 large shapes where it beat the table (its
    // fallback records) is nvjet_sm90_hsh_128x160_64x5_2x1, 5 stages, which Nsight showed keeping the tensor pipe
    // 99.0% busy at 16384x16384x512 where our 128 x 192 ping-pong reaches 90.7%. In our frame 128 x 160: B and C in
    // five 32-column chunks through the 64-byte swizzle (WgmmaTile2::kCols), 5 slots of 36 KB. 83: ping-pong, two
    // staging buffers of 8 KB a consumer; 84: one (the pairs' twin); 85: cooperative (80 accumulators a thread);
    // 86: the lean pair along M sharing B (each CTA multicasts 32 of each chunk's 64 rows), 87: along N sharing A.
    CUDAOPT_WGMMA_CFG2T(128, 160, 2, 5, 2, 2),                // 83
    CUDAOPT_WGMMA_CFG2T(128, 160, 2, 5, 2, 1),                // 84
    CUDAOPT_WGMMA_CFG2T(128, 160, 2, 5, 1, 2),                // 85
    CUDAOPT_WGMMA_CLUSTERLP(128, 160, 2, 5, 2, 2, 1, 0, 3),   // 86
    CUDAOPT_WGMMA_CLUSTERLP(128, 160, 2, 5, 2, 2, 1, 5, 3),   // 87
    // Measured (session 26): 83-87 correct, 0.80-0.95x the table on the 155 large shapes where it trails cuBLASLt (B
    // through the 64-byte swizzle in 32-column chunks). cuBLAS's tile in its own frame (row-major C is its column-major
    // C^T): 160 rows of our M by 128 of N, its A operand our B (two 64-column chunks, 128B swizzle, M-major) and its B
    // our A (160 rows, K-major): the swapped-operand ping-pong (SWAP), 160 accumulators a thread, C stored transposed
    // by stmatrix. 88: 5 slots, one 20 KB staging buffer a consumer; 89: 4 slots, two.
    CUDAOPT_WGMMA_CFG2S(160, 128, 2, 5, 2, 1),  // 88
    CUDAOPT_WGMMA_CFG2S(160, 128, 2, 4, 2, 2),  // 89
    // Measured (session 26): 88-89 correct, 0.952x / 0.967x the table on those 155 shapes (88 1.008x at K = 256, 89
    // 0.98x at long K; 83-87 read 0.80-0.95x). cuBLAS runs its tile in 2x1 clusters, two tiles adjacent along our N
    // sharing A's 160-row panel: 90, 88's lean pair along N (each CTA multicasts 80 of A's rows); 91, along M
    // sharing B (each CTA multicasts one of B's two chunks). 128 B L2 promotion, as the session-25 pairs.
    CUDAOPT_WGMMA_CLUSTERLPS(160, 128, 2, 5, 2, 2, 1, 5, 3),  // 90
    CUDAOPT_WGMMA_CLUSTERLPS(160, 128, 2, 5, 2, 2, 1, 0, 3),  // 91
    // Measured (session 26): 91 0.938x the table, retired. Session 27: the swapped frame's N (our M) need not be a
    // multiple of 64: 192 x 128 (the 128 x 192 ping-pong's m64n192 chains along the taller tile) and 176 x 128 (cuBLAS's
    // 176x128 ping-pong, session 15's notes), 4 slots and one staging buffer a consumer (5 slots do not fit), and each
    // one's lean pair along N sharing A's panel (96 / 88 rows multicast by each CTA).
    CUDAOPT_WGMMA_CFG2S(192, 128, 2, 4, 2, 1),                // 92
    CUDAOPT_WGMMA_CFG2S(176, 128, 2, 4, 2, 1),                // 93
    CUDAOPT_WGMMA_CLUSTERLPS(192, 128, 2, 4, 2, 2, 1, 5, 3),  // 94
    CUDAOPT_WGMMA_CLUSTERLPS(176, 128, 2, 4, 2, 2, 1, 5, 3),  // 95
    // Measured (session 27): 92-95 correct, 0.976-0.986x the table on the 155 large losers, 92-93 adopted on 9 shapes
    // (6 of M = 12288: 176 / 192 rows make 70 / 64 tile rows). 144 x 128 for the shapes whose 128 x 192 tiles leave a two-thirds
    // last wave (8192 x 4096: 10.67 waves; 57 x 32 tiles of 144 x 128 make 13.8): 5 slots, one staging buffer; its pair.
    CUDAOPT_WGMMA_CFG2S(144, 128, 2, 5, 2, 1),                // 96
    CUDAOPT_WGMMA_CLUSTERLPS(144, 128, 2, 5, 2, 2, 1, 5, 3),  // 97
    // Measured (session 27): 96-97 correct, 0.944x / 0.943x the table on those shapes, adopted on none.
    // 168 x 128 (cuBLAS's 168x128 ping-pong): 21 groups of 8 rows, the epilogue's last group two matrices (stmatrix .x2);
    // 4 slots (5 are 1.1 KB over); no pair along N (84 rows a CTA are not whole 8-row swizzle atoms).
    CUDAOPT_WGMMA_CFG2S(168, 128, 2, 4, 2, 1),                // 98
    // Session 28: the small long-K shapes (512x512x2048: ours 7.2 us with 64 x 128 tiles split 3 ways and a reduce,
    // cuBLASLt 6.3 us) run cuBLASLt's tile 64x32 in its frame: 32 rows of our M by 64 of N, 128 tiles on 512 x 512,
    // one wave with all of K in each tile, no split-K. In the swapped frame a 32-row tile is one m64n32 chain a
    // 64-column chunk of B: 99, 32 x 64 with 12 slots of 12 KB; 100, 32 x 128 (two chains), 8 slots; 101, 64 x 64
    // swapped (cuBLAS's 64x64 one-wave tile in its frame; our 64 x 64 ping-pong, 37, trails it by 15% there).
    CUDAOPT_WGMMA_CFG2S(32, 64, 2, 12, 2, 1),                 // 99
    CUDAOPT_WGMMA_CFG2S(32, 128, 2, 8, 2, 1),                 // 100
    CUDAOPT_WGMMA_CFG2S(64, 64, 2, 8, 2, 1),                  // 101
    // Measured (session 28): 99-101 correct; 99 adopted on 16 shapes of K 1024-2048 (1.068x the table, still 0.987x
    // cuBLASLt there), all three far behind the table's split-K at longer K. cuBLASLt runs its 64x32 tile in 1x2
    // clusters (two tiles adjacent along our M sharing B) and its one-wave 64x64 tile in 2x1 ones (along our N sharing
    // A); session 21's 64 x 64 pairs ran at 256 B L2 promotion, which session 24 found triples a multicast operand's L2
    // reads. 102 / 103: 99's lean pairs along M (each CTA multicasts 32 of B's 64 k-rows) and along N (16 of A's 32
    // rows), 128 B promotion; 104 / 105: the 64 x 64 lean pairs 50 and 62 (ids 64 and 76) at 128 B (their kernels).
    CUDAOPT_WGMMA_CLUSTERLPS(32, 64, 2, 12, 2, 2, 1, 0, 3),   // 102
    CUDAOPT_WGMMA_CLUSTERLPS(32, 64, 2, 12, 2, 2, 1, 5, 3),   // 103
    CUDAOPT_WGMMA_CLUSTERLP(64, 64, 2, 8, 2, 2, 1, 0, 3),     // 104
    CUDAOPT_WGMMA_CLUSTERLP(64, 64, 2, 8, 2, 2, 1, 5, 3),     // 105
    // Split-K over pairs (session 28): on the small long-K shapes (M x N <= 2^20, K >= 4096) the table splits K over
    // 128 x 128 (27) or 64 x 128 (22) tiles, 0.87-0.93x cuBLASLt, whose fastest there splits over 2x1 clusters. 106 /
    // 107: the lean pairs of 27 and 22 along M sharing B (the kernels of 79 / 76 for one split), 128 B promotion, with
    // a split-K kernel: the same k ranges per split as their twins' split-K, partials to the reduce kernel.
    CUDAOPT_WGMMA_CLUSTERLPK(128, 128, 2, 6, 2, 2, 1, 0, 3),  // 106
    CUDAOPT_WGMMA_CLUSTERLPK(64, 128, 2, 8, 2, 2, 0, 0, 3),   // 107
    // Measured (session 29): 99 (32 x 64) beats the table's 64 x 64 (23, id 37) by 7% on 80 small shapes of K <= 2048
    // (64x64x64 to 4096x64x512), where a call is latency: half the rows a tile, twice the CTAs, a shorter chain each.
    // 108: the next step down, 16 x 64 (one m64n16 chain, a 2 KB A box: two 8-row swizzle atoms), 16 slots of 10 KB.
    CUDAOPT_WGMMA_CFG2S(16, 64, 2, 16, 2, 1),                 // 108
    // Session 33: Nsight at 512x1024x4096 (one wave of 64 x 64 tiles, K = 4096): cuBLASLt's 64x64 kernel keeps about 9
    // warps resident a CTA and its tensor pipe 57% busy (14.0 us); ours keep 5 (one consumer issues, the ping-pong's
    // other has no second tile) at 42% (18.4 us), and fewer L2 requests did not make ours faster (118: 9% fewer than
    // 37, 6% slower). 109-111: the k-split twins of 37 (64 x 64), 115 (64 x 64 swapped) and 113 (32 x 64 swapped):
    // both consumers on each tile, alternating k-blocks, so two wgmma chains a tile run side by side.
    CUDAOPT_WGMMA_CFG2K(64, 64, 2, 8, 2, 1, 0),               // 109
    CUDAOPT_WGMMA_CFG2K(64, 64, 2, 8, 2, 1, 1),               // 110
    CUDAOPT_WGMMA_CFG2K(32, 64, 2, 12, 2, 1, 1),              // 111
};
constexpr int kNumWgmmaConfigs = sizeof(kWgmmaConfigs) / sizeof(kWgmmaConfigs[0]);

// B^T twins (session 39): a generation-2 plain kernel and its BT instantiation (hgemm_wgmma2_bt_kernel: the same tile,
// schedule, slots and epilogue; B read K-major from the caller's B^T), found by the config's kernel2, so every config
// whose plain kernel is listed has a twin. The one-CTA configs the shipped table runs most without split-K (their
// indices in kWgmmaConfigs), in our frame and the swapped one (hgemm_wgmma2_bt_kernel's SWAP); the others (cluster,
// SHEPI, k-split, 160-wide, B3D-only) take B^T through torch.matmul.
// A config with a split-K kernel gets a split-K twin too (splitk_bt), whose partials the reduce kernel sums.
struct BtTwin {
  Kernel2Fn nn, bt;
  Kernel2SplitFn splitk_bt = nullptr;
};
#define CUDAOPT_BT_TWIN(BM, BN, CONS, ST, SCHED, EPI) \
  BtTwin { hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI>, hgemm_wgmma2_bt_kernel<BM, BN, CONS, ST, SCHED, EPI> }
#define CUDAOPT_BT_TWIN_SK(BM, BN, CONS, ST, SCHED, EPI)                                                                \
  BtTwin {                                                                                                             \
    hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI>, hgemm_wgmma2_bt_kernel<BM, BN, CONS, ST, SCHED, EPI>,           \
        hgemm_wgmma2_splitk_bt_kernel<BM, BN, CONS, ST, SCHED, EPI>                                                   \
  }
#define CUDAOPT_BT_SWAP_TWIN(BM, BN, CONS, ST, SCHED, EPI)        \
  BtTwin {                                                          \
    hgemm_wgmma2_swap_kernel<BM, BN, CONS, ST, SCHED, EPI>,         \
        hgemm_wgmma2_bt_kernel<BM, BN, CONS, ST, SCHED, EPI, true>  \
  }
const BtTwin kBtTwins[] = {
    CUDAOPT_BT_TWIN_SK(128, 256, 2, 3, 1, 0),  // 4
    CUDAOPT_BT_TWIN_SK(256, 128, 2, 3, 1, 0),  // 5
    CUDAOPT_BT_TWIN_SK(64, 256, 2, 4, 2, 0),   // 6
    CUDAOPT_BT_TWIN_SK(128, 128, 2, 5, 2, 0),  // 7
    CUDAOPT_BT_TWIN_SK(64, 128, 2, 8, 2, 0),   // 8 (and 36, its B3D twin's plain kernel)
    CUDAOPT_BT_TWIN_SK(128, 256, 2, 4, 1, 2),  // 11
    CUDAOPT_BT_TWIN_SK(256, 128, 2, 4, 1, 1),  // 12
    CUDAOPT_BT_TWIN_SK(128, 128, 2, 6, 2, 1),  // 13
    CUDAOPT_BT_TWIN_SK(128, 192, 2, 5, 1, 1),  // 14
    CUDAOPT_BT_TWIN_SK(64, 64, 2, 8, 2, 1),    // 23
    CUDAOPT_BT_TWIN_SK(128, 128, 2, 6, 1, 1),  // 24
    CUDAOPT_BT_TWIN(128, 192, 2, 4, 2, 1),  // 28 (no split-K kernel: 192 accumulators a thread)
    CUDAOPT_BT_TWIN(192, 128, 2, 4, 2, 1),  // 29
    // the swapped ping-pongs the table runs (cuBLAS's frame: BM rows of our M are the wgmma's N)
    CUDAOPT_BT_SWAP_TWIN(176, 128, 2, 4, 2, 1),  // 93
    CUDAOPT_BT_SWAP_TWIN(192, 128, 2, 4, 2, 1),  // 92
    CUDAOPT_BT_SWAP_TWIN(168, 128, 2, 4, 2, 1),  // 98
    CUDAOPT_BT_SWAP_TWIN(32, 64, 2, 12, 2, 1),   // 99
    CUDAOPT_BT_SWAP_TWIN(32, 128, 2, 8, 2, 1),   // 100
    CUDAOPT_BT_SWAP_TWIN(64, 64, 2, 8, 2, 1),    // 101
    CUDAOPT_BT_SWAP_TWIN(16, 64, 2, 16, 2, 1),   // 108
};
#undef CUDAOPT_BT_TWIN
#undef CUDAOPT_BT_TWIN_SK
#undef CUDAOPT_BT_SWAP_TWIN
const BtTwin* bt_twins(const WgmmaEntry& c) {
  if (c.cluster > 1 || c.kernel2 == nullptr) return nullptr;
  for (const BtTwin& t : kBtTwins)
    if (t.nn == c.kernel2) return &t;
  return nullptr;
}
Kernel2Fn bt_twin(const WgmmaEntry& c) {
  const BtTwin* t = bt_twins(c);
  return t ? t->bt : nullptr;
}
// (only where the config's own split-K kernel exists: its max_splits then holds for the twin too)
Kernel2SplitFn bt_splitk_twin(const WgmmaEntry& c) {
  const BtTwin* t = bt_twins(c);
  return t && c.kernel2_splitk ? t->splitk_bt : nullptr;
}

// Stream-K twins (SK, session 47) of the cooperative configs the shipped tables run from 1e11 FLOP (and the
// 256 x 128 the wave probe measured), found by the config's kernel2 as the B^T twins are.
struct SkTwin {
  Kernel2Fn nn;
  Kernel2SplitFn sk;
};
#define CUDAOPT_SK_TWIN(BM, BN, CONS, ST, SCHED, EPI) \
  SkTwin { hgemm_wgmma2_kernel<BM, BN, CONS, ST, SCHED, EPI>, hgemm_wgmma2_streamk_kernel<BM, BN, CONS, ST, SCHED, EPI> }
const SkTwin kSkTwins[] = {
    CUDAOPT_SK_TWIN(128, 256, 2, 3, 1, 0),  // 4
    CUDAOPT_SK_TWIN(128, 256, 2, 4, 1, 2),  // 11
    CUDAOPT_SK_TWIN(256, 128, 2, 4, 1, 1),  // 12
    CUDAOPT_SK_TWIN(128, 192, 2, 5, 1, 1),  // 14
};
#undef CUDAOPT_SK_TWIN
Kernel2SplitFn sk_twin(const WgmmaEntry& c) {
  if (c.cluster > 1 || c.kernel2 == nullptr) return nullptr;
  for (const SkTwin& t : kSkTwins)
    if (t.nn == c.kernel2) return t.sk;
  return nullptr;
}
// The stream-K workspace's counter block (one int per tail tile and consumer, at most sms x consumers), rounded to
// 256 bytes so the fp32 slots after it stay aligned.
size_t sk_counter_bytes(const WgmmaEntry& c, int sms) {
  return ((size_t)sms * c.consumers * sizeof(int) + 255) / 256 * 256;
}

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiledFn encode_tiled() {
  static const EncodeTiledFn fn = []() -> EncodeTiledFn {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      return nullptr;
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// A row-major fp16 matrix (rows x cols, leading dimension ld) read in boxes of box_rows x 64; with
// chunks > 0 (B3D) a 3-D map of it, 64 columns x rows x cols/64 chunks (cols % 64 == 0), read in boxes
// of 64 x box_rows x chunks: a box lands chunk-major, as `chunks` 2-D boxes side by side would.
// The L2 promotion every tensor map is encoded with (session 23, a measurement setting; cudaopt_wgmma_set_l2_promotion):
// 0 (default) 256 B, 1 none, 2 64 B, 3 128 B. Part of a map's key, so maps of several settings live side by side
// (a CUDA graph keeps the maps its launches were captured with).
std::atomic<int> g_l2_promo{0};
constexpr CUtensorMapL2promotion kL2Promotions[4] = {CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                                     CU_TENSOR_MAP_L2_PROMOTION_L2_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B};

// box_cols (session 26): 64 (128-byte box rows, 128B swizzle), or 32 (64-byte rows, 64B swizzle) for the B and C
// maps of a tile whose width 64 does not divide (WgmmaTile2::kCols).
struct MapKey {
  const void* ptr;
  int rows, cols, ld, box_rows;
  int chunks = 0;
  int promo = g_l2_promo.load();
  int box_cols = 64;
  bool operator==(const MapKey& o) const {
    return ptr == o.ptr && rows == o.rows && cols == o.cols && ld == o.ld && box_rows == o.box_rows &&
           chunks == o.chunks && promo == o.promo && box_cols == o.box_cols;
  }
};

struct MapSlot {
  MapKey key;
  bool used;
  CUtensorMap map;
};

// Tensor maps are pure functions of their key, so a cached map is never stale; the cache only
// saves the encode call (a benchmark rotates over a few input sets, a model reuses its weights).
constexpr int kMapCacheSlots = 128;
MapSlot g_map_cache[kMapCacheSlots];
std::mutex g_map_mutex;

// An operand map's key for config c: its own L2 promotion where it has one (WgmmaEntry::l2_promo).
MapKey operand_key(const WgmmaEntry& c, MapKey key) {
  if (c.l2_promo >= 0) key.promo = c.l2_promo;
  return key;
}
// The column width of config c's B and C boxes (WgmmaTile2::kCols): 64, or 32 where 64 does not divide its tile.
int chunk_cols(const WgmmaEntry& c) { return c.bn % 64 == 0 ? 64 : 32; }
MapKey with_cols(MapKey key, int cols) {
  key.box_cols = cols;
  return key;
}

int tensor_map(const MapKey& key, CUtensorMap* out) {
  EncodeTiledFn encode = encode_tiled();
  if (encode == nullptr) return -2;
  size_t h = reinterpret_cast<size_t>(key.ptr) >> 8;
  h = h * 31 + (size_t)key.rows;
  h = h * 31 + (size_t)key.cols;
  h = h * 31 + (size_t)key.box_rows;
  h = h * 31 + (size_t)key.chunks;
  h = h * 31 + (size_t)key.promo;
  h = h * 31 + (size_t)key.box_cols;
  std::lock_guard<std::mutex> lock(g_map_mutex);
  MapSlot& slot = g_map_cache[h % kMapCacheSlots];
  if (!(slot.used && slot.key == key)) {
    const bool b3d = key.chunks > 0;
    if ((b3d && (key.cols % 64 != 0 || key.box_cols != 64)) || (key.box_cols != 64 && key.box_cols != 32)) return -3;
    const cuuint64_t dims[3] = {b3d ? 64u : (cuuint64_t)key.cols, (cuuint64_t)key.rows, (cuuint64_t)key.cols / 64};
    const cuuint64_t strides[2] = {(cuuint64_t)key.ld * sizeof(half), 64 * sizeof(half)};
    const cuuint32_t box[3] = {(cuuint32_t)key.box_cols, (cuuint32_t)key.box_rows, (cuuint32_t)key.chunks};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    slot.used = false;
    const CUresult r = encode(&slot.map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, b3d ? 3 : 2,
                              const_cast<void*>(key.ptr), dims, strides, box, elem_strides,
                              CU_TENSOR_MAP_INTERLEAVE_NONE,
                              key.box_cols == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                              kL2Promotions[key.promo & 3], CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return -3;
    slot.key = key;
    slot.used = true;
  }
  *out = slot.map;
  return 0;
}

int sm_count() {
  static int cached[64] = {0};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return 0;
  if (dev < 64 && cached[dev] > 0) return cached[dev];
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
  if (dev < 64) cached[dev] = n;
  return n;
}

// Persistent blocks launched: one per work item (tiles x splits), at most one per SM. Cluster
// configs: 2 CTAs per pair unit (ceil(tiles_m / 2) x tiles_n units), at most max_clusters clusters
// (sms / 2 here; the launcher also caps it by cudaOccupancyMaxActiveClusters).
int launch_grid(const WgmmaEntry& c, int M, int N, int splits, int sms, int max_clusters = 1 << 30) {
  if (c.cluster > 1) {  // pairs of tile rows, or of tile columns for the pair along N
    const long long tiles_m = (M + c.bm - 1) / c.bm, tiles_n = (N + c.bn - 1) / c.bn;
    const long long units = cluster_units(tiles_m, tiles_n, c.cluster, c.b_mc) * splits;
    long long clusters = sms / c.cluster;
    if (max_clusters < clusters) clusters = max_clusters;
    if (clusters < 1) clusters = 1;
    if (units < clusters) clusters = units;
    return (int)(clusters * c.cluster);
  }
  const long long items = (long long)((M + c.bm - 1) / c.bm) * ((N + c.bn - 1) / c.bn) * splits;
  return items < sms ? (int)items : sms;
}

// Most clusters of config `c` that can be resident at once on the current device
// (cudaOccupancyMaxActiveClusters: GPCs may not hold an even number of 1-CTA-per-SM blocks), cached
// per device and config. Returns > 0, or a negated cudaError_t.
// (The cache held configs 0-15 until session 21; every cluster config past 15 queried the driver on each call.)
int max_active_clusters(int config, const WgmmaEntry& c) {
  static int cached[8][kNumWgmmaConfigs] = {{0}};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return -(int)cudaErrorInvalidDevice;
  if (dev < 8 && cached[dev][config] > 0) return cached[dev][config];
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = c.cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.gridDim = dim3(c.cluster, 1, 1);
  cfg.blockDim = dim3(c.threads, 1, 1);
  cfg.dynamicSmemBytes = c.smem_bytes;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int n = 0;
  const cudaError_t e =
      cudaOccupancyMaxActiveClusters(&n, reinterpret_cast<const void*>(c.kernel2), &cfg);
  if (e != cudaSuccess) return -(int)e;
  if (n <= 0) return -(int)cudaErrorLaunchOutOfResources;
  if (dev < 8) cached[dev][config] = n;
  return n;
}

std::atomic<bool> g_pdl{true};
// Diagnostics (session 21; cudaopt_wgmma_set_debug_cluster): launch the one-CTA kernels (splits == 1) in clusters
// of this many CTAs (> 1; their code takes no notice), and the cluster scheduling policy preference of every
// cluster launch (0: the default, 1: spread, 2: load balancing).
std::atomic<int> g_debug_cluster{1};
std::atomic<int> g_debug_cluster_policy{0};
std::atomic<int> g_splitk_fixup{0};  // see cudaopt_wgmma_set_splitk_fixup
std::atomic<bool> g_reduce_chunked{true};  // see cudaopt_wgmma_set_reduce_chunked
std::atomic<int> g_reduce_fixed{1};       // see cudaopt_wgmma_set_reduce_fixed
std::atomic<int> g_cpasync{0};             // see cudaopt_wgmma_set_cpasync
constexpr int kSkMaxSplits = 8;
std::atomic<int> g_sk_max_splits{kSkMaxSplits};  // see cudaopt_wgmma_set_streamk_max_splits

// The cp.async producer's operands for a generation-2 launch without clusters, or none (TMA): mode 1
// where A's or B's row stride is not a multiple of 64 halves (128 bytes), mode 2 always, 0 never.
CpSrc cpasync_src(const WgmmaEntry& c, const void* A, const void* B, int lda, int ldb) {
  const int mode = g_cpasync.load();
  const bool use = c.kernel2_cp != nullptr && c.schedule != 0 && c.cluster == 1 && c.stages >= 3 &&
                   (mode == 2 || (mode == 1 && (lda % 64 != 0 || ldb % 64 != 0)));
  return use ? CpSrc{static_cast<const half*>(A), static_cast<const half*>(B), lda, ldb} : CpSrc{};
}

// One kernel launch on `s` through cudaLaunchKernelExC: programmatic stream serialisation when g_pdl
// (the kernels wait for their predecessor on the device: pdl_wait_then_release), and a cluster
// dimension along x when cluster > 1; cooperative (every block resident at once, or an error) when
// asked. Returns 0 or a cudaError_t.
int launch(const void* fn, int grid, int threads, int smem, cudaStream_t s, void** args, int cluster,
           bool cooperative = false) {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[4];
  int n = 0;
  if (cooperative) {
    attr[n].id = cudaLaunchAttributeCooperative;
    attr[n].val.cooperative = 1;
    ++n;
  }
  if (cluster > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster;
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
    if (const int policy = g_debug_cluster_policy.load()) {
      attr[n].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
      attr[n].val.clusterSchedulingPolicyPreference =
          policy == 1 ? cudaClusterSchedulingPolicySpread : cudaClusterSchedulingPolicyLoadBalancing;
      ++n;
    }
  }
  if (g_pdl.load()) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cfg.gridDim = dim3(grid, 1, 1);
  cfg.blockDim = dim3(threads, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = n;
  cudaError_t e = cudaLaunchKernelExC(&cfg, fn, args);
  if (e != cudaSuccess && g_pdl.load()) {  // a stream or driver that refuses PDL: launch plainly
    (void)cudaGetLastError();
    cfg.numAttrs = n - 1;  // the PDL attribute is the last one
    e = cudaLaunchKernelExC(&cfg, fn, args);
  }
  return e != cudaSuccess ? (int)e : (int)cudaGetLastError();
}

}  // namespace

extern "C" {

int cudaopt_wgmma_num_configs() { return kNumWgmmaConfigs; }

// Writes bm, bn, bk, consumers, stages, smem_bytes, schedule into out[7]. Returns 0, or 1 for a
// bad id. Host-only: callable without a GPU.
int cudaopt_wgmma_config_info(int config, int* out) {
  if (config < 0 || config >= kNumWgmmaConfigs) return 1;
  const WgmmaEntry& c = kWgmmaConfigs[config];
  const int v[7] = {c.bm, c.bn, c.bk, c.consumers, c.stages, c.smem_bytes, c.schedule};
  for (int i = 0; i < 7; ++i) out[i] = v[i];
  return 0;
}

// Most K splits config `config` accepts: 1 for generation 1 (no split-K kernel), kWgmmaMaxSplits
// for generation 2, kCsplitMaxSplits for its cluster split-K twins; 0 for a bad id. Host-only.
int cudaopt_wgmma_max_splits(int config) {
  if (config < 0 || config >= kNumWgmmaConfigs) return 0;
  if (kWgmmaConfigs[config].csplit_only) return kCsplitMaxSplits;
  return kWgmmaConfigs[config].kernel2_splitk ? kWgmmaMaxSplits : 1;
}

// CTAs per thread-block cluster of config `config` (1, or 2 for the 2x1 cluster kernels); 0 for a
// bad id. Host-only.
int cudaopt_wgmma_cluster_size(int config) {
  if (config < 0 || config >= kNumWgmmaConfigs) return 0;
  return kWgmmaConfigs[config].cluster;
}
// How config `config`'s 64-wide pair brings B in (WgmmaEntry::b_mc; 0 elsewhere and for a bad id).
int cudaopt_wgmma_b_mc(int config) {
  if (config < 0 || config >= kNumWgmmaConfigs) return 0;
  return kWgmmaConfigs[config].b_mc;
}
// Config `config`'s own L2 promotion of its operand maps (WgmmaEntry::l2_promo: -1, the library setting; -2 for a
// bad id).
int cudaopt_wgmma_l2_promo(int config) {
  if (config < 0 || config >= kNumWgmmaConfigs) return -2;
  return kWgmmaConfigs[config].l2_promo;
}
// 1 where config `config` loads B's chunks through one 3-D box a k-block where N % 64 == 0 (B3D).
int cudaopt_wgmma_b3d(int config) {
  if (config < 0 || config >= kNumWgmmaConfigs) return 0;
  return kWgmmaConfigs[config].kernel2_b3d != nullptr ? 1 : 0;
}

// How many clusters of config `config` the launcher may keep resident (cudaOccupancyMaxActiveClusters,
// the cap on its grid): > 0, 0 for a bad id or a one-CTA config, or a negated cudaError_t. Needs the
// device and cudaopt_wgmma_init (for the shared-memory limit). A probe: session 7 measured the cluster
// kernels 1.4-3.2x slower than their twins, and a small cap here would explain it.
int cudaopt_wgmma_max_active_clusters(int config) {
  if (config < 0 || config >= kNumWgmmaConfigs || kWgmmaConfigs[config].cluster < 2) return 0;
  return max_active_clusters(config, kWgmmaConfigs[config]);
}

// The cluster schedule (cluster_tile, the function the cluster kernels call) for clusters of cm (2 or 4) CTAs:
// tile row and column of CTA `rank` for unit `unit` into out[0..1], and out[2] = 1 if the tile exists (0: an
// idle rank of the last group of rows when tiles_m % cm != 0). Returns 0, or -1 for arguments out of range.
// Host-only: the CPU tests check the coverage with it.
int cudaopt_wgmma_cluster_tile(int unit, int rank, int tiles_m, int tiles_n, int cm, int* out) {
  if ((cm != kClusterMax && cm != kClusterQuad) || tiles_m < 1 || tiles_n < 1 || rank < 0 || rank >= cm ||
      unit < 0 || (long long)unit >= (long long)((tiles_m + cm - 1) / cm) * tiles_n)
    return -1;
  int tm, tn;
  cluster_tile(unit, rank, tiles_m, tiles_n, tm, tn, cm);
  out[0] = tm;
  out[1] = tn;
  out[2] = tm < tiles_m ? 1 : 0;
  return 0;
}

// Split-K workspace layout: the fixup's tile counters first (ints, zero between calls: every call
// leaves them as it found them), then the fp32 partials [splits][M][N]. The counter block covers
// every config's (tile, consumer) pairs (BM, BN >= 64, c consumers only on tiles of 64c+ rows, so
// c x ceil(M / BM) <= ceil(M / 64) + 2), rounded up to 256 bytes so the partials stay aligned.
size_t cudaopt_wgmma_counter_bytes(int M, int N) {
  if (M <= 0 || N <= 0) return 0;
  const size_t n = ((size_t)(M + 63) / 64 + 2) * ((size_t)(N + 63) / 64 + 1);
  return (n * sizeof(int) + 255) / 256 * 256;
}
// Bytes of workspace cudaopt_hgemm_wgmma_splitk needs: the counters and splits x M x N floats (0 for
// one split).
size_t cudaopt_wgmma_workspace_bytes(int M, int N, int splits) {
  return (splits > 1 && M > 0 && N > 0)
             ? cudaopt_wgmma_counter_bytes(M, N) + (size_t)splits * M * N * sizeof(float)
             : 0;
}

// The split-K decomposition the kernels use (work_item, the same function the device code calls):
// writes tile, split, first k-block, k-block count of item w into out[4]. Returns 0, or -1 where the
// launcher would refuse the arguments (splits outside 1..kWgmmaMaxSplits or above k_tiles, w out of
// range). Host-only: the CPU tests check the coverage with it.
int cudaopt_wgmma_work_item(int w, int num_tiles, int splits, int k_tiles, int* out) {
  if (num_tiles < 1 || splits < 1 || splits > kWgmmaMaxSplits || k_tiles < splits || w < 0 ||
      (long long)w >= (long long)num_tiles * splits)
    return -1;
  const WorkItem it = work_item(w, num_tiles, splits, k_tiles);
  out[0] = it.tile;
  out[1] = it.split;
  out[2] = it.kb_first;
  out[3] = it.kb_count;
  return 0;
}

// Stream-K tail (sk_item, host mirror for the CPU tests): CTA b's item j of a launch of `grid` CTAs over num_tiles
// tiles of k_tiles k-blocks, the tail cut `splits` ways, into out[4] (tile, first k-block, k-block count, split or
// -1). Returns the CTA's item count, or -1 for arguments no launch makes (grid outside 1..num_tiles, splits not
// what sk_tail_splits allows, b or j out of range).
int cudaopt_wgmma_sk_item(int b, int j, int grid, int num_tiles, int k_tiles, int splits, int* out) {
  if (grid < 1 || grid > num_tiles || k_tiles < 1 || b < 0 || b >= grid || splits < 1 ||
      splits > sk_tail_splits(grid, num_tiles, k_tiles, kWgmmaMaxSplits))
    return -1;
  const int items = sk_items(b, grid, num_tiles, splits);
  if (j < 0 || j >= items) return -1;
  const SkSeg sg = sk_item(b, j, grid, num_tiles, k_tiles, splits);
  out[0] = sg.tile;
  out[1] = sg.kb_first;
  out[2] = sg.kb_count;
  out[3] = sg.split;
  return items;
}
// The tail's split count a stream-K launch takes (sk_tail_splits), for the CPU tests and the benchmarks.
int cudaopt_wgmma_sk_tail_splits(int grid, int num_tiles, int k_tiles, int most) {
  if (grid < 1 || num_tiles < 1 || k_tiles < 1 || most < 1) return -1;
  return sk_tail_splits(grid, num_tiles, k_tiles, most);
}
// The most splits a stream-K launch cuts a tail tile into (default kSkMaxSplits; 1..kWgmmaMaxSplits, else the
// default). A measurement setting: the last split reads every split's partial, so more splits cost more fixup.
void cudaopt_wgmma_set_streamk_max_splits(int most) {
  g_sk_max_splits.store(most >= 1 && most <= kWgmmaMaxSplits ? most : kSkMaxSplits);
}
// 1 where `config` has a stream-K twin (cudaopt_hgemm_wgmma_streamk runs it), else 0.
int cudaopt_wgmma_has_streamk(int config) {
  return config >= 0 && config < kNumWgmmaConfigs && sk_twin(kWgmmaConfigs[config]) ? 1 : 0;
}
// Workspace of a stream-K launch on a device of `sms` SMs: the fixup counters (one per tail tile and consumer, at
// most sms x consumers; zero between calls, as split-K's), rounded to 256 bytes, then a BM x BN fp32 partial slot
// per CTA (a CTA has at most one tail item).
// 0 for a config without a twin.
size_t cudaopt_wgmma_streamk_workspace_bytes(int config, int sms) {
  if (!cudaopt_wgmma_has_streamk(config) || sms < 1) return 0;
  const WgmmaEntry& c = kWgmmaConfigs[config];
  return sk_counter_bytes(c, sms) + (size_t)sms * c.bm * c.bn * sizeof(float);
}

// Grid the launcher uses for (config, M, N, splits) on a device with `sms` SMs; -1 for a bad id.
// Host-only.
int cudaopt_wgmma_grid(int config, int M, int N, int splits, int sms) {
  if (config < 0 || config >= kNumWgmmaConfigs || M <= 0 || N <= 0 || splits < 1 || sms < 1) return -1;
  return launch_grid(kWgmmaConfigs[config], M, N, splits, sms);
}

// Raises the kernels' dynamic shared-memory limit and resolves cuTensorMapEncodeTiled. Call once
// per process and device before use. Returns 0, -2 (no driver entry point) or a cudaError_t.
int cudaopt_wgmma_init() {
  if (encode_tiled() == nullptr) return -2;
  for (int i = 0; i < kNumWgmmaConfigs; ++i) {
    const WgmmaEntry& c = kWgmmaConfigs[i];
    cudaError_t e =
        c.kernel ? cudaFuncSetAttribute(c.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        c.smem_bytes)
                 : cudaFuncSetAttribute(c.kernel2, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        c.smem_bytes);
    if (e == cudaSuccess && c.kernel2_splitk)
      e = cudaFuncSetAttribute(c.kernel2_splitk, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               c.smem_bytes);
    if (e == cudaSuccess && c.kernel2_csplit)
      e = cudaFuncSetAttribute(c.kernel2_csplit, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               c.smem_bytes);
    if (e == cudaSuccess && c.kernel2_cp)
      e = cudaFuncSetAttribute(c.kernel2_cp, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem_bytes);
    if (e == cudaSuccess && c.kernel2_splitk_cp)
      e = cudaFuncSetAttribute(c.kernel2_splitk_cp, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem_bytes);
    if (e == cudaSuccess && c.kernel2_b3d)
      e = cudaFuncSetAttribute(c.kernel2_b3d, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem_bytes);
    if (e == cudaSuccess && c.kernel2_splitk_b3d)
      e = cudaFuncSetAttribute(c.kernel2_splitk_b3d, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem_bytes);
    if (e == cudaSuccess && bt_twin(c))
      e = cudaFuncSetAttribute(bt_twin(c), cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem_bytes);
    if (e == cudaSuccess && bt_splitk_twin(c))
      e = cudaFuncSetAttribute(bt_splitk_twin(c), cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem_bytes);
    if (e == cudaSuccess && sk_twin(c))
      e = cudaFuncSetAttribute(sk_twin(c), cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem_bytes);
    if (e != cudaSuccess) return (int)e;
  }
  return 0;
}

// Whether launches are programmatic (PDL, see pdl_wait_then_release); on unless switched off, for
// example to measure what it buys (cudaopt_wgmma_set_pdl). Host-only.
void cudaopt_wgmma_set_pdl(int on) { g_pdl.store(on != 0); }
// Split-K reduce: 1 (default since session 12, when the grid was tuned and checked with it) =
// splitk_reduce_chunked_kernel<2> (splitk_reduce.cuh: chunks of 8 splits, loads in flight together),
// 0 = the session-6 serial kernel. Host-only.
void cudaopt_wgmma_set_reduce_chunked(int on) { g_reduce_chunked.store(on != 0); }
// Split-K reduce for 2..8 splits while the chunked reduce is on: 1 (default since session 13, whose grid
// was tuned with it), 2 or 4 = splitk_reduce_fixed_kernel (splitk_reduce.cuh: the split count a template
// argument, that many lanes a thread), bitwise the chunked kernel's sums; 0 = the chunked kernel.
// Anything else is 0. With the chunked reduce off, the serial kernel runs whatever this says. Host-only.
void cudaopt_wgmma_set_reduce_fixed(int lanes) { g_reduce_fixed.store(lanes == 1 || lanes == 2 || lanes == 4 ? lanes : 0); }
// Split-K: 0 (default) = the partials, then a reduce kernel, which the shipped table was tuned with;
// 1 = the ticket fixup (one kernel, tile counters in the workspace; the last split of a tile sums
// them all: measured slower, docs/gemm.md); 2 = the spread fixup where the launch is one wave
// (tiles x splits <= #SMs), the reduce kernel elsewhere (see wgmma2_body). Host-only.
// 3 = the spread fixup launched without the cooperative attribute (a measurement only: co-residency
// then rests on grid <= #SMs at one block per SM and on no other kernel holding SMs while it waits).
// 4 = cluster split-K (hgemm_wgmma2_csplit_kernel: the splits of a tile in one cluster, summed through
// distributed shared memory, no fp32 partials in global memory) for 2..kCsplitMaxSplits splits; more
// splits take the reduce kernel.
// The producer that fills the ring: 0 (default) = TMA everywhere; 1 = the cp.async producer where A's
// or B's rows are not 128-byte aligned (lda or ldb not a multiple of 64), TMA elsewhere; 2 = cp.async
// on every generation-2 launch without clusters (a test and measurement setting). Cluster split-K and
// the 2x1 cluster kernels always use TMA. Host-only; a launch reads it when it is made.
void cudaopt_wgmma_set_cpasync(int mode) { g_cpasync.store(mode == 1 || mode == 2 ? mode : 0); }
// The L2 promotion of the tensor maps launches encode from now on (see g_l2_promo): 0-3, anything else 0.
void cudaopt_wgmma_set_l2_promotion(int mode) { g_l2_promo.store(mode >= 0 && mode <= 3 ? mode : 0); }
// 1 where a launch of `config` with these leading dimensions would take the cp.async producer now.
int cudaopt_wgmma_uses_cpasync(int config, int lda, int ldb) {
  if (config < 0 || config >= kNumWgmmaConfigs) return -1;
  static const half probe = half();  // any non-null address: only the decision is asked for
  return cpasync_src(kWgmmaConfigs[config], &probe, &probe, lda, ldb).a != nullptr ? 1 : 0;
}
void cudaopt_wgmma_set_debug_cluster(int cluster, int policy) {
  g_debug_cluster.store(cluster >= 1 && cluster <= 8 ? cluster : 1);
  g_debug_cluster_policy.store(policy >= 0 && policy <= 2 ? policy : 0);
}
void cudaopt_wgmma_set_splitk_fixup(int mode) { g_splitk_fixup.store(mode >= 1 && mode <= 4 ? mode : 0); }
int cudaopt_wgmma_pdl() { return g_pdl.load() ? 1 : 0; }

// The reduce kernel after a split-K kernel: partials[splits][M][N] summed in split order into C (fp16), on s.
static int launch_splitk_reduce(float* partials, half* c_half, int M, int N, int ldc, int splits, int sms,
                                cudaStream_t s) {
  const size_t octs = (size_t)M * N / 8;
  void* rargs[] = {&partials, &c_half, &M, &N, &ldc, &splits};
  // blocks of a reduce whose block covers `per_block` lanes of 8 columns: enough for C, at most 8 a SM
  const auto reduce_grid = [&](size_t per_block) {
    const size_t want = (octs + per_block - 1) / per_block, most = (size_t)sms * 8;
    return (int)(want < most ? want : most);
  };
  const int fixed = g_reduce_chunked.load() ? reduce_fixed_lanes(splits, g_reduce_fixed.load()) : 0;
  if (const void* fn = fixed ? reduce_fixed_kernel<2>(splits, fixed) : nullptr)
    return launch(fn, reduce_grid((size_t)256 * fixed), 256, 0, s, rargs, 1);
  if (!g_reduce_chunked.load() || splits > 8 * kReduceChunk)  // a block holds at most 8 chunks
    return launch(reinterpret_cast<const void*>(wgmma_splitk_reduce_serial_kernel), reduce_grid(256), 256, 0, s,
                  rargs, 1);
  int lanes = 0;
  const int threads = reduce_block(splits, &lanes);
  return launch(reinterpret_cast<const void*>(splitk_reduce_chunked_kernel<2>), reduce_grid(lanes), threads, 0, s,
                rargs, 1);
}

// C = A @ B on `stream` with wgmma config `config`, K split `splits` ways. Returns 0, a cudaError_t
// value, -1 for bad arguments (unknown config, sizes or leading dimensions not multiples of 8,
// pointers not 16-byte aligned; splits < 1, above the config's max_splits (1 for generation 1) or
// above the number of 64-wide k-blocks; with splits > 1 a null, misaligned or too small
// workspace), -2 when the driver's cuTensorMapEncodeTiled is unavailable, -3 when encoding failed.
// splits == 1 is the plain kernel (workspace unused). splits > 1: the split-K kernel writes fp32
// partials into workspace[splits][M][N] (cudaopt_wgmma_workspace_bytes), then a reduce kernel sums
// them into C, both on `stream`; no allocation, no synchronisation.
int cudaopt_hgemm_wgmma_splitk(const void* A, const void* B, void* C, int M, int N, int K, int lda,
                               int ldb, int ldc, int config, int splits, void* workspace,
                               size_t workspace_bytes, void* stream) {
  if (config < 0 || config >= kNumWgmmaConfigs || M <= 0 || N <= 0 || K <= 0) return -1;
  if (K % 8 || N % 8 || lda % 8 || ldb % 8 || ldc % 8 || lda < K || ldb < N || ldc < N) return -1;
  if ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) |
       reinterpret_cast<uintptr_t>(C)) & 15)
    return -1;
  if (splits < 1 || splits > cudaopt_wgmma_max_splits(config) || splits > (K + kBK - 1) / kBK)
    return -1;
  if (splits > 1 && (workspace == nullptr || (reinterpret_cast<uintptr_t>(workspace) & 15) ||
                     workspace_bytes < cudaopt_wgmma_workspace_bytes(M, N, splits)))
    return -1;
  const WgmmaEntry& c = kWgmmaConfigs[config];
  CUtensorMap map_a, map_b;
  // The pair along N (B mode 5) multicasts half of A's rows per CTA (a quad a quarter): short A boxes (6: whole ones).
  int st = tensor_map(operand_key(c, MapKey{A, M, K, lda, c.cluster > 1 && c.b_mc == kPairAlongN ? c.bm / c.cluster : c.bm}),
                      &map_a);
  if (st != 0) return st;
  // A 2x1 cluster config with an odd number of 64-wide B chunks multicasts half of each chunk's rows per CTA
  // (kHalfRows): half-high boxes.
  const int cols = chunk_cols(c);
  const int b_box_rows = c.cluster > 1 && (c.bn / cols) % c.cluster != 0 && c.b_mc == 0 ? kBK / c.cluster : kBK;
  st = tensor_map(operand_key(c, with_cols(MapKey{B, K, N, ldb, b_box_rows}, cols)), &map_b);
  if (st != 0) return st;
  const int sms = sm_count();
  if (sms <= 0) return (int)cudaErrorInvalidDevice;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  half* c_half = static_cast<half*>(C);
  // (splits > 1: the fp32 partials, after the fixup counters at the start of the workspace)
  float* partials =
      splits > 1 ? reinterpret_cast<float*>(static_cast<char*>(workspace) + cudaopt_wgmma_counter_bytes(M, N)) : nullptr;
  if (c.cluster > 1) {  // cluster kernel (splits > 1: a pair with a split-K kernel, then the reduce kernel)
    const int most = max_active_clusters(config, c);
    if (most < 0) return -most;
    if (splits > 1) {  // (the map of C is an unused argument of the split-K kernel, as in the one-CTA path below)
      int* no_counters = nullptr;
      int no_spread = 0;
      CpSrc none{};
      void* args[] = {&map_a, &map_b, &map_a, &partials, &no_counters, &M, &N, &K, &splits, &c_half, &ldc,
                      &no_spread, &none};
      st = launch(reinterpret_cast<const void*>(c.kernel2_splitk), launch_grid(c, M, N, splits, sms, most), c.threads,
                  c.smem_bytes, s, args, c.cluster);
      if (st != 0) return st;
      return launch_splitk_reduce(partials, c_half, M, N, ldc, splits, sms, s);
    }
    CUtensorMap map_c;
    st = tensor_map(with_cols(MapKey{C, M, N, ldc, c.c_box_rows}, cols), &map_c);
    if (st != 0) return st;
    const int grid = launch_grid(c, M, N, 1, sms, most);
    CpSrc none{};
    // 128-deep slots (kernel2_b3d of a cluster entry) where A's 3-D map takes whole k-chunks
    const bool deep = c.kernel2_b3d != nullptr && K % 64 == 0;
    CUtensorMap map_a3, map_b2;
    if (deep) {
      st = tensor_map(operand_key(c, MapKey{A, M, K, lda, c.bm, 2}), &map_a3);
      if (st != 0) return st;
      st = tensor_map(operand_key(c, MapKey{B, K, N, ldb, 2 * kBK}), &map_b2);
      if (st != 0) return st;
    }
    void* args[] = {deep ? &map_a3 : &map_a, deep ? &map_b2 : &map_b, &map_c, &M, &N, &K, &none};
    return launch(reinterpret_cast<const void*>(deep ? c.kernel2_b3d : c.kernel2), grid, c.threads, c.smem_bytes,
                  s, args, c.cluster);
  }
  const int grid = launch_grid(c, M, N, splits, sms);
  if (c.kernel) {
    void* args[] = {&map_a, &map_b, &c_half, &M, &N, &K, &ldc};
    return launch(reinterpret_cast<const void*>(c.kernel), grid, c.threads, c.smem_bytes, s, args, 1);
  }
  // B3D: B's chunks through one 3-D box a k-block, where every chunk is whole (N % 64 == 0) and the TMA
  // producer runs (not cp.async); the twin's 2-D kernels elsewhere.
  // A config with 128-deep slots (bk = 128) runs them in its plain kernel only, where K % 64 == 0 too
  // (A's 3-D map takes whole k-chunks); its split-K and everything else run 64-deep.
  const bool deep = c.bk == 2 * kBK && splits == 1;
  CpSrc src = cpasync_src(c, A, B, lda, ldb);  // (the cluster split-K kernel ignores it)
  const bool b3d = c.kernel2_b3d != nullptr && N % 64 == 0 && src.a == nullptr && (!deep || K % 64 == 0);
  CUtensorMap map_b3, map_a3;
  if (b3d) {
    st = tensor_map(operand_key(c, MapKey{B, K, N, ldb, deep ? 2 * kBK : kBK, c.bn / 64}), &map_b3);
    if (st != 0) return st;
    if (deep) {
      st = tensor_map(operand_key(c, MapKey{A, M, K, lda, c.bm, 2}), &map_a3);
      if (st != 0) return st;
    }
  }
  if (splits == 1) {
    CUtensorMap map_c;  // stored through: same encoding as a load map (cols columns x c_box_rows)
    st = tensor_map(with_cols(MapKey{C, M, N, ldc, c.c_box_rows}, cols), &map_c);
    if (st != 0) return st;
    void* args[] = {b3d && deep ? &map_a3 : &map_a, b3d ? &map_b3 : &map_b, &map_c, &M, &N, &K, &src};
    const int dc = g_debug_cluster.load();
    return launch(reinterpret_cast<const void*>(src.a ? c.kernel2_cp : b3d ? c.kernel2_b3d : c.kernel2), grid,
                  c.threads, c.smem_bytes, s, args, dc > 1 && grid % dc == 0 ? dc : 1);
  }
  const int mode = g_splitk_fixup.load();
  const long long items = (long long)((M + c.bm - 1) / c.bm) * ((N + c.bn - 1) / c.bn) * splits;
  // One argument list for the split-K and cluster split-K kernels; a launch reads the values these
  // variables hold when it is made.
  int spread = 0;
  int* counters = nullptr;
  CUtensorMap map_c = map_a;  // unused without the ticket fixup (the reduce kernel or c_half write C)
  const Kernel2SplitFn splitk_fn = src.a && c.kernel2_splitk_cp ? c.kernel2_splitk_cp
                                   : b3d                         ? c.kernel2_splitk_b3d
                                                                 : c.kernel2_splitk;
  if (src.a && !c.kernel2_splitk_cp) src = CpSrc{};  // no cp.async split-K instantiation: TMA
  void* args[] = {&map_a, &map_b, &map_c, &partials, &counters, &M, &N, &K, &splits, &c_half, &ldc, &spread,
                  &src};
  if ((mode == 4 || c.csplit_only) && splits <= kCsplitMaxSplits && c.kernel2_csplit) {
    // one block per item, a cluster per tile; where the launch is refused, the paths below (mode 4)
    // or the error (a cluster split-K config: the tuner times what its label says)
    const int e = items <= (long long)INT_MAX
                      ? launch(reinterpret_cast<const void*>(c.kernel2_csplit), (int)items, c.threads,
                               c.smem_bytes, s, args, splits)
                      : (int)cudaErrorInvalidConfiguration;
    if (e == 0 || c.csplit_only) return e;
    (void)cudaGetLastError();
  }
  if (b3d) args[1] = &map_b3;  // (cluster split-K, above, reads B through the 2-D map)
  // The spread fixup needs every item to be its block's only one (grid == items) and all blocks
  // resident together (a cooperative launch; where that is refused, the reduce kernel path).
  spread = (mode == 2 || mode == 3) && (long long)grid == items;
  if (mode == 1 || spread) counters = static_cast<int*>(workspace);
  if (mode == 1) {
    st = tensor_map(with_cols(MapKey{C, M, N, ldc, c.c_box_rows}, cols), &map_c);
    if (st != 0) return st;
  }
  st = launch(reinterpret_cast<const void*>(splitk_fn), grid, c.threads, c.smem_bytes, s, args, 1,
              spread != 0 && mode == 2);
  if (st != 0 && spread) {  // a cooperative launch refused (e.g. fewer SMs in this context): reduce
    (void)cudaGetLastError();
    spread = 0;
    counters = nullptr;
    st = launch(reinterpret_cast<const void*>(splitk_fn), grid, c.threads, c.smem_bytes, s, args, 1);
  }
  if (st != 0 || counters != nullptr) return st;
  return launch_splitk_reduce(partials, c_half, M, N, ldc, splits, sms, s);
}

// What config's B^T twins can run: 0 none, 1 the plain kernel (cudaopt_hgemm_wgmma_bt with splits 1), 3 split-K too.
int cudaopt_wgmma_has_bt(int config) {
  if (config < 0 || config >= kNumWgmmaConfigs) return 0;
  const WgmmaEntry& c = kWgmmaConfigs[config];
  return (bt_twin(c) ? 1 : 0) | (bt_splitk_twin(c) ? 2 : 0);
}

// C = A @ B with B given as its transpose (session 39): Bt is N x K row-major with leading dimension ldbt (the TN
// layout; a PyTorch b.t() of a contiguous N x K weight), run by config's B^T twin, K split `splits` ways (splits > 1:
// the split-K twin's fp32 partials in workspace, as cudaopt_hgemm_wgmma_splitk lays them out, summed by the reduce
// kernel). Returns as cudaopt_hgemm_wgmma_splitk; -1 also where the config has no such twin (cudaopt_wgmma_has_bt).
int cudaopt_hgemm_wgmma_bt(const void* A, const void* Bt, void* C, int M, int N, int K, int lda, int ldbt, int ldc,
                           int config, int splits, void* workspace, size_t workspace_bytes, void* stream) {
  if (config < 0 || config >= kNumWgmmaConfigs || M <= 0 || N <= 0 || K <= 0) return -1;
  if (K % 8 || N % 8 || lda % 8 || ldbt % 8 || ldc % 8 || lda < K || ldbt < K || ldc < N) return -1;
  if ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(Bt) | reinterpret_cast<uintptr_t>(C)) & 15)
    return -1;
  const WgmmaEntry& c = kWgmmaConfigs[config];
  const Kernel2Fn fn = bt_twin(c);
  const Kernel2SplitFn splitk_fn = bt_splitk_twin(c);
  if (fn == nullptr || splits < 1 || (splits > 1 && splitk_fn == nullptr)) return -1;
  if (splits > cudaopt_wgmma_max_splits(config) || splits > (K + kBK - 1) / kBK) return -1;
  if (splits > 1 && (workspace == nullptr || (reinterpret_cast<uintptr_t>(workspace) & 15) ||
                     workspace_bytes < cudaopt_wgmma_workspace_bytes(M, N, splits)))
    return -1;
  CUtensorMap map_a, map_b, map_c;
  int st = tensor_map(operand_key(c, MapKey{A, M, K, lda, c.bm}), &map_a);
  if (st != 0) return st;
  st = tensor_map(operand_key(c, MapKey{Bt, N, K, ldbt, c.bn}), &map_b);  // boxes of 64 columns (of K) x BN rows
  if (st != 0) return st;
  const int sms = sm_count();
  if (sms <= 0) return (int)cudaErrorInvalidDevice;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  CpSrc none{};
  if (splits == 1) {
    st = tensor_map(with_cols(MapKey{C, M, N, ldc, c.c_box_rows}, chunk_cols(c)), &map_c);
    if (st != 0) return st;
    void* args[] = {&map_a, &map_b, &map_c, &M, &N, &K, &none};
    return launch(reinterpret_cast<const void*>(fn), launch_grid(c, M, N, 1, sms), c.threads, c.smem_bytes, s, args,
                  1);
  }
  float* partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + cudaopt_wgmma_counter_bytes(M, N));
  half* c_half = static_cast<half*>(C);
  int* no_counters = nullptr;
  int no_spread = 0;
  void* args[] = {&map_a, &map_b, &map_a, &partials, &no_counters, &M, &N, &K, &splits, &c_half, &ldc, &no_spread,
                  &none};  // (the map of C is an unused argument of the split-K kernel without the ticket fixup)
  st = launch(reinterpret_cast<const void*>(splitk_fn), launch_grid(c, M, N, splits, sms), c.threads, c.smem_bytes, s,
              args, 1);
  if (st != 0) return st;
  return launch_splitk_reduce(partials, c_half, M, N, ldc, splits, sms, s);
}

// C = A @ B through config's stream-K twin (sk_item): the plain kernel's tiles and maps, the last partial wave's
// tiles split along K over the idle CTAs (sk_tail_splits, at most cudaopt_wgmma_set_streamk_max_splits), the
// splits summed through `workspace` (at least
// cudaopt_wgmma_streamk_workspace_bytes(config, #SMs), 16-byte aligned, its counters zero: calls leave them so).
// One launch, no allocation. Returns as cudaopt_hgemm_wgmma_splitk; -1 also for a config without a twin.
int cudaopt_hgemm_wgmma_streamk(const void* A, const void* B, void* C, int M, int N, int K, int lda, int ldb, int ldc,
                                int config, void* workspace, size_t workspace_bytes, void* stream) {
  if (!cudaopt_wgmma_has_streamk(config) || M <= 0 || N <= 0 || K <= 0) return -1;
  if (K % 8 || N % 8 || lda % 8 || ldb % 8 || ldc % 8 || lda < K || ldb < N || ldc < N) return -1;
  if ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C)) & 15)
    return -1;
  const int sms = sm_count();
  if (sms <= 0) return (int)cudaErrorInvalidDevice;
  if (workspace == nullptr || (reinterpret_cast<uintptr_t>(workspace) & 15) ||
      workspace_bytes < cudaopt_wgmma_streamk_workspace_bytes(config, sms))
    return -1;
  const WgmmaEntry& c = kWgmmaConfigs[config];
  CUtensorMap map_a, map_b, map_c;
  int st = tensor_map(operand_key(c, MapKey{A, M, K, lda, c.bm}), &map_a);
  if (st != 0) return st;
  st = tensor_map(operand_key(c, with_cols(MapKey{B, K, N, ldb, kBK}, chunk_cols(c))), &map_b);
  if (st != 0) return st;
  st = tensor_map(with_cols(MapKey{C, M, N, ldc, c.c_box_rows}, chunk_cols(c)), &map_c);
  if (st != 0) return st;
  int* counters = static_cast<int*>(workspace);
  float* partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + sk_counter_bytes(c, sms));
  int unused = 0;
  half* no_c = nullptr;
  CpSrc none{};
  const int grid = launch_grid(c, M, N, 1, sms);
  int splits = sk_tail_splits(grid, ((M + c.bm - 1) / c.bm) * ((N + c.bn - 1) / c.bn), (K + kBK - 1) / kBK,
                              g_sk_max_splits.load());
  void* args[] = {&map_a, &map_b, &map_c, &partials, &counters, &M, &N, &K, &splits, &no_c, &unused, &unused, &none};
  return launch(reinterpret_cast<const void*>(sk_twin(c)), grid, c.threads, c.smem_bytes, cudaStream_t(stream), args,
                1);
}

// C = A @ B without split-K: the entry point of existing callers (= cudaopt_hgemm_wgmma_splitk with
// splits 1). Returns as above.
int cudaopt_hgemm_wgmma(const void* A, const void* B, void* C, int M, int N, int K, int lda, int ldb,
                        int ldc, int config, void* stream) {
  return cudaopt_hgemm_wgmma_splitk(A, B, C, M, N, K, lda, ldb, ldc, config, 1, nullptr, 0, stream);
}

}  // extern "C"
