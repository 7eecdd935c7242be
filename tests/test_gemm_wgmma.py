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


@pytest.mark.timeout(120)
def test_compiled_config_table_matches_the_mirror_without_a_gpu(tmp_path):
    """cudaopt_wgmma_config_info is host code: the library's own table (smem bytes computed by the
    C++ templates, schedule) is compared with configs.py here, as _lib does at load time on a GPU."""
    import ctypes

    from cudaopt.gemm import build

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    result = build.build(out_dir=tmp_path, with_blas=False, force=True)
    try:
        lib = ctypes.CDLL(str(result.kernel_lib))
    except OSError as err:
        pytest.skip(f"library built but not loadable here (no CUDA runtime): {err}")
    assert lib.cudaopt_wgmma_num_configs() == len(WGMMA_CONFIGS)
    buf = (ctypes.c_int * 7)()
    for c in WGMMA_CONFIGS:
        assert lib.cudaopt_wgmma_config_info(c.index, buf) == 0
        assert tuple(buf) == (c.bm, c.bn, c.bk, c.consumers, c.stages, c.smem_bytes, c.schedule), c.label
    assert lib.cudaopt_wgmma_config_info(len(WGMMA_CONFIGS), buf) == 1
