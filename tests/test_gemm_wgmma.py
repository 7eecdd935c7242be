"""CPU tests of the Hopper (wgmma) path of the HGEMM family: registry, mirror, routing, compilation.

The kernels themselves only run on an H200 (tests/gpu/test_gemm_gpu.py); here we check that they
are registered, that the Python mirror matches the CUDA source, that the dispatcher does not pick
them unless the tuned table says so, and that the sources compile for sm_90a to SASS with HGMMA
and UTMALDG instructions and no register spills.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import cudaopt.gemm as g
from cudaopt.gemm import dispatch
from cudaopt.gemm.configs import (
    KERNEL_CONFIGS,
    MMA_CONFIGS,
    WGMMA_CONFIGS,
    Choice,
    candidate_choices,
)

CSRC = Path(g.__file__).parent / "csrc"


def test_registry_has_the_wgmma_kind_after_the_mma_family():
    assert len(MMA_CONFIGS) == 14 and len(WGMMA_CONFIGS) >= 2
    assert [c.id for c in KERNEL_CONFIGS] == list(range(len(KERNEL_CONFIGS)))
    assert all(c.kind == "mma" for c in KERNEL_CONFIGS[:14])  # ids in the shipped table keep their meaning
    assert [c.index for c in WGMMA_CONFIGS] == list(range(len(WGMMA_CONFIGS)))
    for c in WGMMA_CONFIGS:
        assert c.bk == 64 and c.consumers in (1, 2) and c.threads == 128 * (c.consumers + 1)
        assert c.rows_per_consumer % 64 == 0 and c.bn in (64, 128, 256) and c.bm <= 256
        assert (c.rows_per_consumer // 64) * c.bn // 2 <= 128  # accumulators per consumer thread
        assert c.smem_bytes <= 227 * 1024 and c.max_splits == 1
        assert c.label.startswith("wgmma") and Choice("ours", c.id, 1).label() == c.label


def test_python_mirror_matches_the_wgmma_source():
    src = (CSRC / "hgemm_wgmma.cu").read_text()
    rows = [(int(a), int(b), int(c), int(d), int(e or 0)) for a, b, c, d, e in
            re.findall(r"CUDAOPT_WGMMA_CFG2?\((\d+), (\d+), (\d+), (\d+)(?:, (\d+))?\)", src)]
    assert rows == [(c.bm, c.bn, c.consumers, c.stages, c.schedule) for c in WGMMA_CONFIGS]


def test_wgmma_candidates_never_split_k():
    cands = candidate_choices(4096, 4096, 4096) + candidate_choices(64, 128, 16384)
    wg = [c for c in cands if KERNEL_CONFIGS[c.config].kind == "wgmma"]
    assert wg and all(c.splits == 1 for c in wg)


def test_kinds_switch_limits_the_tuners_candidates(monkeypatch):
    monkeypatch.setenv("CUDAOPT_GEMM_KINDS", "mma")
    assert all(KERNEL_CONFIGS[c.config].kind == "mma" for c in candidate_choices(4096, 4096, 4096))
    monkeypatch.setenv("CUDAOPT_GEMM_KINDS", "wgmma")
    assert all(KERNEL_CONFIGS[c.config].kind == "wgmma" for c in candidate_choices(4096, 4096, 4096))


def test_dispatcher_prefers_wgmma_only_when_the_table_says_so():
    for shape in [(16384, 16384, 16384), (4096, 4096, 4096), (1024, 1024, 1024), (64, 64, 16384)]:
        assert KERNEL_CONFIGS[dispatch.heuristic_choice(*shape).config].kind == "mma"
        assert KERNEL_CONFIGS[dispatch.choose(*shape, table={}).config].kind == "mma"
    wg = WGMMA_CONFIGS[0]
    table = {(4096, 4096, 4096): Choice("ours", wg.id, 1)}
    assert dispatch.choose(4096, 4096, 4096, table) == Choice("ours", wg.id, 1)
    shipped = dispatch.load_table(None)  # no measured wgmma entry is shipped yet
    assert all(KERNEL_CONFIGS[c.config].kind == "mma" for c in shipped.values())


def test_launch_refuses_split_k_for_wgmma(monkeypatch):
    from cudaopt.gemm import _lib

    class NoLib:  # the check happens before any library call
        def __getattr__(self, name):
            raise AssertionError(f"library touched: {name}")

    monkeypatch.setattr(_lib, "wgmma_kernels", NoLib)
    with pytest.raises(_lib.GemmError, match="does not split K"):
        _lib.launch_ours(0, 0, 0, 256, 256, 256, WGMMA_CONFIGS[0].id, 2, 0, 0, 0)


def _cuobjdump() -> str | None:
    found = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if found:
        return found
    nvcc = shutil.which("nvcc")
    cand = Path(nvcc).resolve().parent / "cuobjdump" if nvcc else None
    return str(cand) if cand and cand.is_file() else None


@pytest.mark.timeout(120)
def test_kernel_sources_compile_for_sm90a(tmp_path):
    """Both kernel sources build into one library for sm_90a; the wgmma kernels show no spills and
    no ignored setmaxnreg (C7508) or serialised-wgmma warnings; SASS holds HGMMA and UTMALDG when a
    cuobjdump is available."""
    from cudaopt.gemm import build

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not on PATH: CUDA sources not compiled (the CI machine has nvcc)")
    lib = tmp_path / "libhgemm.so"
    srcs = [str(CSRC / name) for name in build.KERNEL_SOURCES]
    proc = subprocess.run([nvcc, *build.ARCH_FLAGS, *build.COMMON_FLAGS, "-Xptxas", "-v", *srcs, "-o", str(lib)],
                          capture_output=True, text=True, timeout=110, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    wgmma_funcs = re.findall(r"Function properties for (\S*hgemm_wgmma2?_kernel\S*)\n\s*(.*)", out)
    assert len(wgmma_funcs) == len(WGMMA_CONFIGS), out[-3000:]
    for name, props in wgmma_funcs:
        assert "0 bytes spill stores, 0 bytes spill loads" in props, (name, props)
    assert "C7508" not in out and "serializ" not in out.lower(), out[-3000:]
    tool = _cuobjdump()
    if tool is None:
        return  # compiled; SASS not inspected (no cuobjdump next to nvcc)
    sass = subprocess.run([tool, "--dump-sass", str(lib)], capture_output=True, text=True, timeout=60, check=False).stdout
    assert "HGMMA.64x" in sass and ".tnspB" in sass and "UTMALDG.2D" in sass
    assert "USETMAXREG" in sass
    # Generation 2: TMA-store epilogue, one wgmma group kept in flight, ping-pong turn barriers.
    gen2 = [c for c in WGMMA_CONFIGS if c.schedule != 0]
    if gen2:
        assert "UTMASTG.2D" in sass and "FENCE.VIEW.ASYNC.S" in sass
        assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" in sass
    if any(c.schedule == 2 for c in gen2):
        assert "BAR.ARV" in sass


# ---- generation 2 (schedules 1 and 2): host-side logic ------------------------------------------

GEN2 = [c for c in WGMMA_CONFIGS if c.schedule != 0]


def test_generation_2_is_appended_and_generation_1_unchanged():
    gen1 = [(c.id, c.bm, c.bn, c.consumers, c.stages, c.schedule, c.label, c.smem_bytes)
            for c in WGMMA_CONFIGS if c.schedule == 0]
    assert gen1 == [
        (14, 128, 128, 2, 6, 0, "wgmma128x128x64_c2_s6", 197728),
        (15, 128, 256, 2, 4, 0, "wgmma128x256x64_c2_s4", 197696),
        (16, 256, 128, 2, 4, 0, "wgmma256x128x64_c2_s4", 197696),
        (17, 128, 64, 2, 8, 0, "wgmma128x64x64_c2_s8", 197760),
    ]
    assert GEN2 and min(c.id for c in GEN2) > max(g[0] for g in gen1)
    labels = [c.label for c in KERNEL_CONFIGS]
    assert len(set(labels)) == len(labels)  # the tuner keys candidates by label


def test_generation_2_shared_memory_and_staging():
    for c in GEN2:
        slots = c.stages * (c.bm + c.bn) * 64 * 2
        assert c.epilogue_bytes == c.consumers * c.rows_per_consumer * c.bn * 2
        assert c.smem_bytes == 1024 + slots + c.epilogue_bytes + 16 * c.stages <= 227 * 1024
        assert c.rows_per_consumer * 128 % 1024 == 0  # 128B-swizzled staging chunks stay aligned
        assert c.stages >= 3  # wait_group 1 holds two slots; a third lets TMA run ahead
    pp = next(c for c in GEN2 if c.schedule == 2 and (c.bm, c.bn) == (64, 256))
    assert pp.rows_per_consumer == 64 and pp.epilogue_bytes == 2 * 64 * 256 * 2
    co = next(c for c in GEN2 if c.schedule == 1 and (c.bm, c.bn) == (256, 128))
    assert co.rows_per_consumer == 128 and co.epilogue_bytes == 256 * 128 * 2


@pytest.mark.parametrize("shape", [(8, 8, 8), (72, 200, 40), (16384, 2048, 256), (16384, 12288, 1024),
                                   (8192, 16384, 4096), (1024, 64, 2048)])
def test_generation_2_grid_and_tiles_per_consumer(shape):
    m, n, _ = shape
    for c in GEN2:
        tiles = -(-m // c.bm) * -(-n // c.bn)
        assert c.tiles(m, n) == tiles and c.grid(m, n) == min(132, tiles)
        per_block = -(-tiles // c.grid(m, n))
        # ping-pong: consumer 0 takes the block's tiles 0, 2, ...; consumer 1 tiles 1, 3, ...
        want = -(-per_block // 2) if c.schedule == 2 else per_block
        assert c.tiles_per_consumer(m, n) == want
    pp = next(c for c in GEN2 if c.schedule == 2 and (c.bm, c.bn) == (64, 256))
    if shape == (16384, 2048, 256):  # 2048 tiles on 132 blocks: 16 per block, 8 per consumer
        assert (pp.tiles(m, n), pp.grid(m, n), pp.tiles_per_consumer(m, n)) == (2048, 132, 8)


def test_wgmma_id_filter_limits_the_tuners_candidates(monkeypatch):
    from cudaopt.gemm.configs import enabled_wgmma_configs

    monkeypatch.delenv("CUDAOPT_GEMM_WGMMA_IDS", raising=False)
    all_wg = {c.config for c in candidate_choices(8192, 8192, 4096) if KERNEL_CONFIGS[c.config].kind == "wgmma"}
    assert {c.id for c in GEN2} <= all_wg and enabled_wgmma_configs() == WGMMA_CONFIGS
    keep = f"{WGMMA_CONFIGS[0].id},{GEN2[-1].id}"
    monkeypatch.setenv("CUDAOPT_GEMM_WGMMA_IDS", keep)
    got = {c.config for c in candidate_choices(8192, 8192, 4096) if KERNEL_CONFIGS[c.config].kind == "wgmma"}
    assert got == {WGMMA_CONFIGS[0].id, GEN2[-1].id}
    assert [c.id for c in enabled_wgmma_configs()] == sorted(got)
    assert any(KERNEL_CONFIGS[c.config].kind == "mma" for c in candidate_choices(8192, 8192, 4096))
    monkeypatch.setenv("CUDAOPT_GEMM_WGMMA_IDS", "")  # none passed the smoke test
    assert all(KERNEL_CONFIGS[c.config].kind == "mma" for c in candidate_choices(8192, 8192, 4096))


@pytest.fixture(scope="module")
def kernel_lib(tmp_path_factory):
    """The kernel library, built once for the host-code tests below (loading it needs no GPU)."""
    import ctypes

    from cudaopt.gemm import build

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    result = build.build(out_dir=tmp_path_factory.mktemp("hgemm"), with_blas=False, force=True)
    try:
        return ctypes.CDLL(str(result.kernel_lib))
    except OSError as err:
        pytest.skip(f"library built but not loadable here (no CUDA runtime): {err}")


@pytest.mark.timeout(120)
def test_compiled_config_table_matches_the_mirror_without_a_gpu(kernel_lib):
    """cudaopt_wgmma_config_info is host code: the library's own table (smem bytes computed by the
    C++ templates, schedule) is compared with configs.py here, as _lib does at load time on a GPU."""
    import ctypes

    assert kernel_lib.cudaopt_wgmma_num_configs() == len(WGMMA_CONFIGS)
    buf = (ctypes.c_int * 7)()
    for c in WGMMA_CONFIGS:
        assert kernel_lib.cudaopt_wgmma_config_info(c.index, buf) == 0
        assert tuple(buf) == (c.bm, c.bn, c.bk, c.consumers, c.stages, c.smem_bytes, c.schedule), c.label
    assert kernel_lib.cudaopt_wgmma_config_info(len(WGMMA_CONFIGS), buf) == 1


# ---- generation 2: host-side argument checks of the compiled launcher (no GPU needed) -----------


@pytest.mark.timeout(120)
def test_wgmma_launcher_refuses_what_tma_cannot_address(kernel_lib):
    """cudaopt_hgemm_wgmma rejects (-1), before any CUDA call, what a tensor map cannot describe:
    leading dimensions whose byte stride is not a multiple of 16 (C's included, which generation 2
    stores through TMA), base pointers not 16-byte aligned, ld < the row length, K or N % 8 != 0,
    bad config ids. The GPU-free checks run on fake device addresses."""
    import ctypes

    f = kernel_lib.cudaopt_hgemm_wgmma
    f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 7 + [ctypes.c_void_p]
    f.restype = ctypes.c_int
    a, b, c = 0x7F0000000000, 0x7F0000100000, 0x7F0000200000
    m, n, k = 136, 200, 72
    for cfg in [c_.index for c_ in GEN2] + [0]:
        bad = [
            (a, b, c, m, n, k, k, n, n + 4, cfg),      # ldc * 2 bytes not a multiple of 16
            (a, b, c + 8, m, n, k, k, n, n, cfg),      # C 8-byte aligned only
            (a + 2, b, c, m, n, k, k, n, n, cfg),      # A misaligned
            (a, b, c, m, n, k, k, n, n - 8, cfg),      # ldc < N
            (a, b, c, m, n, k, k - 8, n, n, cfg),      # lda < K
            (a, b, c, m, n + 4, k, k, n + 8, n + 8, cfg),  # N % 8
            (a, b, c, m, n, k + 4, k + 8, n, n, cfg),  # K % 8
            (a, b, c, 0, n, k, k, n, n, cfg),          # empty M
        ]
        for args in bad:
            assert f(*args, None) == -1, (cfg, args)
    for cfg in (-1, len(WGMMA_CONFIGS)):
        assert f(a, b, c, m, n, k, k, n, n, cfg, None) == -1


# ---- generation 2: a CPU model of the kernel's synchronisation protocol -------------------------
#
# A hand transcription of hgemm_wgmma2_kernel's producer and consumer loops (the parts that touch the
# mbarriers, wgmma groups and named barriers), run under random interleavings with asynchronous TMA
# completion and asynchronous wgmma-group completion. mbarriers follow the PTX rules: a phase
# completes when the pending arrival count and the transaction count both reach 0; try_wait.parity P
# succeeds when the current phase's parity differs from P. Checks: no deadlock; every consumer wait
# that succeeds sees the fill it expects (parity never aliases); the producer never issues a TMA
# write into a slot an uncompleted wgmma group reads; no named barrier is left half-arrived. It
# checks the protocol as written in this model, not the compiled kernel: keep both in step.


class _MBar:
    def __init__(self, count):
        self.count, self.pending, self.tx, self.phases = count, count, 0, 0

    def _maybe_complete(self):
        if self.pending == 0 and self.tx == 0:
            self.phases += 1
            self.pending = self.count

    def arrive(self, n=1, expect_tx=0):
        self.tx += expect_tx
        self.pending -= n
        assert self.pending >= 0, "more arrivals than the init count in one phase"
        self._maybe_complete()

    def complete_tx(self, nbytes):
        self.tx -= nbytes
        assert self.tx >= 0
        self._maybe_complete()

    def passed(self, parity):
        return (self.phases & 1) != parity


class _NamedBar:
    def __init__(self, threads):
        self.threads, self.arrived, self.generation = threads, 0, 0

    def arrive(self, n):
        self.arrived += n
        assert self.arrived <= self.threads, "named barrier over-arrived"
        if self.arrived == self.threads:
            self.arrived, self.generation = 0, self.generation + 1


def _simulate(tiles, k_tiles, stages, pingpong, seed):
    import random

    rng = random.Random(seed)
    slot_bytes = 1000
    full = [_MBar(1) for _ in range(stages)]
    empty = [_MBar(4 if pingpong else 8) for _ in range(stages)]
    order = {1: _NamedBar(256), 2: _NamedBar(256)}  # kBarOrder + consumer
    content = [None] * stages  # ring position whose data the slot holds
    readers = [0] * stages  # wgmma groups issued on the slot and not completed yet
    tma_queue = []  # (slot, position) issued, not landed
    groups = {0: [], 1: []}  # per consumer warpgroup: slots of its uncompleted wgmma groups (in order)
    issued = []  # (consumer, tile ordinal, kt) in issue order

    def producer():
        slot, phase = 0, 0
        for j in range(tiles):
            for kt in range(k_tiles):
                yield lambda s=slot, p=phase: empty[s].passed(p ^ 1)
                assert readers[slot] == 0, "TMA refills a slot an in-flight wgmma still reads"
                full[slot].arrive(1, expect_tx=slot_bytes)
                tma_queue.append((slot, j * k_tiles + kt))
                slot += 1
                if slot == stages:
                    slot, phase = 0, phase ^ 1

    def consumer(c):
        pos = c * k_tiles if pingpong else 0
        first, step = (c, 2) if pingpong else (0, 1)
        for j in range(first, tiles, step):
            if pingpong and j != 0:
                bar = order[1 + c]
                gen = bar.generation
                bar.arrive(128)
                yield lambda b=bar, g=gen: b.generation > g
            prev = None
            for kt in range(k_tiles):
                slot = pos % stages
                yield lambda s=slot, p=(pos // stages) & 1: full[s].passed(p)
                assert content[slot] == pos, f"parity aliased: slot {slot} holds {content[slot]}, want {pos}"
                readers[slot] += 1
                groups[c].append(slot)  # wgmma x (BK/16) ; commit_group
                issued.append((c, j, kt))
                yield lambda: len(groups[c]) <= 1  # wgmma.wait_group 1
                if kt > 0:
                    empty[prev].arrive(4)
                prev = slot
                pos += 1
            if pingpong and j + 1 < tiles:  # tile + gridDim.x < num_tiles
                order[1 + (c ^ 1)].arrive(128)
            yield lambda: not groups[c]  # wgmma.wait_group 0
            if k_tiles > 0:
                empty[prev].arrive(4)
            if pingpong:
                pos += k_tiles

    actors = [producer(), consumer(0), consumer(1)]
    waits = [lambda: True] * len(actors)
    alive = list(range(len(actors)))
    for _ in range(200000):
        ready = [i for i in alive if waits[i]()]
        async_events = []
        if tma_queue:
            async_events.append("tma")
        async_events += [f"mma{c}" for c in (0, 1) if groups[c]]
        if not ready and not async_events:
            break
        pick = rng.randrange(len(ready) + len(async_events))
        if pick >= len(ready):
            ev = async_events[pick - len(ready)]
            if ev == "tma":  # TMA loads may land in any order
                slot, p = tma_queue.pop(rng.randrange(len(tma_queue)))
                content[slot] = p
                full[slot].complete_tx(slot_bytes)
            else:  # a warpgroup's wgmma groups complete in order
                readers[groups[int(ev[-1])].pop(0)] -= 1
            continue
        i = ready[pick]
        try:
            waits[i] = next(actors[i])
        except StopIteration:
            alive.remove(i)
    assert not alive, f"deadlock: actors {alive} blocked (tiles={tiles}, k_tiles={k_tiles}, stages={stages})"
    assert not tma_queue and not groups[0] and not groups[1]
    assert all(b.arrived == 0 for b in order.values()), "a turn barrier was left half-arrived"
    if pingpong:  # every (tile, kt) issued once, by the consumer owning the tile, tiles in turn
        assert sorted((j, kt) for _, j, kt in issued) == [(j, kt) for j in range(tiles) for kt in range(k_tiles)]
        assert all(c == j % 2 for c, j, _ in issued)
        seq = [j for _, j, _ in issued]
        assert seq == sorted(seq), "the two consumers' mainloops interleaved"
    else:  # cooperative: both consumers issue every (tile, kt)
        assert sorted(issued) == [(c, j, kt) for c in (0, 1) for j in range(tiles) for kt in range(k_tiles)]


@pytest.mark.parametrize("pingpong", [False, True], ids=["coop", "pingpong"])
def test_generation_2_protocol_model_has_no_deadlock_or_parity_alias(pingpong):
    # Tiles per block 1..5 (odd counts, a consumer with none), k-blocks below, at and above the ring
    # size, and the stage counts the configs use.
    for stages in sorted({c.stages for c in GEN2} | {2}):
        for tiles in range(1, 6):
            for k_tiles in (1, 2, stages - 1, stages, stages + 1, 2 * stages + 3):
                if k_tiles < 1:
                    continue
                for seed in range(12):
                    _simulate(tiles, k_tiles, stages, pingpong, seed)


def _mutated_model(old: str, new: str):
    import inspect
    import textwrap

    src = textwrap.dedent(inspect.getsource(_simulate))
    assert src.count(old) == 1
    ns = dict(globals())
    exec(compile(src.replace(old, new), "<mutated model>", "exec"), ns)
    return ns["_simulate"]


@pytest.mark.parametrize("old,new,expect", [
    # wait_group 1 dropped: a slot is released while its wgmma group may still read it.
    ("lambda: len(groups[c]) <= 1", "lambda: True", "in-flight"),
    # ping-pong turn barrier dropped: consumer 1 runs more than one phase ahead and aliases parity.
    ("if pingpong and j != 0:", "if False:", "parity aliased"),
])
def test_protocol_model_catches_known_breakages(old, new, expect):
    """The model is not vacuous: each mutation of the transcribed protocol is caught for some
    interleaving (ping-pong, 3 tiles, 3 k-blocks, 2 stages)."""
    broken = _mutated_model(old, new)
    for seed in range(300):
        try:
            broken(3, 3, 2, True, seed)
        except AssertionError as err:
            if expect in str(err):
                return
    pytest.fail(f"mutation {new!r} not caught")
