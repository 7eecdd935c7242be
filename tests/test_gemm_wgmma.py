"""CPU tests of the Hopper (wgmma) path of the HGEMM family: registry, mirror, routing, compilation.

The kernels themselves only run on an H200 (tests/gpu/test_gemm_gpu.py); here we check that they
are registered, that the Python mirror matches the CUDA source, that the dispatcher does not pick
them unless the tuned table says so, and that the sources compile for sm_90a to SASS with HGMMA
and UTMALDG instructions and no register spills. Split-K (generation 2): the work-item
decomposition (compiled host copy and Python mirror), workspace size, the launcher's refusals, the
candidate rule, and a CPU model of the ring protocol with items of unequal k-block counts.
"""

import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import cudaopt.gemm as g
from cudaopt.gemm import dispatch
from cudaopt.gemm.configs import (
    KERNEL_CONFIGS,
    MMA_CONFIGS,
    NUM_SMS_H200,
    SCHED_PINGPONG,
    WGMMA_CONFIGS,
    WGMMA_MAX_SPLITS,
    Choice,
    block_items,
    candidate_choices,
    plain_twin,
    split_choices,
    wgmma_k_blocks,
    work_item,
)

CSRC = Path(g.__file__).parent / "csrc"


def test_registry_has_the_wgmma_kind_after_the_mma_family():
    assert len(MMA_CONFIGS) == 14 and len(WGMMA_CONFIGS) >= 2
    assert [c.id for c in KERNEL_CONFIGS] == list(range(len(KERNEL_CONFIGS)))
    assert all(c.kind == "mma" for c in KERNEL_CONFIGS[:14])  # ids in the shipped table keep their meaning
    assert [c.index for c in WGMMA_CONFIGS] == list(range(len(WGMMA_CONFIGS)))
    for c in WGMMA_CONFIGS:
        # 64-deep slots, or 128-deep for a B3D config (session 17: config 53)
        assert (c.bk == 64 or (c.bk == 128 and c.b3d)) and c.consumers in (1, 2, 3) and c.threads == 128 * (c.consumers + 1)
        assert c.consumers < 3 or c.schedule == 1  # three consumers: cooperative only
        assert c.bm <= 256
        if c.swap:  # (sessions 26-29) the chains along bn, their N bm: ping-pong, 64-column chunks, wgmma N 16-192
            assert c.schedule == 2 and c.bn % 64 == 0 and c.bm in (16, 32, 64, 144, 160, 168, 176, 192) and c.max_splits == 1 and not c.cpasync
        else:
            assert c.rows_per_consumer % 64 == 0 and c.bn in (64, 128, 160, 192, 256)
        # accumulators per consumer thread: 128, or 192 for a two-consumer ping-pong (the C static_assert)
        assert c.accumulators <= (192 if c.schedule == 2 and c.consumers == 2 else 128)
        assert c.smem_bytes <= 227 * 1024
        # generation 1 and the cluster configs never split K (but the pairs with a split-K kernel, session 28);
        # cluster split-K twins take 2-8
        assert c.max_splits == (WGMMA_MAX_SPLITS if c.cluster_splitk else 1 if c.schedule == 0 or c.cluster_m > 1
                                or not c.splitk else 8 if c.csplit else WGMMA_MAX_SPLITS)
        assert not c.cluster_splitk or (c.cluster_m == 2 and c.lean and not c.swap and c.bk == 64)
        # the k-split ping-pong (session 33): one CTA, plain only, TMA only; its extra shared memory holds one fp32 tile
        assert not c.ksplit or (c.schedule == 2 and c.cluster_m == 1 and c.max_splits == 1 and not c.cpasync
                                and c.smem_bytes == replace(c, ksplit=False).smem_bytes + 16 + 4 * c.bm * c.bn)
        assert c.label.startswith("wgmma") and Choice("ours", c.id, 1).label() == c.label


def test_python_mirror_matches_the_wgmma_source():
    src = (CSRC / "hgemm_wgmma.cu").read_text()
    # the sixth macro argument is the cluster size for CLUSTER and CLUSTERE, the staging-buffer count for
    # CFG2E and CFG2CS (the cluster split-K twins); CLUSTERE's seventh is its staging-buffer count
    # (CFG2B and CFG2B2, the B3D twins, take CFG2E's arguments; CFG2B2's slots are 128 deep; CLUSTERM takes
    # CLUSTERE's and an eighth, the B mode; CLUSTERLP, session 24: CLUSTERL's and a ninth, the L2 promotion's index;
    # CLUSTERLPK, session 28: CLUSTERLP's, with a split-K kernel)
    from cudaopt.gemm._lib import L2_PROMOTIONS

    promo_name = {v: k for k, v in L2_PROMOTIONS.items()}
    kinds_re = "CFG2K|CFG2CS|CFG2E|CFG2PS|CFG2P|CFG2T|CFG2S|CFG2B2|CFG2B|CFG2|CFG|CLUSTERE|CLUSTERMU|CLUSTERM|CLUSTERLPS|CLUSTERLPK|CLUSTERLP|CLUSTERL|CLUSTERU2|CLUSTERU|CLUSTER"
    rows = [(int(a), int(b), int(c), int(d), int(e or 0), int(f) if f and kind.startswith("CLUSTER") else 1,
             int(f) if f and kind in ("CFG2E", "CFG2CS", "CFG2P", "CFG2PS", "CFG2T", "CFG2S", "CFG2B", "CFG2B2", "CFG2K")
             else int(g or 0),
             kind == "CFG2CS", kind == "CFG2PS",
             kind.startswith("CLUSTERU") or kind in ("CLUSTERMU", "CLUSTERL", "CLUSTERLP", "CLUSTERLPS", "CLUSTERLPK"),
             kind in ("CFG2B", "CFG2B2", "CLUSTERU2"),
             128 if kind in ("CFG2B2", "CLUSTERU2") else 64, int(h or 0), kind in ("CLUSTERL", "CLUSTERLP", "CLUSTERLPS",
                                                                                  "CLUSTERLPK"),
             promo_name[int(i)] if i else "", kind in ("CFG2S", "CLUSTERLPS") or (kind == "CFG2K" and g == "1"),
             kind == "CLUSTERLPK", kind == "CFG2K")
            for kind, a, b, c, d, e, f, g, h, i in
            re.findall(rf"CUDAOPT_WGMMA_({kinds_re})\((\d+), (\d+), (\d+), (\d+)"
                       r"(?:, (\d+))?(?:, (\d+))?(?:, (\d+))?(?:, (\d+))?(?:, (\d+))?\)", src)]
    assert rows == [(c.bm, c.bn, c.consumers, c.stages, c.schedule, c.cluster_m, c.epi_chunks, c.csplit, c.shared_epi,
                     c.uncond, c.b3d, c.bk, c.b_mc, c.lean, c.l2_promo, c.swap, c.cluster_splitk, c.ksplit)
                    for c in WGMMA_CONFIGS]
    # CFG2P / CFG2PS / CFG2T entries (no split-K kernel) are the configs the mirror marks splitk=False; CFG2T
    # (session 26, the 160-wide tiles) alone of the one-CTA generation-2 entries has no cp.async producer
    kinds = re.findall(rf"CUDAOPT_WGMMA_({kinds_re})\(\d+, \d+", src)
    assert [k in ("CFG2P", "CFG2PS", "CFG2T", "CFG2S", "CFG2K") for k in kinds] == [not c.splitk for c in WGMMA_CONFIGS]
    assert [k not in ("CFG", "CFG2T", "CFG2S", "CFG2K") and not k.startswith("CLUSTER") for k in kinds] == [
        c.cpasync for c in WGMMA_CONFIGS]


# The session-6 shapes where one block per tile left most SMs idle (0.61-0.75x cuBLASLt).
FEW_TILE_LONG_K = [(512, 512, 4096), (64, 64, 2048), (512, 64, 2048), (64, 4096, 12288), (128, 4096, 16384),
                   (1024, 64, 2048)]


def test_wgmma_split_k_candidates_only_where_tiles_leave_sms_idle(monkeypatch):
    monkeypatch.delenv("CUDAOPT_GEMM_WGMMA_SPLITK_IDS", raising=False)
    shapes = [(4096, 4096, 4096), (16384, 16384, 16384), (64, 128, 16384), (8, 8, 8), (200, 136, 264),
              (1024, 1024, 128), *FEW_TILE_LONG_K]
    for m, n, k in shapes:
        cands = candidate_choices(m, n, k)
        for c in cands:
            cfg = KERNEL_CONFIGS[c.config]
            if cfg.kind != "wgmma" or c.splits == 1:
                continue
            tiles = cfg.tiles(m, n)
            assert cfg.schedule != 0, c  # generation 1 has no split-K kernel
            assert tiles < NUM_SMS_H200 and tiles * c.splits <= 4 * NUM_SMS_H200, (m, n, k, c)
            assert wgmma_k_blocks(k) // c.splits >= 2, (m, n, k, c)  # every split keeps >= 2 k-blocks
            assert c.splits in (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64) and c.splits <= cfg.max_splits
    big = [c for c in candidate_choices(4096, 4096, 4096) if KERNEL_CONFIGS[c.config].kind == "wgmma"]
    assert big and all(c.splits == 1 for c in big)  # >= 132 tiles for every config: no split-K
    assert all(c.splits == 1 for c in candidate_choices(8, 8, 8))  # one k-block: nothing to split
    pp = next(c for c in WGMMA_CONFIGS if c.label == "wgmma64x128x64_pp_s8")
    for m, n, k in FEW_TILE_LONG_K:  # the measured worst shapes get split-K candidates on the fastest config
        assert {2, 4, 8} <= set(split_choices(pp, m, n, k)), (m, n, k)
        assert Choice("ours", pp.id, 4) in candidate_choices(m, n, k)
    # 512x512x4096 on 64x128 tiles: 32 tiles, 64 k-blocks -> splits up to 16 (32 x 16 = 512 <= 528)
    assert split_choices(pp, 512, 512, 4096) == [1, 2, 3, 4, 6, 8, 12, 16]  # 32 tiles x 24 > 4 x 132
    assert split_choices(pp, 64, 128, 16384) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]  # one tile
    assert split_choices(pp, 512, 512, 192) == [1]  # 3 k-blocks: a split of 2 would leave one with 1


def test_split_k_ids_filter_keeps_the_plain_kernels(monkeypatch):
    pp = next(c for c in WGMMA_CONFIGS if c.label == "wgmma64x128x64_pp_s8")
    other = next(c for c in WGMMA_CONFIGS if c.schedule != 0 and c.id != pp.id)
    monkeypatch.setenv("CUDAOPT_GEMM_WGMMA_SPLITK_IDS", str(pp.id))
    cands = candidate_choices(512, 512, 4096)
    assert any(c.config == pp.id and c.splits > 1 for c in cands)
    assert Choice("ours", other.id, 1) in cands and not any(c.config == other.id and c.splits > 1 for c in cands)
    monkeypatch.setenv("CUDAOPT_GEMM_WGMMA_SPLITK_IDS", "")  # no split-K passed the smoke test
    assert all(c.splits == 1 for c in candidate_choices(512, 512, 4096) if KERNEL_CONFIGS[c.config].kind == "wgmma")
    assert any(c.splits > 1 for c in candidate_choices(64, 64, 16384) if KERNEL_CONFIGS[c.config].kind == "mma")


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


def test_shipped_table_covers_the_grid_with_launchable_measured_choices():
    import json

    from cudaopt.gemm.shapes import parse_shapes

    data = json.loads(dispatch.DEFAULT_TABLE.read_text())
    shipped = dispatch.load_table(None)
    assert set(shipped) == set(parse_shapes("grid"))  # session 12's H200 tune, all 1,000 shapes
    tie = 5e-5  # paired_ratio_vs_torch is stored rounded to 4 decimals: 1.0 may be a hair under
    for e in data["entries"]:
        choice = shipped[(e["m"], e["n"], e["k"])]
        assert choice.backend in ("ours", "torch", "cublaslt")
        if "bt_lt_algo" in e:  # (session 42) the B^T route: cuBLASLt TN where every B^T grid read it faster
            g = e["bt_grid_choice"]
            assert g["to"] == "cublaslt_tn" and g["bt_lt_algo"] == e["bt_lt_algo"] == choice.bt_algo >= 0
            assert len(g["ratios"]) == g["grids"] >= 1 and min(g["ratios"]) >= g["margin"] >= 1.0  # (4 decimals)
        g = e.get("grid_choice")
        if g is not None:  # (session 42's table) moved by gemm-table-from-grids: every grid read the new choice faster
            assert g["to"] == choice.backend and len(g["ratios"]) == g["grids"] >= 1
            assert min(g["ratios"]) >= g["margin"] >= 1.0  # (ratios stored to 4 decimals)
            if choice.backend == "cublaslt":
                assert g["lt_algo"] == choice.algo
            if choice.backend == "ours":
                assert choice.label() == e["label"] and dispatch.fit_splits(choice, e["k"]) == choice
            continue
        lt = e.get("lt_fallback") or {}
        if choice.backend == "cublaslt":  # session 18's pass: faster than what it replaced in both verdicts
            assert choice.algo == e["lt_algo"] == lt["best_algo"] >= 0 and lt["replaced"] in ("ours", "torch")
            verdict = lt["paired_table_over_lt"] or lt["table_us"] / lt["lt_us"]
            # the screening verdict is the fastest algorithm's; where the runoff picked another, the fastest one's
            # time is recorded apart (session 30). Two shapes were moved by session 30's rechecks before that field
            # existed, on a runoff pick that screened a hair slower than the table (2048x16384x4096: algorithm 5,
            # 373.952 against 371.008 us, confirmed 1.046x paired, then 3.7% faster than torch.matmul, what it
            # replaced, in both grids after; 4096x2048x8192: algorithm 1, 176.976 against 176.544 us, 1.021x, then level
            # with torch.matmul: 1.000x and 0.988x).
            screen_lt = lt.get("screen_fastest_lt_us", lt["screen_lt_us"])
            legacy_runoff = (e["m"], e["n"], e["k"]) in {(2048, 16384, 4096), (4096, 2048, 8192)} \
                and "screen_fastest_lt_us" not in lt
            assert verdict > 1.0 and (lt["screen_table_us"] > screen_lt or legacy_runoff)
            assert choice.as_ours() == Choice("ours", e["config"], e["splits"])  # ours stays on record
            e = {**e, "backend": lt["replaced"]}  # and what it replaced obeys the kernel tuner's rule below
            choice = Choice(lt["replaced"], e["config"], e["splits"])
        # ours only where the screening and the confirmation both measured it faster than torch
        confirmed = e.get("paired_ratio_vs_torch") or (e["torch_us"] / e["ours_us"] if e["ours_us"] else None)
        ratios = [confirmed, e["screen_torch_us"] / e["screen_ours_us"]] if e["ours_us"] else []
        t = tie
        if "backend_was" in e.get("adopted", {}):  # gemm_adopt --rebackend (session 23): the adopting screen decided
            ad = e["adopted"]  # (session 23's entries carry its times rounded to 1 ns only: a wider tie there)
            ratios = [ad.get("ratio_vs_torch") or ad["torch_us"] / ad["config_us"]]
            t = 5e-6 if "ratio_vs_torch" in ad else 5e-4
        back = e.get("ours_back") or {}
        if back.get("taken_back"):  # the ours-back pass (session 35): its screen and paired check against the fallback
            ratios = [back["paired_fallback_over_ours"] or back["fallback_us"] / back["ours_us"],
                      back["screen_fallback_us"] / back["screen_ours_us"]]
            t = 5e-4  # (its times are stored rounded to 1 ns)
        if choice.backend == "torch":  # a labelled fallback
            assert not ratios or min(ratios) < data["fallback_below"] + t
            continue
        assert choice.label() == e["label"] and min(ratios) >= data["fallback_below"] - t
        assert dispatch.fit_splits(choice, e["k"]) == choice  # launchable as tuned
    assert any(KERNEL_CONFIGS[c.config].kind == "wgmma" for c in shipped.values() if c.backend == "ours")


def test_launch_refuses_split_k_for_wgmma(monkeypatch):
    from cudaopt.gemm import _lib

    class NoLib:  # the check happens before any library call
        def __getattr__(self, name):
            raise AssertionError(f"library touched: {name}")

    monkeypatch.setattr(_lib, "wgmma_kernels", NoLib)
    with pytest.raises(_lib.GemmError, match="does not split K"):
        _lib.launch_ours(0, 0, 0, 256, 256, 256, WGMMA_CONFIGS[0].id, 2, 0, 0, 0)
    gen2 = next(c for c in WGMMA_CONFIGS if c.schedule != 0)
    with pytest.raises(_lib.GemmError, match="k-blocks"):  # 256 of K = 4 k-blocks: at most 4 splits
        _lib.launch_ours(0, 0, 0, 256, 256, 256, gen2.id, 8, 0, 0, 0)
    with pytest.raises(_lib.GemmError, match=f"at most {WGMMA_MAX_SPLITS}"):
        _lib.launch_ours(0, 0, 0, 256, 256, 8192, gen2.id, 2 * WGMMA_MAX_SPLITS, 0, 0, 0)
    with pytest.raises(_lib.GemmError, match="outside"):
        _lib.launch_ours(0, 0, 0, 256, 256, 8192, gen2.id, 0, 0, 0, 0)


def test_launch_routes_split_k_to_the_new_entry_and_splits_1_to_the_old(monkeypatch):
    from cudaopt.gemm import _lib

    calls = []

    class FakeLib:
        def cudaopt_hgemm_wgmma(self, *args):
            calls.append(("plain", args))
            return 0

        def cudaopt_hgemm_wgmma_splitk(self, *args):
            calls.append(("splitk", args))
            return 0

    monkeypatch.setattr(_lib, "wgmma_kernels", lambda: FakeLib())
    gen2 = next(c for c in WGMMA_CONFIGS if c.schedule != 0)
    _lib.launch_ours(1, 2, 3, 512, 64, 2048, gen2.id, 1, 0, 0, 7)
    _lib.launch_ours(1, 2, 3, 512, 64, 2048, gen2.id, 4, 0xABC0, _lib.workspace_bytes(512, 64, 4), 7)
    assert calls[0] == ("plain", (1, 2, 3, 512, 64, 2048, 2048, 64, 64, gen2.index, 7))
    ws = _lib.counter_bytes(512, 64) + 4 * 512 * 64 * 4  # the counter block, then the partials
    assert calls[1] == ("splitk", (1, 2, 3, 512, 64, 2048, 2048, 64, 64, gen2.index, 4, 0xABC0, ws, 7))


def test_mma_split_k_gets_the_partials_after_the_counter_block(monkeypatch):
    """The mma.sync path writes partials from the workspace start in its own layout: launch_ours
    hands it the part after the wgmma fixup's counters, so a shared workspace's counters stay zero."""
    from cudaopt.gemm import _lib
    from cudaopt.gemm.configs import MMA_CONFIGS

    calls = []

    class FakeLib:
        def cudaopt_hgemm(self, *args):
            calls.append(args)
            return 0

    monkeypatch.setattr(_lib, "kernels", lambda: FakeLib())
    cfg = MMA_CONFIGS[0]
    ws_bytes = _lib.workspace_bytes(512, 64, 4)
    _lib.launch_ours(1, 2, 3, 512, 64, 2048, cfg.id, 4, 0x10000, ws_bytes, 7)
    _lib.launch_ours(1, 2, 3, 512, 64, 2048, cfg.id, 1, 0, 0, 7)
    skip = _lib.counter_bytes(512, 64)
    assert calls[0][-3:] == (0x10000 + skip, ws_bytes - skip, 7) and ws_bytes - skip == 4 * 512 * 64 * 4
    assert calls[1][-3:] == (None, 0, 7)


def test_dispatcher_fits_a_neighbours_wgmma_split_count_to_this_k():
    gen1 = next(c for c in WGMMA_CONFIGS if c.schedule == 0)
    gen2 = next(c for c in WGMMA_CONFIGS if c.schedule != 0)
    mma = next(c for c in KERNEL_CONFIGS if c.kind == "mma")
    table = {(512, 512, 1024): Choice("ours", gen2.id, 16)}  # 16 k-blocks: 16 splits fit
    assert dispatch.choose(512, 512, 1024, table) == Choice("ours", gen2.id, 16)
    assert dispatch.choose(512, 512, 640, table) == Choice("ours", gen2.id, 8)  # 10 k-blocks: halved to 8
    assert dispatch.choose(384, 512, 512, table) == Choice("ours", gen2.id, 8)
    assert dispatch.fit_splits(Choice("ours", gen2.id, 3), 64) == Choice("ours", gen2.id, 1)
    assert dispatch.fit_splits(Choice("ours", gen1.id, 2), 8192) == Choice("ours", gen1.id, 1)
    assert dispatch.fit_splits(Choice("ours", mma.id, 16), 64) == Choice("ours", mma.id, 16)  # mma takes any
    assert dispatch.fit_splits(Choice("torch", gen2.id, 16), 64) == Choice("torch", gen2.id, 16)


BT_TWIN_KERNELS = 31  # hgemm_wgmma.cu's kBtTwins (session 39): 13 plain and 11 split-K in our frame, 7 swapped


def _cuobjdump() -> str | None:
    found = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if found:
        return found
    nvcc = shutil.which("nvcc")
    cands = [Path(nvcc).resolve().parent / "cuobjdump"] if nvcc else []
    try:  # the dev extra's nvidia-cuda-cuobjdump / -nvdisasm wheels (session 21: CI inspects the SASS too)
        import nvidia

        cands += [Path(p) / sub / "bin" / "cuobjdump" for p in nvidia.__path__ for sub in ("cu13", "cu12")]
    except ImportError:
        pass
    return next((str(c) for c in cands if c.is_file()), None)


@pytest.mark.timeout(300)  # (214 kernels: ~60 s of nvcc on an idle 2-core machine, twice that beside other work)
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
                          capture_output=True, text=True, timeout=280, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    wgmma_funcs = re.findall(r"Function properties for (\S*hgemm_wgmma2?(?:_cluster|_swap|_ks)?_kernel\S*)\n\s*(.*)", out)
    # a cluster split-K twin shares its twin's kernels; a B3D twin shares its twin's and adds two of its own
    # (a config that differs from an earlier one only by its own L2 promotion, promo_twin, launches that config's
    # kernel with other tensor maps, session 24)
    own = [c for c in WGMMA_CONFIGS if not c.csplit and not c.b3d and not promo_twin(c) and not c.cluster_splitk]
    # every own config's kernel, plus the cp.async producer's instantiation (template flag CPA = true,
    # mangled "Lb1E" after EPI) of each generation-2 one without clusters (session 15: compiled apart from the
    # TMA kernels, which are again the code session 14's grid measured)
    gen2_plain = [c for c in own if c.cpasync]  # (the 160-wide tiles of session 26 have none: TMA only)
    b3d_funcs = re.findall(r"Function properties for (\S*hgemm_wgmma2_(?:splitk_)?b3d_kernel\S*)\n\s*(.*)", out)
    assert len(b3d_funcs) == 2 * len(B3D), out[-3000:]
    # a 128-deep B3D config also brings 64-deep 2-D kernels of its slot count (plain, split-K, cp.async each)
    deep = [c for c in B3D if c.bk == 128]
    # (a 128-deep pair brings its 64-deep cluster kernel, counted here, and its deep one, below)
    assert len(wgmma_funcs) == len(own) + len(gen2_plain) + 2 * len(deep) + len(B3D_PAIR), out[-3000:]
    deep_pairs = re.findall(r"Function properties for (\S*hgemm_wgmma2_cluster_deep_kernel\S*)\n\s*(.*)", out)
    assert len(deep_pairs) == len(B3D_PAIR), out[-3000:]
    # EPI, then CPA (a cluster kernel's flag after EPI is UNCOND, session 16)
    # (a k-split kernel's flag after EPI is SWAP, session 33)
    assert sum(bool(re.search(r"ELi\d+ELb1E", name)) for name, _ in wgmma_funcs
               if "cluster" not in name and "_ks_" not in name) == len(gen2_plain) + len(deep)
    assert sum("_ks_" in name for name, _ in wgmma_funcs) == len(KSPLIT)
    assert sum(bool(re.search(r"ELi\d+ELb1E", name)) for name, _ in wgmma_funcs if "cluster" in name) == sum(
        c.uncond for c in CLUSTER_KERNELS)
    assert sum("cluster" in name for name, _ in wgmma_funcs) == len(CLUSTER_KERNELS)
    # Split-K: one more kernel per generation-2 config (and its cp.async twin), and the (default,
    # serial) reduce kernel.
    splitk_funcs = re.findall(r"Function properties for (\S*(?:hgemm_wgmma2_splitk|wgmma_splitk_reduce_serial)_kernel\S*)\n\s*(.*)", out)
    assert len(splitk_funcs) == 2 * sum(1 for c in own if c.max_splits > 1) + 2 * len(deep) + 1, out[-3000:]
    # the pairs with split-K (session 28): one kernel each of their own
    pair_splitk = re.findall(r"Function properties for (\S*hgemm_wgmma2_cluster_splitk_kernel\S*)\n\s*(.*)", out)
    assert len(pair_splitk) == len(SPLITK_PAIRS), out[-3000:]
    # the B^T twins (session 39): one plain kernel each of the configs hgemm_wgmma.cu's kBtTwins lists
    bt_funcs = re.findall(r"Function properties for (\S*hgemm_wgmma2_(?:splitk_)?bt_kernel\S*)\n\s*(.*)", out)
    assert len(bt_funcs) == BT_TWIN_KERNELS, out[-3000:]
    for name, props in wgmma_funcs + splitk_funcs + b3d_funcs + deep_pairs + pair_splitk + bt_funcs:
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
    # Split-K kernels: same mainloop (HGMMA, one group in flight), fp32 partials by 8-byte stores; the reduce kernel reads 16-byte vectors and writes 16 bytes of C per thread.
    funcs = _sass_functions(sass)
    split = {name: body for name, body in funcs.items() if "hgemm_wgmma2_splitk_kernel" in name}
    assert len(split) == len(splitk_funcs) - 1  # (the reduce kernel)
    for name, body in split.items():  # (a cp.async twin's producer loads by LDGSTS)
        assert "HGMMA.64x" in body and "WARPGROUP.DEPBAR.LE gsb0, 0x1" in body, name
        assert "UTMALDG.2D" in body or "LDGSTS" in body, name
        assert "STG.E.64" in body, name  # (C itself by TMA store where the in-kernel fixup finishes a tile)
    # B^T twins: both operands K-major (no .tnspA or .tnspB on any HGMMA, where our frame's kernels transpose B and the
    # swapped ones A), loaded by TMA, stored by the TMA-store epilogue
    bt = {name: body for name, body in funcs.items() if re.search(r"hgemm_wgmma2_(?:splitk_)?bt_kernel", name)}
    assert len(bt) == BT_TWIN_KERNELS and sum(bool(re.search(r"_bt_kernelI(?:Li\d+E){6}Lb1E", name)) for name in bt) == 7
    assert sum("splitk_bt" in name for name in bt) == 11
    for name, body in bt.items():
        assert "HGMMA.64x" in body and ".tnsp" not in body and "UTMALDG.2D" in body, name
        assert ("STG.E.64" if "splitk_bt" in name else "UTMASTG.2D") in body, name  # (split-K: fp32 partials)
    reduce = next(body for name, body in funcs.items() if "wgmma_splitk_reduce_serial_kernel" in name)
    assert "LDG.E.128" in reduce and "STG.E.128" in reduce
    # 2x1 cluster kernels: B multicast TMA, cluster barriers (init and exit), remote mbarrier arrivals
    # (SYNCS...RED on a shared::cluster address), the same mainloop and TMA-store epilogue.
    clus = {name: body for name, body in funcs.items() if "hgemm_wgmma2_cluster_kernel" in name}
    assert len(clus) == len(CLUSTER_KERNELS)
    # (the session-21 diagnostic pair, B mode 1, loads B without multicast)
    assert sum("UTMALDG.2D.MULTICAST" not in body for body in clus.values()) == sum(c.b_mc in (1, 3, 4) for c in CLUSTER_KERNELS)
    # (remote arrivals, SYNCS...RED, in every pair but B mode 3's, whose consumers release their own CTA's slots)
    assert sum("SYNCS.ARRIVE.TRANS64.RED" not in body for body in clus.values()) == sum(c.b_mc in (3, 4) for c in CLUSTER_KERNELS)
    # (the register split of the consumers: 232 a thread, 152 for three consumers; session 22's first 3-consumer pair
    # asked for 232 and hung in setmaxnreg, which waits for registers a 512-thread CTA never frees)
    for name, body in clus.items():
        want = "0x98" if re.search(r"cluster_kernelILi\d+ELi\d+ELi3E", name) else "0xe8"
        assert set(re.findall(r"TRY_ALLOC\.CTAPOOL UP0, (0x[0-9a-f]+)", body)) == {want}, name
    assert sum(bool(re.search(r"cluster_kernelILi\d+ELi\d+ELi3E", name)) for name in clus) == sum(
        c.consumers == 3 for c in CLUSTER_KERNELS) == 1
    for name, body in clus.items():
        assert "UTMALDG.2D " in body, name
        # (not B mode 4's diagnostic, nor a lean kernel (LEAN, the template's ninth argument, then CM, then SWAP where
        # set, session 26): one barrier)
        assert body.count("UCGABAR_ARV") >= 2 and body.count("UCGABAR_WAIT") >= 2 or re.search(
            r"ELi4ELb0ELi\dE(?:Lb0E)?EE|ELb1ELi\dE(?:Lb[01]E)?EE", name), name
        # (mode 4: none; lean: the start barrier alone)
        assert "SYNCS.ARRIVE.TRANS64" in body, name
        assert "HGMMA.64x" in body and "WARPGROUP.DEPBAR.LE gsb0, 0x1" in body and "UTMASTG.2D" in body, name
    for name, body in funcs.items():  # nothing cluster-specific leaked into the other kernels
        if "cluster" not in name and "csplit" not in name:  # (cluster split-K: clusters of its own)
            assert "MULTICAST" not in body and "UCGABAR" not in body, name
    # Sessions 34-35's uniform descriptors (scripts/gemm_sass.py): every generation-2 kernel's main HGMMA loop, split-K
    # and pairs included, keeps its ring state and descriptors in uniform registers (no R2UR: 16 a k-block was the
    # per-thread form), the shared window's base hoisted (no S2UR), and no descriptor high word (0x40000040 and the
    # like) moved in again before each HGMMA.
    gs = _load_repo_script("scripts/gemm_sass.py")
    loops = [gs.summary(k) | {"name": k.name} for k in gs.parse(sass) if "hgemm_wgmma2" in k.name]
    loops = [s for s in loops if s["loop"] is not None]
    assert len(loops) > 150
    assert [(s["name"], s["r2ur"], s["s2ur"]) for s in loops if s["r2ur"] or s["s2ur"]] == []
    high = re.compile(r"UMOV UR\d+, 0x[48]00000[48]0$")
    assert [s["name"] for s in loops if any(high.match(i.text) for i in s["loop"].body)] == []
    # Programmatic launch: no kernel of the library (mma, wgmma, reduce) reaches a global or TMA access on a path
    # that has not passed its PDL wait (griddepcontrol.wait, ACQBULK).
    kernels = gs.parse(sass)
    assert [(k.name, [i.text for i in gs.unguarded_global_ops(k)]) for k in kernels if gs.unguarded_global_ops(k)] == []
    assert sum(gs.wait_to_load(k) is not None for k in kernels) > 150
    # The late producer wait and the fresh ring (session 36, the default since session 38): no generation-2 kernel
    # does an integer division (I2F / MUFU) or a barrier wait between its PDL wait and its first TMA load.
    _assert_short_way_to_first_load(gs, kernels)
    # The producer ring (session 38's diagnostic, the default since session 43): no one-CTA kernel's producer loop
    # reads a special register (S2R / S2UR) to rebuild the shared window's base.
    _assert_producer_loops_read_no_special_register(gs, kernels)


def _one_cta_producer_loops(gs, kernels):
    loops = {k.name: gs.producer_loop(k) for k in kernels if "hgemm_wgmma2" in k.name and "cluster" not in k.name}
    loops = {name: body for name, body in loops.items() if body}
    assert len(loops) > 100
    return {name: [i for i in body if i.family in ("S2R", "S2UR")] for name, body in loops.items()}


def _assert_producer_loops_read_no_special_register(gs, kernels):
    assert {name: reads for name, reads in _one_cta_producer_loops(gs, kernels).items() if reads} == {}


def _assert_short_way_to_first_load(gs, kernels):
    ways = {k.name: gs.wait_to_load(k) for k in kernels if "hgemm_wgmma2" in k.name}
    ways = {name: w for name, w in ways.items() if w is not None}
    assert len(ways) > 150
    assert {name: w["slow"] for name, w in ways.items() if {"I2F", "MUFU"} & set(w["slow"])} == {}
    assert max(w["instrs"] for w in ways.values()) < 100
    # (the one SYNCS left is the full barrier's expect_tx arrival, an arrive without a result)
    assert {name: w["slow"] for name, w in ways.items() if w["slow"].count("SYNCS") > 1} == {}


def _variant_sass(tmp_path, defines: tuple[str, ...], what: str):
    """A diagnostic build of hgemm_wgmma.cu as a cubin (nvcc with -Xptxas -v): (ptxas output, parsed kernels, the
    gemm_sass module); skips without nvcc and cuobjdump."""
    nvcc = shutil.which("nvcc")
    tool = _cuobjdump()
    if nvcc is None or tool is None:
        pytest.skip(f"nvcc and cuobjdump needed: the {what} build's SASS not inspected")
    from cudaopt.gemm import build

    cubin = tmp_path / "variant.cubin"
    flags = [f for f in build.COMMON_FLAGS if f not in ("-Xcompiler", "-fPIC", "-shared", "-cudart", "shared")]
    proc = subprocess.run([nvcc, *build.ARCH_FLAGS, *flags, "-cubin", "-Xptxas", "-v", *(f"-D{d}" for d in defines),
                           str(CSRC / "hgemm_wgmma.cu"), "-o", str(cubin)],
                          capture_output=True, text=True, timeout=280, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    gs = _load_repo_script("scripts/gemm_sass.py")
    kernels = gs.parse(subprocess.run([tool, "--dump-sass", str(cubin)], capture_output=True, text=True, timeout=60,
                                      check=True).stdout)
    # (every build: no global or TMA access of any kernel reachable without a PDL wait)
    assert [(k.name, [i.text for i in gs.unguarded_global_ops(k)]) for k in kernels if gs.unguarded_global_ops(k)] == []
    return out, kernels, gs


@pytest.mark.timeout(300)
def test_top_wait_diagnostic_build_compiles_and_keeps_every_access_behind_a_wait(tmp_path):
    """The opt-outs kept for an A/B against session 38's default: CUDAOPT_EXPERIMENT_TOP_WAIT (every thread waits for
    the predecessor at the top, session 35's order) with CUDAOPT_EXPERIMENT_RING_FIRST_WAIT (the empty-slot wait on
    the ring's first pass too). The build has no spills or setmaxnreg warnings and every global or TMA access of every
    kernel still comes after a wait; and its producers do run the first item's integer divisions after the wait (what
    the default removed; if no kernel did, the defines would no longer build the old form)."""
    out, kernels, gs = _variant_sass(
        tmp_path, ("CUDAOPT_EXPERIMENT_TOP_WAIT", "CUDAOPT_EXPERIMENT_RING_FIRST_WAIT"), "top-wait")
    props = re.findall(r"Function properties for (\S*hgemm_wgmma\S*)\n\s*(.*)", out)
    assert len(props) > 150 and all("0 bytes spill stores, 0 bytes spill loads" in p for _, p in props), out[-3000:]
    assert "C7508" not in out and "serializ" not in out.lower(), out[-3000:]
    ways = [gs.wait_to_load(k) for k in kernels if "hgemm_wgmma2" in k.name]
    assert sum(1 for w in ways if w is not None and {"I2F", "MUFU"} & set(w["slow"])) > 50


@pytest.mark.timeout(300)
def test_pointer_producer_diagnostic_build_rebuilds_the_window_base_in_the_producer_loop(tmp_path):
    """The opt-out kept for an A/B against session 43's default: CUDAOPT_EXPERIMENT_POINTER_PRODUCER converts the
    producer's generic pointers in every k-block, and with the fresh ring's branch the compiler reads SR_CgaCtaId
    (S2UR) there again in most one-CTA kernels (session 38's A/B: 8-10% slower on long-K shapes of small tiles). If
    none did, the define would no longer build the old form and an A/B would time the default against itself."""
    _, kernels, gs = _variant_sass(tmp_path, ("CUDAOPT_EXPERIMENT_POINTER_PRODUCER",), "pointer-producer")
    assert sum(bool(reads) for reads in _one_cta_producer_loops(gs, kernels).values()) > 50


def _sass_functions(sass: str) -> dict[str, str]:
    """cuobjdump --dump-sass text split per kernel: mangled name -> its SASS."""
    out, name = {}, None
    for line in sass.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            out[name] = ""
        elif name is not None:
            out[name] += line + "\n"
    return out


# ---- generation 2 (schedules 1 and 2): host-side logic ------------------------------------------

CSPLIT = [c for c in WGMMA_CONFIGS if c.csplit]
B3D = [c for c in WGMMA_CONFIGS if c.b3d and c.cluster_m == 1]  # session 17: 3-D-map twins, tested apart
B3D_PAIR = [c for c in WGMMA_CONFIGS if c.b3d and c.cluster_m > 1]  # session 17: the pair with 128-deep slots
_OWN = [c for c in WGMMA_CONFIGS if not c.csplit and not c.b3d and not c.ksplit]
KSPLIT = [c for c in WGMMA_CONFIGS if c.ksplit]  # session 33: the k-split twins, tested apart
GEN2 = [c for c in _OWN if c.schedule != 0 and c.cluster_m == 1 and c.epi_chunks == 0]
N64 = [c for c in _OWN if c.schedule != 0 and c.bn == 64 and c.bm != 192 and c.cluster_m == 1 and not c.swap]  # session 13
COOP128 = [c for c in _OWN if c.schedule == 1 and (c.bm, c.bn) == (128, 128)]  # session 13, no whole-slab twin
N160 = [c for c in _OWN if c.bn == 160]  # session 26: 32-column chunks, tested apart
SWAPPED = [c for c in _OWN if c.swap and c.cluster_m == 1]  # session 26: cuBLAS's 128 x 160 in its frame, tested apart
CHUNKED = [c for c in _OWN if c.epi_chunks > 0 and 192 not in (c.bm, c.bn) and c not in N64 + COOP128 + N160 + SWAPPED
           and c.cluster_m == 1]
N192 = [c for c in _OWN if c.bn == 192 and c.splitk and c.cluster_m == 1]
PP192 = [c for c in _OWN if not c.splitk and c.bn != 160 and not c.swap]  # session 15: the 128 x 192 ping-pong, plain kernel only
M192 = [c for c in _OWN if c.bm == 192 and c.splitk and c.cluster_m == 1]
CLUSTER = [c for c in WGMMA_CONFIGS if c.cluster_m > 1]


def promo_twin(c):
    """The earlier config c equals in every field but its own L2 promotion (87-93 and 96 launch that config's
    kernel with other tensor maps, sessions 24-25), or None where c brings a kernel of its own (94-95)."""
    return next((d for d in WGMMA_CONFIGS if c.l2_promo and d.id < c.id and not d.l2_promo
                 and replace(d, id=c.id, index=c.index, l2_promo=c.l2_promo) == c), None)


# (the pairs with split-K, session 28, launch an earlier pair's plain kernel: their own is the split-K one)
SPLITK_PAIRS = [c for c in CLUSTER if c.cluster_splitk]
CLUSTER_KERNELS = [c for c in CLUSTER if not promo_twin(c) and not c.cluster_splitk]


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
    # generation 2 (measured in session 6) keeps its ids, labels and sizes; clusters come after it
    assert [(c.id, c.label, c.smem_bytes) for c in GEN2] == [
        (18, "wgmma128x256x64_c2_s3_tma", 214064), (19, "wgmma256x128x64_c2_s3_tma", 214064),
        (20, "wgmma64x256x64_pp_s4", 230464), (21, "wgmma128x128x64_pp_s5", 230480),
        (22, "wgmma64x128x64_pp_s8", 230528)]
    assert [(c.id, c.label, c.cluster_m, c.max_splits) for c in CLUSTER] == [
        (23, "wgmma128x256x64_c2_s3_tma_cm2", 2, 1), (24, "wgmma128x128x64_pp_s5_cm2", 2, 1),
        (39, "wgmma128x256x64_c2_s4_tma_cm2_e2", 2, 1), (40, "wgmma128x128x64_pp_s6_cm2_e1", 2, 1),
        (41, "wgmma256x128x64_c2_s4_tma_cm2_e1", 2, 1), (48, "wgmma128x128x64_pp_s6_cm2_e1_u", 2, 1),
        (49, "wgmma64x128x64_pp_s8_cm2_u", 2, 1), (54, "wgmma64x128x128_pp_s4_cm2_u_b3", 2, 1),
        (55, "wgmma64x64x64_pp_s8_cm2_e1", 2, 1), (57, "wgmma64x64x64_pp_s8_cm2_e1_mcu", 2, 1),
        (58, "wgmma64x64x64_pp_s8_cm2_e1_mca", 2, 1), (59, "wgmma64x64x64_pp_s8_cm2_e1_mcl", 2, 1),
        (60, "wgmma64x64x64_pp_s13_cm2_e1_mca", 2, 1), (61, "wgmma64x64x64_pp_s13_cm2_e1", 2, 1),
        (62, "wgmma64x64x64_pp_s8_cm2_e1_mcn", 2, 1), (63, "wgmma64x64x64_pp_s8_cm2_e1_u_mcl", 2, 1),
        (64, "wgmma64x64x64_pp_s8_cm2_e1_u_lean", 2, 1), (65, "wgmma64x64x64_pp_s8_cm2_e1_u_mca_lean", 2, 1),
        (66, "wgmma64x64x64_pp_s8_cm2_e1_u_mcl_lean", 2, 1), (67, "wgmma64x64x64_pp_s13_cm2_e1_u_mca_lean", 2, 1),
        (68, "wgmma128x256x64_c2_s4_tma_cm2_e2_u_lean", 2, 1), (69, "wgmma256x128x64_c2_s4_tma_cm2_e1_u_lean", 2, 1),
        (70, "wgmma128x128x64_pp_s6_cm2_e1_u_lean", 2, 1), (71, "wgmma64x192x64_pp_s6_cm2_e1_u_lean", 2, 1),
        (72, "wgmma64x128x64_pp_s8_cm2_u_lean", 2, 1), (73, "wgmma64x256x64_pp_s4_cm2_u_lean", 2, 1),
        (74, "wgmma192x64x64_c3_s6_tma_cm2_e1_u_pn_lean", 2, 1), (75, "wgmma128x64x64_c2_s8_tma_cm2_e1_u_pn_lean", 2, 1),
        (76, "wgmma64x64x64_pp_s8_cm2_e1_u_pn_lean", 2, 1), (82, "wgmma256x64x64_c2_s4_tma_cm2_e1_u_pn_lean", 2, 1),
        (83, "wgmma64x128x64_pp_s8_cm4_u_pn_lean", 4, 1), (84, "wgmma128x64x64_c2_s8_tma_cm4_e1_u_lean", 4, 1),
        (85, "wgmma128x64x64_c2_s8_tma_cm4_e1_u_mca_lean", 4, 1), (86, "wgmma64x128x64_pp_s8_cm4_u_pna_lean", 4, 1),
        (87, "wgmma64x128x64_pp_s8_cm4_u_pn_lean_p128", 4, 1), (88, "wgmma128x64x64_c2_s8_tma_cm4_e1_u_lean_p128", 4, 1),
        (89, "wgmma64x192x64_pp_s6_cm2_e1_u_lean_p128", 2, 1), (90, "wgmma64x128x64_pp_s8_cm2_u_lean_p128", 2, 1),
        (91, "wgmma128x256x64_c2_s4_tma_cm2_e2_u_lean_p128", 2, 1), (92, "wgmma256x128x64_c2_s4_tma_cm2_e1_u_lean_p128", 2, 1),
        (93, "wgmma128x128x64_pp_s6_cm2_e1_u_lean_p128", 2, 1), (94, "wgmma128x192x64_pp_s4_cm2_e1_u_lean_p128", 2, 1),
        (95, "wgmma192x128x64_pp_s4_cm2_e1_u_lean_p128", 2, 1), (96, "wgmma192x64x64_c3_s6_tma_cm2_e1_u_pn_lean_p128", 2, 1),
        (100, "wgmma128x160x64_pp_s5_cm2_e1_u_lean_p128", 2, 1), (101, "wgmma128x160x64_pp_s5_cm2_e1_u_pn_lean_p128", 2, 1),
        (104, "wgmma160x128x64_pp_s5_cm2_e1_u_pn_lean_p128_sw", 2, 1), (105, "wgmma160x128x64_pp_s5_cm2_e1_u_lean_p128_sw", 2, 1),
        (108, "wgmma192x128x64_pp_s4_cm2_e1_u_pn_lean_p128_sw", 2, 1), (109, "wgmma176x128x64_pp_s4_cm2_e1_u_pn_lean_p128_sw", 2, 1),
        (111, "wgmma144x128x64_pp_s5_cm2_e1_u_pn_lean_p128_sw", 2, 1),
        (116, "wgmma32x64x64_pp_s12_cm2_e1_u_lean_p128_sw", 2, 1), (117, "wgmma32x64x64_pp_s12_cm2_e1_u_pn_lean_p128_sw", 2, 1),
        (118, "wgmma64x64x64_pp_s8_cm2_e1_u_lean_p128", 2, 1), (119, "wgmma64x64x64_pp_s8_cm2_e1_u_pn_lean_p128", 2, 1),
        (120, "wgmma128x128x64_pp_s6_cm2_e1_u_lean_p128_sk", 2, 64), (121, "wgmma64x128x64_pp_s8_cm2_u_lean_p128_sk", 2, 64)]
    assert [c.b_mc for c in CLUSTER] == [0] * 9 + [1, 2, 3, 2, 0, 4, 3, 0, 2, 3, 2, 0, 0, 0, 0, 0, 0, 5, 5, 5, 5, 5, 0, 2, 6, 5, 0,
                                                  0, 0, 0, 0, 0, 0, 0, 5, 0, 5, 5, 0, 5, 5, 5, 0, 5, 0, 5, 0, 0]  # B modes: 64-wide pairs only (21; 5: along N, 22)
    # session 15's cluster twins of the chunked configs 25, 27, 26: the same tile, ring, staging, memory
    for c, twin in zip(CLUSTER[2:], (25, 27, 26)):
        t = KERNEL_CONFIGS[twin]
        assert plain_twin(c) is t
        assert (c.bm, c.bn, c.consumers, c.stages, c.schedule, c.epi_chunks, c.smem_bytes) == (
            t.bm, t.bn, t.consumers, t.stages, t.schedule, t.epi_chunks, t.smem_bytes)
    # chunked C epilogue (session 11): one slot more than its whole-slab twin, in the same 227 KB
    assert [(c.id, c.label, c.smem_bytes, c.max_splits) for c in CHUNKED] == [
        (25, "wgmma128x256x64_c2_s4_tma_e2", 230464, 64), (26, "wgmma256x128x64_c2_s4_tma_e1", 230464, 64),
        (27, "wgmma128x128x64_pp_s6_e1", 230496, 64)]
    # N = 192 tiles (session 12), chunked epilogue, split-K
    assert [(c.id, c.label, c.smem_bytes, c.max_splits) for c in N192] == [
        (28, "wgmma128x192x64_c2_s5_tma_e1", 222288, 64), (29, "wgmma64x192x64_pp_s6_e1", 214112, 64)]
    # M = 192 tiles with three cooperative consumers (session 12, written before a GPU run)
    assert [(c.id, c.label, c.smem_bytes, c.threads, c.rows_per_consumer) for c in M192] == [
        (30, "wgmma192x128x64_c3_s5_tma_e1", 230480, 512, 64), (31, "wgmma192x64x64_c3_s6_tma_e1", 222304, 512, 64)]
    # cluster split-K twins of 25, 28, 27 and 22 (session 12): same tiles and memory, at most 8 splits
    assert [(c.id, c.label, c.max_splits) for c in CSPLIT] == [
        (32, "wgmma128x256x64_c2_s4_tma_e2_cs", 8), (33, "wgmma128x192x64_c2_s5_tma_e1_cs", 8),
        (34, "wgmma128x128x64_pp_s6_e1_cs", 8), (35, "wgmma64x128x64_pp_s8_cs", 8),
        (46, "wgmma128x128x64_c2_s6_tma_e1_cs", 8),  # and of 38 (session 16)
        (77, "wgmma64x192x64_pp_s6_e1_cs", 8), (78, "wgmma192x64x64_c3_s6_tma_e1_cs", 8),  # and of 29, 31, 36, 37 (23)
        (79, "wgmma128x64x64_c2_s8_tma_e1_cs", 8), (80, "wgmma64x64x64_pp_s8_e1_cs", 8)]
    for c in CSPLIT:  # each is its one-CTA twin's tile, ring, schedule and staging
        t = plain_twin(c)
        assert (c.bm, c.bn, c.consumers, c.stages, c.schedule, c.epi_chunks, c.smem_bytes) == (
            t.bm, t.bn, t.consumers, t.stages, t.schedule, t.epi_chunks, t.smem_bytes) and not t.csplit
    # N = 64 in generation 2 (session 13, written before a GPU run): one 64-column chunk each, split-K
    assert [(c.id, c.label, c.smem_bytes, c.max_splits, c.schedule) for c in N64] == [
        (36, "wgmma128x64x64_c2_s8_tma_e1", 214144, 64, 1), (37, "wgmma64x64x64_pp_s8_e1", 148608, 64, 2),
        (56, "wgmma64x64x64_pp_s13_e1", 230608, 64, 2),  # session 20: 37 with cuBLAS's 13-deep ring
        (81, "wgmma256x64x64_c2_s4_tma_e1", 197696, 64, 1)]  # session 23: 82's one-CTA twin
    assert all(c.smem_bytes <= 232448 for c in WGMMA_CONFIGS)  # the 227 KB a block may opt into on sm_90
    assert [(c.id, c.label, c.smem_bytes, c.max_splits, c.consumers) for c in COOP128] == [
        (38, "wgmma128x128x64_c2_s6_tma_e1", 214112, 64, 2)]
    # the 128 x 192 ping-pong (session 15): 4 slots of 40 KB, one 16 KB staging chunk per consumer, no split-K
    assert [(c.id, c.label, c.smem_bytes, c.max_splits) for c in PP192] == [
        (42, "wgmma128x192x64_pp_s4_e1", 197696, 1), (43, "wgmma192x128x64_pp_s4_e1", 214080, 1),
        (44, "wgmma128x192x64_pp_s5_e1sh", 222296, 1), (45, "wgmma192x128x64_pp_s5_e1sh", 230488, 1),
        (47, "wgmma128x192x64_pp_s4_e2", 230464, 1)]
    for c in PP192:  # ring, 64-column staging chunks per consumer (or one set shared), barriers, slack
        assert c.smem_bytes == 1024 + c.stages * (c.bm + c.bn) * 128 + (1 if c.shared_epi else 2) * c.epi_chunks \
            * c.bm * 128 + 16 * c.stages + (8 if c.shared_epi else 0) <= 227 * 1024


def _staging_reuse_distances(chunks_per_tile: int, buffers: int, tiles: int, running: bool) -> set[int]:
    """Model of the chunked epilogue's buffer choice over a consumer's tiles: for each staged chunk, how
    many store groups back the buffer it takes was last committed (one group per chunk). The kernel
    waits with bulk_wait_read<buffers - 1>, which frees exactly the buffer `buffers` groups back."""
    last: dict[int, int] = {}
    out = set()
    seq = 0
    for _ in range(tiles):
        for c in range(chunks_per_tile):
            buf = (seq if running else c) % buffers
            if buf in last:
                out.add(seq - last[buf])
            last[buf] = seq
            seq += 1
    return out


def test_staging_buffers_that_do_not_divide_the_chunks_count_staged_chunks():
    """Session 16's 128 x 192 ping-pong with two staging buffers for three chunks (kEpiRunning): choosing
    buffer c % 2 would take, at a tile's first chunk, the buffer committed one group back, which
    bulk_wait_read<1> does not wait for (a race); the running count keeps every reuse 2 groups back."""
    assert min(_staging_reuse_distances(3, 2, 5, running=False)) == 1  # the race the counter avoids
    assert _staging_reuse_distances(3, 2, 5, running=True) == {2}
    for c in WGMMA_CONFIGS:  # where buffers divide the chunks, the compile-time choice is already safe
        if c.epi_chunks and (c.bn // 64) % c.epi_chunks == 0:
            assert _staging_reuse_distances(c.bn // 64, c.epi_chunks, 4, running=False) <= {c.epi_chunks}


def test_generation_2_shared_memory_and_staging():
    for c in GEN2:
        slots = c.stages * (c.bm + c.bn) * 64 * 2
        assert c.epilogue_bytes == c.consumers * c.rows_per_consumer * c.bn * 2
        assert c.smem_bytes == 1024 + slots + c.epilogue_bytes + 16 * c.stages <= 227 * 1024
        assert c.rows_per_consumer * 128 % 1024 == 0  # 128B-swizzled staging chunks stay aligned
        assert c.stages >= 3  # wait_group 1 holds two slots; a third lets TMA run ahead
    for c in CHUNKED:  # epi_chunks buffers of rows_per_consumer x 64 halves per consumer
        twin = next(g for g in GEN2 if (g.bm, g.bn, g.schedule) == (c.bm, c.bn, c.schedule))
        assert c.epilogue_bytes == c.consumers * c.rows_per_consumer * 64 * 2 * c.epi_chunks < twin.epilogue_bytes
        assert (c.bn // 64) % c.epi_chunks == 0  # chunk i of every tile reuses buffer i % epi_chunks
        assert c.stages == twin.stages + 1 and c.smem_bytes <= 227 * 1024
    pp = next(c for c in GEN2 if c.schedule == 2 and (c.bm, c.bn) == (64, 256))
    assert pp.rows_per_consumer == 64 and pp.epilogue_bytes == 2 * 64 * 256 * 2
    co = next(c for c in GEN2 if c.schedule == 1 and (c.bm, c.bn) == (256, 128))
    assert co.rows_per_consumer == 128 and co.epilogue_bytes == 256 * 128 * 2


def test_160_wide_tiles_stage_b_and_c_in_32_column_chunks():
    """Session 26's 128 x 160 tiles: 64 columns do not divide 160, so B's slot and C's staging come in five
    32-column chunks (64-byte rows, the 64-byte swizzle); 5 slots of 36 KB; no split-K or cp.async kernels; the
    pairs run their one-staging-buffer twin's tile, ring and staging (bitwise its results)."""
    assert [(c.id, c.label, c.smem_bytes, c.max_splits, c.cpasync) for c in N160] == [
        (97, "wgmma128x160x64_pp_s5_e2", 218192, 1, False), (98, "wgmma128x160x64_pp_s5_e1", 201808, 1, False),
        (99, "wgmma128x160x64_c2_s5_tma_e2", 201808, 1, False),
        (100, "wgmma128x160x64_pp_s5_cm2_e1_u_lean_p128", 201808, 1, False),
        (101, "wgmma128x160x64_pp_s5_cm2_e1_u_pn_lean_p128", 201808, 1, False)]
    for c in N160:
        assert c.chunk_cols == 32 and c.bn // c.chunk_cols == 5
        assert c.epilogue_bytes == c.consumers * c.rows_per_consumer * 32 * 2 * c.epi_chunks
        assert c.smem_bytes == 1024 + c.stages * (128 + 160) * 128 + c.epilogue_bytes + 16 * c.stages <= 227 * 1024
        assert c.rows_per_consumer * 64 % 1024 == 0  # 64-byte staging rows: chunks stay 1024-aligned
        # accumulators a consumer thread: 160 (ping-pong, two m64n160 chains) or 80 (cooperative, one)
        assert (c.rows_per_consumer // 64) * c.bn // 2 == (160 if c.schedule == SCHED_PINGPONG else 80)
    assert [plain_twin(c).id for c in N160 if c.cluster_m > 1] == [98, 98]
    assert all(c.chunk_cols == 64 for c in WGMMA_CONFIGS if c.bn != 160)
    # two buffers for five chunks: the running count (kEpiRunning) keeps every reuse two groups back
    assert _staging_reuse_distances(5, 2, 5, running=True) == {2}
    assert min(_staging_reuse_distances(5, 2, 5, running=False)) == 1


def test_ksplit_twins_share_their_twins_tiles_and_add_one_fp32_tile_of_shared_memory():
    """Session 33's k-split ping-pongs (CFG2K): 37, 115 and 113 with both consumers on each tile, alternating
    k-blocks; the same tile, slots and staging as the twin, plus consumer 1's fp32 partial (and 16 bytes to align it),
    plain TMA kernels only. Each consumer handles every tile of its block (no ping-pong halving)."""
    assert [(c.id, c.label, c.smem_bytes, c.max_splits, c.accumulators) for c in KSPLIT] == [
        (123, "wgmma64x64x64_pp_s8_e1_ks", 165008, 1, 32), (124, "wgmma64x64x64_pp_s8_e1_sw_ks", 165008, 1, 32),
        (125, "wgmma32x64x64_pp_s12_e1_sw_ks", 165072, 1, 16)]
    for c, twin_id in zip(KSPLIT, (37, 115, 113)):
        twin = KERNEL_CONFIGS[twin_id]
        assert replace(c, id=twin.id, index=twin.index, ksplit=False, splitk=twin.splitk) == twin
        assert c.smem_bytes == twin.smem_bytes + 16 + 4 * c.bm * c.bn <= 227 * 1024
        assert not c.cpasync and c.cluster_m == 1 and c.schedule == 2
        # 132 SMs, 264 tiles: two a block, one a consumer for the twin's ping-pong, two for the k-split's consumers
        assert c.tiles_per_consumer(c.bm * 24, 64 * 11) == 2 and twin.tiles_per_consumer(c.bm * 24, 64 * 11) == 1


def test_swapped_operand_tiles_are_cublas_128x160_in_our_frame():
    """Session 26's swapped ping-pongs: 160 rows of A (wgmma's N) by two 64-column chunks of B (two m64 chains), 160
    accumulators a thread, C staged in 64-column chunks of 160 rows (20 KB); plain TMA kernels only. Session 27's
    192 x 128 and 176 x 128 the same with 192 / 176 rows."""
    assert [(c.id, c.label, c.smem_bytes, c.max_splits, c.accumulators) for c in SWAPPED] == [
        (102, "wgmma160x128x64_pp_s5_e1_sw", 226384, 1, 160), (103, "wgmma160x128x64_pp_s4_e2_sw", 230464, 1, 160),
        # session 27: the taller tiles (wgmma N 192 and 176), 4 slots and one staging buffer a consumer
        (106, "wgmma192x128x64_pp_s4_e1_sw", 214080, 1, 192), (107, "wgmma176x128x64_pp_s4_e1_sw", 201792, 1, 176),
        (110, "wgmma144x128x64_pp_s5_e1_sw", 212048, 1, 144), (112, "wgmma168x128x64_pp_s4_e1_sw", 195648, 1, 168),
        # session 28: the narrow tiles (wgmma N 32 and 64), 12 KB and 20 KB slots, one 4 or 8 KB staging buffer a consumer
        (113, "wgmma32x64x64_pp_s12_e1_sw", 156864, 1, 16), (114, "wgmma32x128x64_pp_s8_e1_sw", 173184, 1, 32),
        (115, "wgmma64x64x64_pp_s8_e1_sw", 148608, 1, 32),
        # session 29: 16 x 64 (wgmma N 16), 16 slots of 10 KB, one 2 KB staging buffer a consumer
        (122, "wgmma16x64x64_pp_s16_e1_sw", 169216, 1, 8)]
    for c in SWAPPED:
        assert c.rows_per_consumer == c.bm and c.chunk_cols == 64 and not c.cpasync and c.cluster_m == 1
        assert c.epilogue_bytes == 2 * c.bm * 128 * c.epi_chunks
        assert c.smem_bytes == 1024 + c.stages * (c.bm + c.bn) * 128 + c.epilogue_bytes + 16 * c.stages <= 227 * 1024
        # a TMA box of bm rows, staging chunks and slots whole 1024-byte swizzle spans (the C static_assert)
        assert c.bm % 8 == 0 and c.bm <= 256 and (c.bm * 128) % 1024 == 0
        assert c.tiles(16384, 16384) == -(-16384 // c.bm) * (16384 // c.bn) and c.tiles(c.bm, c.bn) == 1
    assert [c.tiles(16384, 4096) for c in SWAPPED] == [103 * 32, 103 * 32, 86 * 32, 94 * 32, 114 * 32, 98 * 32,
                                                       512 * 64, 512 * 32, 256 * 64, 1024 * 64]
    # the narrow ones fill the SMs on small outputs without split-K: 128 tiles of 32 x 64 on 512 x 512
    assert [c.tiles(512, 512) for c in SWAPPED if c.bm <= 64] == [128, 64, 64, 256]
    pairs = [c for c in WGMMA_CONFIGS if c.swap and c.cluster_m > 1]  # cuBLAS's 2x1: along N sharing A, along M
    assert [(c.id, c.b_mc, c.lean, c.l2_promo, plain_twin(c).id, c.smem_bytes) for c in pairs] == [
        (104, 5, True, "128B", 102, 226384), (105, 0, True, "128B", 102, 226384),
        (108, 5, True, "128B", 106, 214080), (109, 5, True, "128B", 107, 201792), (111, 5, True, "128B", 110, 212048),
        (116, 0, True, "128B", 113, 156864), (117, 5, True, "128B", 113, 156864)]  # session 28: the 32 x 64 pairs
    assert [c.units(16384, 16384) for c in pairs] == [103 * 64, 52 * 128, 86 * 64, 94 * 64, 114 * 64, 256 * 256, 512 * 128]
    # each CTA of a pair along N multicasts half of A's rows: whole 8-row swizzle atoms (the C static_assert)
    assert all((c.bm // 2) % 8 == 0 for c in pairs if c.pair_along_n)


def test_b3d_configs_are_twins_of_the_64_row_ping_pongs(kernel_lib):
    """Session 17's B3D configs: the tile, ring, staging and shared memory of a measured 64-row ping-pong
    (their twin), "_b3" labels, split-K kept, unmeasured until a GPU run passes them; the library marks
    exactly them as B3D."""
    assert [(c.id, c.label) for c in B3D] == [(50, "wgmma64x128x64_pp_s8_b3"), (51, "wgmma64x192x64_pp_s6_e1_b3"),
                                              (52, "wgmma64x256x64_pp_s4_b3"), (53, "wgmma64x128x128_pp_s4_b3")]
    for c in B3D:
        t = plain_twin(c)
        assert (t.id, t.max_splits) == ({50: 22, 51: 29, 52: 20, 53: 22}[c.id], c.max_splits)
        assert t.bm == 64 and t.schedule == SCHED_PINGPONG
        if c.bk == 64:
            assert c.label == t.label + "_b3" and c.smem_bytes == t.smem_bytes
    deep = B3D[-1]  # 128-deep slots: half the slots of 22, the same ring bytes
    assert (deep.bk, deep.stages) == (128, 4) and deep.smem_bytes - deep.epilogue_bytes < plain_twin(deep).smem_bytes
    # the pair with 128-deep slots: 53's ring, 49's pairing (UNCOND), bitwise 22's results
    assert [(c.id, c.label, c.bk, c.stages, c.uncond, plain_twin(c).id, c.smem_bytes) for c in B3D_PAIR] == [
        (54, "wgmma64x128x128_pp_s4_cm2_u_b3", 128, 4, True, 22, deep.smem_bytes)]
    assert [kernel_lib.cudaopt_wgmma_b3d(c.index) for c in WGMMA_CONFIGS] == [int(c.b3d) for c in WGMMA_CONFIGS]


def test_bt_twins_cover_the_tables_one_cta_configs_and_refuse_the_rest(kernel_lib):
    """The B^T twins (session 39: B given K-major, the TN layout): every config whose plain kernel kBtTwins lists has
    one (the cluster split-K "_cs" and B3D "_b3" twins share their twin's plain kernel), no cluster or k-split config
    does, and the shipped table's most used one-CTA configs, of our frame and the swapped one, are among them. The entry point refuses a
    config without a twin, a short B^T row stride and an unknown config before touching the GPU."""
    import ctypes

    from cudaopt.gemm import _lib

    have = [c.id for c in WGMMA_CONFIGS if _lib.has_bt(c.id, lib=kernel_lib)]
    # split-K twins: where the config has a split-K kernel (not the 192-accumulator ping-pongs 42-43, nor swapped)
    assert [c.id for c in WGMMA_CONFIGS if _lib.has_bt(c.id, 4, lib=kernel_lib)] == [
        18, 19, 20, 21, 22, 25, 26, 27, 28, 32, 33, 34, 35, 37, 38, 46, 50, 52, 80]
    assert have == [18, 19, 20, 21, 22, 25, 26, 27, 28, 32, 33, 34, 35, 37, 38, 42, 43, 46, 50, 52, 80,
                    106, 107, 112, 113, 114, 115, 122]
    by_id = {c.id: c for c in WGMMA_CONFIGS}
    assert not any(by_id[i].cluster_m > 1 or by_id[i].ksplit for i in have)
    assert [i for i in have if by_id[i].swap] == [106, 107, 112, 113, 114, 115, 122]  # the swapped ones the table runs
    assert {18, 21, 22, 25, 27, 37, 38, 42, 43, 113} <= set(have)
    assert not _lib.has_bt(0, lib=kernel_lib) and not _lib.has_bt(10_000, lib=kernel_lib)  # mma; no such config
    f = kernel_lib.cudaopt_hgemm_wgmma_bt
    f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 8 + [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    ok = (16, 16, 16, 256, 256, 256, 256, 256, 256)
    assert f(*ok, by_id[102].index, 1, None, 0, None) == -1  # the 160-row swapped tile: no twin
    assert f(16, 16, 16, 256, 256, 256, 256, 128, 256, by_id[42].index, 1, None, 0, None) == -1  # ldbt < K
    assert f(16, 16, 18, 256, 256, 256, 256, 256, 256, by_id[42].index, 1, None, 0, None) == -1  # C misaligned
    assert f(*ok, 10_000, 1, None, 0, None) == -1
    assert f(*ok, by_id[42].index, 2, 16, 1 << 30, None) == -1  # 42 has no split-K kernel, so no split-K twin
    assert f(*ok, by_id[22].index, 2, None, 0, None) == -1  # split-K without a workspace
    assert f(*ok, by_id[22].index, 2, 16, 64, None) == -1  # ... or with one too small
    assert f(*ok, by_id[22].index, 5, 16, 1 << 30, None) == -1  # more splits than K's 4 k-blocks



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
    for c in CHUNKED:  # epi_chunks buffers of rows_per_consumer x 64 halves per consumer
        twin = next(g for g in GEN2 if (g.bm, g.bn, g.schedule) == (c.bm, c.bn, c.schedule))
        assert c.epilogue_bytes == c.consumers * c.rows_per_consumer * 64 * 2 * c.epi_chunks < twin.epilogue_bytes
        assert (c.bn // 64) % c.epi_chunks == 0  # chunk i of every tile reuses buffer i % epi_chunks
        assert c.stages == twin.stages + 1 and c.smem_bytes <= 227 * 1024
    if shape == (16384, 12288, 1024):  # 192-wide tiles divide 12288: 64 tile columns
        assert [c.tiles(m, n) for c in N192] == [128 * 64, 256 * 64]
    assert [c.tiles(256, 12288) for c in N192] == [128, 256]  # one wave of 132 SMs for 128 x 192
    assert [c.tiles(128, 12288) for c in N192] == [64, 128]  # and for 64 x 192
    assert [c.tiles(12288, 256) for c in M192] == [128, 256] and [c.tiles(12288, 128) for c in M192] == [64, 128]
    pp = next(c for c in GEN2 if c.schedule == 2 and (c.bm, c.bn) == (64, 256))
    if shape == (16384, 2048, 256):  # 2048 tiles on 132 blocks: 16 per block, 8 per consumer
        assert (pp.tiles(m, n), pp.grid(m, n), pp.tiles_per_consumer(m, n)) == (2048, 132, 8)


def test_wgmma_id_filter_limits_the_tuners_candidates(monkeypatch):
    from cudaopt.gemm.configs import enabled_wgmma_configs

    monkeypatch.delenv("CUDAOPT_GEMM_WGMMA_IDS", raising=False)
    all_wg = {c.config for c in candidate_choices(8192, 8192, 4096) if KERNEL_CONFIGS[c.config].kind == "wgmma"}
    from cudaopt.gemm.configs import RETIRED_WGMMA_IDS, UNMEASURED_WGMMA_IDS

    left_out = UNMEASURED_WGMMA_IDS | RETIRED_WGMMA_IDS  # unset: no unrun kernel, no retired one
    assert {c.id for c in GEN2} <= all_wg and not all_wg & left_out
    assert enabled_wgmma_configs() == tuple(c for c in WGMMA_CONFIGS if c.id not in left_out)
    monkeypatch.setenv("CUDAOPT_GEMM_WGMMA_IDS", ",".join(str(c.id) for c in WGMMA_CONFIGS))  # a smoke test passed all
    assert enabled_wgmma_configs() == WGMMA_CONFIGS
    keep = f"{WGMMA_CONFIGS[0].id},{GEN2[-1].id}"
    monkeypatch.setenv("CUDAOPT_GEMM_WGMMA_IDS", keep)
    got = {c.config for c in candidate_choices(8192, 8192, 4096) if KERNEL_CONFIGS[c.config].kind == "wgmma"}
    assert got == {WGMMA_CONFIGS[0].id, GEN2[-1].id}
    assert [c.id for c in enabled_wgmma_configs()] == sorted(got)
    assert any(KERNEL_CONFIGS[c.config].kind == "mma" for c in candidate_choices(256, 256, 256))  # below 1e9 FLOP
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
    # split-K: the most splits each config takes, and the persistent grid for (M, N, splits, #SMs)
    from cudaopt.gemm import _lib

    _lib.declare_wgmma_splitk(kernel_lib)
    for c in WGMMA_CONFIGS:
        assert kernel_lib.cudaopt_wgmma_max_splits(c.index) == c.max_splits, c.label
        assert kernel_lib.cudaopt_wgmma_cluster_size(c.index) == c.cluster_m, c.label
        assert kernel_lib.cudaopt_wgmma_b_mc(c.index) == c.b_mc, c.label
        # (session 24: a config's own L2 promotion of its operand maps, -1 for the library setting)
        assert kernel_lib.cudaopt_wgmma_l2_promo(c.index) == (_lib.L2_PROMOTIONS[c.l2_promo] if c.l2_promo else -1)
        for m, n in [(8, 8), (512, 512), (4104, 1032), (64, 4096), (16384, 16384)]:
            for splits in (1, 2, 5, 16):
                for sms in (1, 7, 132):
                    assert kernel_lib.cudaopt_wgmma_grid(c.index, m, n, splits, sms) == c.grid(m, n, sms, splits)
    assert kernel_lib.cudaopt_wgmma_max_splits(-1) == 0
    assert kernel_lib.cudaopt_wgmma_l2_promo(-1) == kernel_lib.cudaopt_wgmma_l2_promo(len(WGMMA_CONFIGS)) == -2
    assert [c.id for c in WGMMA_CONFIGS if c.l2_promo] == [87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 100, 101, 104, 105, 108, 109, 111,
                                                           116, 117, 118, 119, 120, 121]
    assert [getattr(promo_twin(c), "id", None) for c in WGMMA_CONFIGS if c.l2_promo] == [
        83, 84, 71, 72, 68, 69, 70, None, None, 74, None, None, None, None, None, None, None, None, None, 64, 76, None, None]
    # the pairs with split-K (session 28) are 93 and 90 with a split-K kernel: every other field equal
    assert [next(d.id for d in CLUSTER if replace(d, id=c.id, index=c.index, cluster_splitk=True) == c)
            for c in SPLITK_PAIRS] == [93, 90]
    assert kernel_lib.cudaopt_wgmma_max_splits(len(WGMMA_CONFIGS)) == 0
    assert kernel_lib.cudaopt_wgmma_grid(len(WGMMA_CONFIGS), 64, 64, 1, 132) == -1


def test_the_cpasync_producer_is_taken_where_rows_are_not_128_byte_aligned(kernel_lib):
    """cudaopt_wgmma_set_cpasync / _uses_cpasync are host code: mode 1 takes cp.async where lda or ldb
    is not a multiple of 64 halves, mode 2 everywhere, 0 nowhere; never on generation 1 or the 2x1
    cluster configs (their producers are TMA only)."""
    gen2 = next(c for c in WGMMA_CONFIGS if c.schedule != 0 and c.cluster_m == 1)
    others = [c for c in WGMMA_CONFIGS if c.schedule == 0 or c.cluster_m > 1]
    assert others
    try:
        kernel_lib.cudaopt_wgmma_set_cpasync(1)
        assert [kernel_lib.cudaopt_wgmma_uses_cpasync(gen2.index, lda, ldb) for lda, ldb in
                ((4096, 4096), (4088, 4096), (4096, 4104), (1032, 520), (64, 128))] == [0, 1, 1, 1, 0]
        assert all(kernel_lib.cudaopt_wgmma_uses_cpasync(c.index, 4088, 4104) == 0 for c in others)
        kernel_lib.cudaopt_wgmma_set_cpasync(2)
        assert kernel_lib.cudaopt_wgmma_uses_cpasync(gen2.index, 4096, 4096) == 1
        kernel_lib.cudaopt_wgmma_set_cpasync(7)  # unknown: off
        assert kernel_lib.cudaopt_wgmma_uses_cpasync(gen2.index, 4088, 4104) == 0
        assert kernel_lib.cudaopt_wgmma_uses_cpasync(-1, 64, 64) == -1
    finally:
        kernel_lib.cudaopt_wgmma_set_cpasync(0)


def test_cpasync_mode_comes_from_the_environment(monkeypatch):
    from cudaopt.gemm import _lib

    monkeypatch.delenv("CUDAOPT_GEMM_CPASYNC", raising=False)
    assert _lib.cpasync_mode() == 0
    monkeypatch.setenv("CUDAOPT_GEMM_CPASYNC", "1")
    assert _lib.cpasync_mode() == 1
    monkeypatch.setenv("CUDAOPT_GEMM_CPASYNC", "yes")
    with pytest.raises(_lib.GemmError, match="CUDAOPT_GEMM_CPASYNC"):
        _lib.cpasync_mode()


def test_debug_cluster_comes_from_the_environment_and_refuses_other_values(monkeypatch):
    from cudaopt.gemm import _lib

    monkeypatch.delenv("CUDAOPT_GEMM_DEBUG_CLUSTER", raising=False)
    assert _lib.debug_cluster() == (1, 0)
    for raw, want in (("2", (2, 0)), ("2,1", (2, 1)), ("1,2", (1, 2)), (" ", (1, 0))):
        monkeypatch.setenv("CUDAOPT_GEMM_DEBUG_CLUSTER", raw)
        assert _lib.debug_cluster() == want
    for raw in ("two", "0", "9", "2,3", "2,x"):
        monkeypatch.setenv("CUDAOPT_GEMM_DEBUG_CLUSTER", raw)
        with pytest.raises(_lib.GemmError, match="CUDAOPT_GEMM_DEBUG_CLUSTER"):
            _lib.debug_cluster()


# ---- split-K: the work-item decomposition, workspace, refusals (compiled host code, no GPU) -----


def _items_cover_each_tile_k_block_once(num_tiles, splits, k_blocks, grid, item_fn):
    """Walk every persistent block's item sequence as the kernel does; return per-item counts."""
    seen = {}
    counts = []
    walked = 0
    for block in range(grid):
        for w in range(block, num_tiles * splits, grid):
            tile, split, first, count = item_fn(w)
            walked += 1
            assert 0 <= tile < num_tiles and 0 <= split < splits and count >= 1
            counts.append(count)
            for kb in range(first, first + count):
                assert 0 <= kb < k_blocks
                assert (tile, kb) not in seen, f"(tile {tile}, k-block {kb}) twice: items {seen[(tile, kb)]} and {w}"
                seen[(tile, kb)] = w
    assert walked == num_tiles * splits  # every item walked by exactly one block
    assert len(seen) == num_tiles * k_blocks  # ... and every (tile, k-block) by exactly one item
    return counts


def _decomposition_cases():
    import random

    rng = random.Random(5)
    cases = [(1, 1, 1, 1), (1, 16, 16, 16), (1, 16, 32, 16), (32, 16, 64, 132), (32, 4, 64, 128),
             (17, 3, 5, 51), (131, 2, 4, 132), (4, 7, 17, 28), (200, 16, 16, 132), (3, 5, 5, 2)]
    for _ in range(300):
        splits = rng.randint(1, WGMMA_MAX_SPLITS)
        k_blocks = rng.randint(splits, 300)
        num_tiles = rng.randint(1, 300)
        grid = min(rng.choice([1, 2, 3, 7, 64, 131, 132]), num_tiles * splits)
        cases.append((num_tiles, splits, k_blocks, grid))
    return cases


def test_work_items_cover_every_tile_and_k_block_once():
    """Python mirror: for many tile counts, splits (1..16, k-blocks >= splits) and grid sizes, the
    persistent blocks' item sequences cover every (tile, k-block) exactly once, the k-ranges of a
    tile's splits are contiguous and balanced (counts differ by at most 1, each >= 1)."""
    for num_tiles, splits, k_blocks, grid in _decomposition_cases():
        counts = _items_cover_each_tile_k_block_once(
            num_tiles, splits, k_blocks, grid, lambda w, a=(num_tiles, splits, k_blocks): work_item(w, *a))
        assert max(counts) - min(counts) <= 1 and min(counts) == k_blocks // splits
        for tile in range(min(num_tiles, 5)):
            ranges = [work_item(s * num_tiles + tile, num_tiles, splits, k_blocks)[2:] for s in range(splits)]
            assert ranges[0][0] == 0 and sum(c for _, c in ranges) == k_blocks
            assert all(ranges[i][0] + ranges[i][1] == ranges[i + 1][0] for i in range(splits - 1))
        # block_items is what each role of a block walks (producer: all; ping-pong consumer c: every other)
        for block in {0, grid - 1}:
            items = block_items(block, grid, num_tiles, splits, k_blocks)
            assert items == [work_item(w, num_tiles, splits, k_blocks) for w in range(block, num_tiles * splits, grid)]


@pytest.mark.timeout(120)
def test_compiled_work_items_match_the_mirror_and_cover_once(kernel_lib):
    """The device code's work_item (compiled for the host as cudaopt_wgmma_work_item) gives the same
    items as the mirror, so the coverage above holds for the kernels' own arithmetic; it refuses what
    the launcher refuses (splits above k-blocks or 16, items out of range)."""
    import ctypes

    from cudaopt.gemm import _lib

    _lib.declare_wgmma_splitk(kernel_lib)
    buf = (ctypes.c_int * 4)()

    def compiled(w, num_tiles, splits, k_blocks):
        assert kernel_lib.cudaopt_wgmma_work_item(w, num_tiles, splits, k_blocks, buf) == 0
        return tuple(buf)

    for num_tiles, splits, k_blocks, grid in _decomposition_cases()[:120]:
        _items_cover_each_tile_k_block_once(num_tiles, splits, k_blocks, grid,
                                            lambda w, a=(num_tiles, splits, k_blocks): compiled(w, *a))
        for w in range(0, num_tiles * splits, max(1, num_tiles * splits // 40)):
            assert compiled(w, num_tiles, splits, k_blocks) == work_item(w, num_tiles, splits, k_blocks)
    # the largest K an int holds: s * k_blocks stays in range for 16 splits
    big = wgmma_k_blocks(2**31 - 8)
    for w in range(16):
        assert compiled(w, 1, 16, big) == work_item(w, 1, 16, big)
    for args in [(0, 1, 0, 4), (0, 1, 5, 4), (0, 1, 65, 128), (0, 0, 1, 4), (-1, 2, 2, 4), (4, 2, 2, 4)]:
        assert kernel_lib.cudaopt_wgmma_work_item(*args, buf) == -1, args


def _streamk_cases():
    import random

    rng = random.Random(47)
    # (num_tiles, grid, k_blocks): 6.06 waves of 132 (8 tail tiles), 7.76 (100: one split), one wave and a few tiles,
    # whole waves, fewer k-blocks than splits, one k-block, and random ones (grid <= num_tiles, as the launcher's)
    cases = [(800, 132, 64), (1024, 132, 64), (136, 132, 16), (264, 132, 7), (133, 132, 3), (133, 132, 1),
             (2, 1, 3), (5, 3, 1), (263, 132, 128), (1056, 132, 64)]
    for _ in range(300):
        grid = rng.choice([1, 2, 3, 7, 64, 131, 132])
        cases.append((rng.randint(grid, 5 * grid + 3), grid, rng.randint(1, 300)))
    return cases


def _check_streamk_cover(num_tiles, grid, k_blocks, splits, items_of):
    """Every (tile, k-block) covered once; the whole waves round-robin as the plain kernel's; a tail tile cut in
    `splits` contiguous balanced ranges, split z on CTA (tile's tail index) + z r; at most one tail item a CTA."""
    from collections import defaultdict

    waves, r = divmod(num_tiles, grid)
    parts = defaultdict(list)
    for b in range(grid):
        items = items_of(b)
        assert items[:waves] == [(t, 0, k_blocks, -1) for t in range(b, waves * grid, grid)]
        assert len(items) - waves == (1 if b < r * splits else 0)
        for tile, first, count, split in items:
            assert count >= 1 and 0 <= first and first + count <= k_blocks
            parts[tile].append((first, count, split, b))
    assert sorted(parts) == list(range(num_tiles))
    for tile, ps in parts.items():
        ps.sort()
        assert ps[0][0] == 0 and sum(c for _, c, _, _ in ps) == k_blocks
        assert all(ps[i][0] + ps[i][1] == ps[i + 1][0] for i in range(len(ps) - 1))
        if tile < waves * grid or splits == 1:
            assert len(ps) == 1 and ps[0][2] == -1
        else:
            t = tile - waves * grid
            assert [(z, b) for _, _, z, b in ps] == [(z, t + z * r) for z in range(splits)]
            assert max(c for _, c, _, _ in ps) - min(c for _, c, _, _ in ps) <= 1


def test_streamk_items_cover_every_tile_and_k_block_once():
    from cudaopt.gemm.configs import sk_items, sk_tail_splits

    for num_tiles, grid, k_blocks in _streamk_cases():
        for splits in {1, sk_tail_splits(grid, num_tiles, k_blocks), sk_tail_splits(grid, num_tiles, k_blocks, 64)}:
            _check_streamk_cover(num_tiles, grid, k_blocks, splits,
                                 lambda b, a=(grid, num_tiles, k_blocks, splits): sk_items(b, *a))
    # 6.06 waves of 132: 8 tail tiles, 16 splits possible, 8 by default; 7.76 waves: 100 tail tiles, no split
    assert sk_tail_splits(132, 800, 64) == 8 and sk_tail_splits(132, 800, 64, 64) == 16
    assert sk_tail_splits(132, 1024, 64) == 1 and sk_tail_splits(132, 1056, 64) == 1
    assert sk_tail_splits(132, 800, 5) == 5  # no more splits than k-blocks
    assert sk_items(9, 132, 800, 64, 8) == [(t, 0, 64, -1) for t in range(9, 792, 132)] + [(793, 8, 8, 1)]
    assert sk_items(64, 132, 800, 64, 8) == [(t, 0, 64, -1) for t in range(64, 792, 132)]  # past the tail's 64 items


@pytest.mark.timeout(120)
def test_compiled_streamk_items_match_the_mirror(kernel_lib):
    """The device code's sk_item and sk_tail_splits (compiled for the host) give the mirror's items and split counts,
    so the coverage above holds for the kernel's own arithmetic; they refuse what no launch makes; the twins and
    their workspace (a counter per tail tile and consumer, rounded to 256 bytes, then a BM x BN fp32 slot per CTA)."""
    import ctypes

    from cudaopt.gemm import _lib
    from cudaopt.gemm.configs import sk_items, sk_tail_splits

    _lib.declare_wgmma_splitk(kernel_lib)
    buf = (ctypes.c_int * 4)()

    def compiled(b, grid, num_tiles, k_blocks, splits):
        n = kernel_lib.cudaopt_wgmma_sk_item(b, 0, grid, num_tiles, k_blocks, splits, buf)
        out = [tuple(buf)] if n > 0 else []
        for j in range(1, n):
            assert kernel_lib.cudaopt_wgmma_sk_item(b, j, grid, num_tiles, k_blocks, splits, buf) == n
            out.append(tuple(buf))
        return out

    for num_tiles, grid, k_blocks in _streamk_cases()[:150]:
        for most in (1, 8, 64):
            splits = kernel_lib.cudaopt_wgmma_sk_tail_splits(grid, num_tiles, k_blocks, most)
            assert splits == sk_tail_splits(grid, num_tiles, k_blocks, most)
            for b in range(grid):
                assert compiled(b, grid, num_tiles, k_blocks, splits) == sk_items(b, grid, num_tiles, k_blocks, splits)
    # K near 2^31: the split's k-block arithmetic in 64 bits
    big = wgmma_k_blocks(2**31 - 8)
    assert compiled(131, 132, 133, big, 8) == sk_items(131, 132, 133, big, 8)
    for args in [(0, 0, 0, 4, 8, 1), (0, 0, 5, 4, 8, 1), (4, 0, 4, 4, 8, 1), (0, 9, 4, 4, 8, 1), (0, 0, 2, 4, 0, 1),
                 (0, 0, 132, 800, 64, 17), (0, 0, 132, 800, 64, 0)]:
        assert kernel_lib.cudaopt_wgmma_sk_item(*args, buf) == -1, args
    with_twin = [c for c in WGMMA_CONFIGS if kernel_lib.cudaopt_wgmma_has_streamk(c.index)]
    # (the cluster split-K configs share their twins' plain kernel, so its stream-K twin too)
    assert {c.label for c in with_twin} == {"wgmma128x256x64_c2_s3_tma", "wgmma128x256x64_c2_s4_tma_e2",
                                            "wgmma256x128x64_c2_s4_tma_e1", "wgmma128x192x64_c2_s5_tma_e1",
                                            "wgmma128x256x64_c2_s4_tma_e2_cs", "wgmma128x192x64_c2_s5_tma_e1_cs"}
    for c in WGMMA_CONFIGS:
        want = (-(-132 * c.consumers * 4 // 256) * 256 + 132 * c.bm * c.bn * 4) if c in with_twin else 0
        assert kernel_lib.cudaopt_wgmma_streamk_workspace_bytes(c.index, 132) == want, c.label
        assert _lib.streamk_workspace_bytes(c.id, 132, kernel_lib) == want
        assert _lib.has_streamk(c.id, kernel_lib) == (c in with_twin) == c.has_streamk_twin


@pytest.mark.timeout(120)
def test_compiled_workspace_bytes_match_the_python_side(kernel_lib):
    import ctypes

    from cudaopt.gemm import _lib

    _lib.declare_wgmma_splitk(kernel_lib)
    for m, n, splits in [(64, 64, 1), (64, 64, 2), (512, 512, 16), (1000, 520, 7), (65536, 65536, 16), (8, 8, 0)]:
        partials = splits * m * n * 4 if splits > 1 else 0
        counters = kernel_lib.cudaopt_wgmma_counter_bytes(m, n)
        assert counters == _lib.counter_bytes(m, n) and counters % 256 == 0
        # one counter per (tile, consumer) of any config: tiles of 64+ rows and columns, c consumers
        # only on 64c+ rows
        assert counters >= 4 * max(c * -(-m // (64 * c)) * -(-n // 64) for c in (1, 2, 3))
        want = counters + partials if partials else 0
        assert kernel_lib.cudaopt_wgmma_workspace_bytes(m, n, splits) == want == _lib.workspace_bytes(m, n, splits)
        kernel_lib.cudaopt_hgemm_workspace_bytes.argtypes = [ctypes.c_int] * 3
        kernel_lib.cudaopt_hgemm_workspace_bytes.restype = ctypes.c_size_t
        # the mma path takes the partials part, after the counter block (launch_ours skips it)
        assert kernel_lib.cudaopt_hgemm_workspace_bytes(m, n, splits) == partials


@pytest.mark.timeout(120)
def test_splitk_launcher_refuses_bad_arguments(kernel_lib):
    """cudaopt_hgemm_wgmma_splitk returns -1 before any CUDA call for: splits < 1, above 16, above the
    k-blocks of K, any split count > 1 on a generation-1 config, a null / misaligned / too small
    workspace; and the plain launcher's refusals hold through it too. Fake device addresses."""
    from cudaopt.gemm import _lib

    f = _lib.declare_wgmma_splitk(kernel_lib).cudaopt_hgemm_wgmma_splitk
    a, b, c, ws = 0x7F0000000000, 0x7F0000100000, 0x7F0000200000, 0x7F0001000000
    m, n, k = 512, 64, 2048  # 32 k-blocks
    need = 4 * m * n * 4
    gen1 = next(c_ for c_ in WGMMA_CONFIGS if c_.schedule == 0)
    for cfg in [c_ for c_ in WGMMA_CONFIGS if c_.schedule != 0]:
        i = cfg.index
        bad = [
            (a, b, c, m, n, k, k, n, n, i, 0, ws, need),          # splits < 1
            (a, b, c, m, n, k, k, n, n, i, -2, ws, need),
            (a, b, c, m, n, k, k, n, n, i, 65, ws, 65 * m * n * 4),  # above kWgmmaMaxSplits
            (a, b, c, m, n, 128, 128, n, n, i, 4, ws, need),      # 2 k-blocks, 4 splits
            (a, b, c, m, n, 72, 72, n, n, i, 3, ws, need),        # 2 k-blocks (72 = 64 + 8), 3 splits
            (a, b, c, m, n, k, k, n, n, i, 4, 0, need),           # no workspace
            (a, b, c, m, n, k, k, n, n, i, 4, ws + 8, need),      # workspace not 16-byte aligned
            (a, b, c, m, n, k, k, n, n, i, 4, ws, need - 1),      # workspace too small
            (a, b, c + 8, m, n, k, k, n, n, i, 4, ws, need),      # C misaligned
            (a, b, c, m, n, k, k, n, n + 4, i, 4, ws, need),      # ldc * 2 not a multiple of 16
            (a, b, c, m, n + 4, k, k, n + 8, n + 8, i, 4, ws, need * 2),  # N % 8
            (a, b, c, 0, n, k, k, n, n, i, 4, ws, need),          # empty M
        ]
        for args in bad:
            assert f(*args, None) == -1, (cfg.label, args)
    assert f(a, b, c, m, n, k, k, n, n, gen1.index, 2, ws, need, None) == -1  # generation 1: no split-K
    for cfg_index in (-1, len(WGMMA_CONFIGS)):
        assert f(a, b, c, m, n, k, k, n, n, cfg_index, 1, 0, 0, None) == -1


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
# A hand transcription of wgmma2_body's producer and consumer loops (the parts that touch the
# mbarriers, wgmma groups and named barriers), run under random interleavings with asynchronous TMA
# completion and asynchronous wgmma-group completion. A block's work sequence is a list of items
# with their k-block counts `kbs`: all equal (k_tiles) without split-K; with split-K the counts of
# the balanced k-ranges, which differ by one between splits (SPLITK: consumer 1 starts at
# position kbs[0], a ping-pong consumer skips the other's item by adding its count kbs[j + 1]). mbarriers follow the PTX rules: a phase
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


def _simulate(kbs, stages, pingpong, seed):
    import random

    rng = random.Random(seed)
    tiles = len(kbs)  # the block's work items, in order; kbs[j] = k-blocks of item j
    starts = [sum(kbs[:j]) for j in range(tiles)]  # ring position of item j's first k-block
    slot_bytes = 1000
    full = [_MBar(1) for _ in range(stages)]
    empty = [_MBar(4 if pingpong else 8) for _ in range(stages)]
    order = {1: _NamedBar(256), 2: _NamedBar(256)}  # kBarOrder + consumer
    content = [None] * stages  # ring position whose data the slot holds
    readers = [0] * stages  # wgmma groups issued on the slot and not completed yet
    tma_queue = []  # (slot, position) issued, not landed
    groups = {0: [], 1: []}  # per consumer warpgroup: slots of its uncompleted wgmma groups (in order)
    issued = []  # (consumer, item ordinal, kt) in issue order

    def producer():
        slot, phase = 0, 0
        for j in range(tiles):
            for kt in range(kbs[j]):
                yield lambda s=slot, p=phase: empty[s].passed(p ^ 1)
                assert readers[slot] == 0, "TMA refills a slot an in-flight wgmma still reads"
                full[slot].arrive(1, expect_tx=slot_bytes)
                tma_queue.append((slot, starts[j] + kt))
                slot += 1
                if slot == stages:
                    slot, phase = 0, phase ^ 1

    def consumer(c):
        pos = kbs[0] if pingpong and c == 1 else 0
        first, step = (c, 2) if pingpong else (0, 1)
        for j in range(first, tiles, step):
            if pingpong and j != 0:
                bar = order[1 + c]
                gen = bar.generation
                bar.arrive(128)
                yield lambda b=bar, g=gen: b.generation > g
            prev = None
            for kt in range(kbs[j]):
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
            if pingpong and j + 1 < tiles:  # item + gridDim.x < num_items
                order[1 + (c ^ 1)].arrive(128)
            yield lambda: not groups[c]  # wgmma.wait_group 0
            if kbs[j] > 0:
                empty[prev].arrive(4)
            if pingpong and j + 1 < tiles:  # skip the other consumer's item
                pos += kbs[j + 1]

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
    assert not alive, f"deadlock: actors {alive} blocked (kbs={kbs}, stages={stages})"
    assert not tma_queue and not groups[0] and not groups[1]
    assert all(b.arrived == 0 for b in order.values()), "a turn barrier was left half-arrived"
    every = [(j, kt) for j in range(tiles) for kt in range(kbs[j])]
    if pingpong:  # every (item, kt) issued once, by the consumer owning the item, items in turn
        assert sorted((j, kt) for _, j, kt in issued) == every
        assert all(c == j % 2 for c, j, _ in issued)
        seq = [j for _, j, _ in issued]
        assert seq == sorted(seq), "the two consumers' mainloops interleaved"
    else:  # cooperative: both consumers issue every (item, kt)
        assert sorted(issued) == sorted((c, j, kt) for c in (0, 1) for j, kt in every)


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
                    _simulate([k_tiles] * tiles, stages, pingpong, seed)


def _split_k_block_sequences():
    """(k-block counts of one block's items, stages): random unequal counts (1 up to past two rings,
    the launcher allows one k-block per split), and the sequences real decompositions give a block."""
    import random

    rng = random.Random(11)
    stage_counts = sorted({c.stages for c in GEN2} | {2})
    out = []
    for stages in stage_counts:
        for _ in range(25):
            out.append(([rng.randint(1, 2 * stages + 3) for _ in range(rng.randint(1, 6))], stages))
        for kbs in ([1, 2, 1, 2, 1], [stages + 1, stages, stages + 1], [2 * stages + 1, 1, 2 * stages + 1, 1],
                    [1] * 5, [stages - 1 or 1, stages + 1] * 2):
            out.append((kbs, stages))
    for num_tiles, splits, k_blocks, grid in [(3, 5, 13, 4), (1, 16, 33, 5), (7, 3, 8, 6), (32, 8, 67, 96),
                                              (2, 7, 30, 3), (5, 4, 9, 2)]:
        for block in range(min(grid, 3)):
            kbs = [count for _, _, _, count in block_items(block, grid, num_tiles, splits, k_blocks)]
            assert len(set(kbs)) <= 2
            for stages in stage_counts:
                out.append((kbs, stages))
    return out


@pytest.mark.parametrize("pingpong", [False, True], ids=["coop", "pingpong"])
def test_split_k_protocol_model_with_unequal_k_block_counts(pingpong):
    """Split-K items of different k-block counts in one block's sequence: no deadlock, no parity
    alias, no refill under an in-flight wgmma, no half-arrived turn barrier, each (item, k-block)
    issued once (ping-pong: by the item's owner, items in turn)."""
    cases = _split_k_block_sequences()
    assert any(len(set(kbs)) > 1 for kbs, _ in cases)
    for kbs, stages in cases:
        for seed in range(6):
            _simulate(kbs, stages, pingpong, seed)


def _mutated_model(old: str, new: str):
    import inspect
    import textwrap

    src = textwrap.dedent(inspect.getsource(_simulate))
    assert src.count(old) == 1
    ns = dict(globals())
    exec(compile(src.replace(old, new), "<mutated model>", "exec"), ns)  # noqa: S102 - this file's own model, mutated
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
            broken([3, 3, 3], 2, True, seed)
        except AssertionError as err:
            if expect in str(err):
                return
    pytest.fail(f"mutation {new!r} not caught")


@pytest.mark.parametrize("old,new", [
    # the skip uses the consumer's own item's count (right only when all items have equal counts)
    ("pos += kbs[j + 1]", "pos += kbs[j]"),
    # the non-split kernel's accounting (k_tiles for every item) kept for split-K
    ("pos += kbs[j + 1]", "pos += kbs[0]"),
    ("pos = kbs[0] if pingpong and c == 1 else 0", "pos = kbs[1] if pingpong and c == 1 and tiles > 1 else 0"),
])
def test_protocol_model_catches_split_k_accounting_errors(old, new):
    """Ping-pong with unequal counts: a consumer that counts the other's items wrong waits on the
    wrong ring position; the model reports a parity alias or a deadlock. With equal counts the
    same mutations are harmless, which is why split-K needed its own accounting."""
    broken = _mutated_model(old, new)
    for seed in range(6):  # equal counts: the mutation does not change behaviour
        broken([4, 4, 4, 4], 3, True, seed)
    for seed in range(300):
        try:
            broken([2, 5, 3, 6, 2], 3, True, seed)
        except AssertionError as err:
            if "parity aliased" in str(err) or "deadlock" in str(err):
                return
    pytest.fail(f"mutation {new!r} not caught")


# ---- 2x1 clusters (ids 23-24): pair schedule, candidates, two-CTA protocol model ---------------

from cudaopt.gemm.configs import cluster_offered, cluster_sequences, cluster_tile, enabled_wgmma_ids

_CLUSTER_GRIDS = [(1, 1, 1), (1, 5, 3), (2, 1, 1), (3, 3, 2), (5, 7, 4), (17, 3, 66), (33, 9, 66), (16, 16, 66),
                  (129, 64, 66), (128, 48, 66), (9, 2, 5), (2, 40, 7)]


def _check_pair_schedule(tiles_m, tiles_n, clusters, tile_fn, cm=2):
    units = -(-tiles_m // cm) * tiles_n
    seen = {}
    for c in range(clusters):
        for u in range(c, units, clusters):  # every CTA of cluster c walks exactly this sequence
            tiles = [tile_fn(u, r, tiles_m, tiles_n, cm) for r in range(cm)]
            r0, n0 = tiles[0]
            # one B panel per group: one tile column, cm consecutive rows from a multiple of cm
            assert tiles == [(r0 + r, n0) for r in range(cm)] and r0 % cm == 0, (u, tiles)
            assert 0 <= n0 < tiles_n and 0 <= r0 < tiles_m
            for r, _ in tiles:
                if r < tiles_m:
                    assert (r, n0) not in seen, f"tile {(r, n0)} twice"
                    seen[(r, n0)] = c
                else:  # only the last group's ranks past tiles_m (tiles_m % cm != 0) may lie past M
                    assert tiles_m % cm and r0 == tiles_m - tiles_m % cm
    assert set(seen) == {(r, n) for r in range(tiles_m) for n in range(tiles_n)}


@pytest.mark.parametrize("cm", [2, 4], ids=["pairs", "quads"])
@pytest.mark.parametrize("tiles_m,tiles_n,clusters", _CLUSTER_GRIDS)
def test_cluster_pair_schedule_covers_every_tile_once(tiles_m, tiles_n, clusters, cm):
    """Python mirror: every tile exactly once, a cluster's CTAs share a tile column (B panel), tile-row counts
    that are not a multiple of cm leave exactly the last group's ranks past M idle, per-cluster sequences."""
    _check_pair_schedule(tiles_m, tiles_n, clusters, cluster_tile, cm)
    seqs = cluster_sequences(tiles_m, tiles_n, clusters, cm)
    assert sum(len(q) for q in seqs) == -(-tiles_m // cm) * tiles_n
    idle = sum(1 for q in seqs for unit in q for r, _ in unit if r >= tiles_m)
    assert idle == (cm - tiles_m % cm) % cm * tiles_n


@pytest.mark.timeout(120)
def test_compiled_cluster_schedule_matches_the_mirror(kernel_lib):
    """cudaopt_wgmma_cluster_tile is the host copy of the device function the cluster kernels call."""
    import ctypes

    from cudaopt.gemm import _lib

    _lib.declare_wgmma_splitk(kernel_lib)
    buf = (ctypes.c_int * 3)()

    def compiled(u, rank, tiles_m, tiles_n, cm):
        assert kernel_lib.cudaopt_wgmma_cluster_tile(u, rank, tiles_m, tiles_n, cm, buf) == 0
        assert buf[2] == (1 if buf[0] < tiles_m else 0)
        return buf[0], buf[1]

    for cm in (2, 4):  # pairs, and session 24's quads
        for tiles_m, tiles_n, clusters in _CLUSTER_GRIDS:
            _check_pair_schedule(tiles_m, tiles_n, clusters, compiled, cm)
            for u in range(-(-tiles_m // cm) * tiles_n):
                for rank in range(cm):
                    assert compiled(u, rank, tiles_m, tiles_n, cm) == cluster_tile(u, rank, tiles_m, tiles_n, cm)
    for bad in [(-1, 0, 3, 3, 2), (6, 0, 3, 3, 2), (0, 2, 3, 3, 2), (0, -1, 3, 3, 2), (0, 0, 0, 3, 2), (0, 0, 3, 0, 2),
                (0, 4, 5, 3, 4), (6, 0, 5, 3, 4), (0, 0, 3, 3, 3), (0, 0, 3, 3, 8), (0, 0, 3, 3, 1)]:
        assert kernel_lib.cudaopt_wgmma_cluster_tile(*bad, buf) == -1, bad


@pytest.mark.parametrize("shape", [(8, 8, 8), (4104, 1032, 136), (8192, 8192, 8192), (16384, 16384, 16384),
                                   (8200, 4096, 512), (128, 65536, 64)])
def test_cluster_grid_and_candidates(shape):
    m, n, k = shape
    for c in CLUSTER:
        cm = c.cluster_m
        tiles_m, tiles_n = -(-m // c.bm), -(-n // c.bn)
        units = tiles_m * -(-tiles_n // cm) if c.pair_along_n else -(-tiles_m // cm) * tiles_n
        assert c.units(m, n) == units and c.grid(m, n) == cm * min(132 // cm, units) and c.grid(m, n) % cm == 0
        assert c.grid(m, n, num_sms=1) == cm  # one cluster at least (host helper's floor)
        if c.cluster_splitk:  # (session 28) the pairs with split-K: offered on two tile rows, their twin's splits
            assert cluster_offered(c, m, n) == (tiles_m >= 2)
            assert split_choices(c, m, n, k) == split_choices(plain_twin(c), m, n, k)
            assert c.grid(m, n, splits=3) == cm * min(132 // cm, 3 * units)
            continue
        assert split_choices(c, m, n, k) == [1]
        # (the pair along N only where it spans N, but for session 26's swapped one; the quads only where one tile
        # spans the short side: none of these shapes; the tests below)
        offered = cm == 2 and (not c.pair_along_n or c.swap) and c.tiles(m, n) >= 2 * NUM_SMS_H200
        assert cluster_offered(c, m, n) == offered
        enabled = enabled_wgmma_ids()  # configs no GPU has run yet are the tuner's only when named
        assert any(ch.config == c.id for ch in candidate_choices(m, n, k)) == (
            offered and c.bm <= max(2 * m, 32) and c.bn <= max(2 * n, 64) and (enabled is None or c.id in enabled))
        from cudaopt.gemm.bench import wgmma_compare_choices

        assert any(ch.config == c.id for ch in wgmma_compare_choices(m, n, k, WGMMA_CONFIGS)) == offered
    # the non-cluster configs are offered as before
    assert all(cluster_offered(c, 8, 8) for c in WGMMA_CONFIGS if c.cluster_m == 1)


def test_the_64x64_pair_is_offered_on_one_wave_shapes_with_two_tile_rows():
    """Session 20: the 64 x 64 pair targets ~128-tile long-K shapes (one wave), where the larger pairs are
    not offered; it needs two tile rows to share B."""
    pair = next(c for c in CLUSTER if (c.bm, c.bn) == (64, 64))
    big = [c for c in CLUSTER if c.bm * c.bn > 64 * 64 and not c.cluster_splitk]  # (split-K pairs: the test above)
    assert pair.tiles(512, 1024) == 128 < 2 * NUM_SMS_H200
    assert cluster_offered(pair, 512, 1024) and cluster_offered(pair, 4096, 128) and cluster_offered(pair, 128, 64)
    assert not cluster_offered(pair, 64, 8192) and not cluster_offered(pair, 8, 8)  # one tile row: rank 1 idles
    assert not any(cluster_offered(c, 512, 1024) for c in big)
    assert pair.grid(512, 1024) == 128 and pair.units(512, 1024) == 64
    # session 28: 113's pair along N (117) needs two tile columns, its pair along M (116) two tile rows
    along_m, along_n = (next(c for c in CLUSTER if (c.bm, c.bn, c.pair_along_n) == (32, 64, p)) for p in (False, True))
    assert cluster_offered(along_n, 32, 128) and not cluster_offered(along_n, 512, 64)
    assert cluster_offered(along_m, 512, 64) and not cluster_offered(along_m, 32, 128)


def test_the_lean_64_row_pairs_are_offered_where_one_pair_spans_m():
    """Session 22: on the skinny shapes M = 128 the 64-row lean pairs (71-73) split the rows over the two CTAs and
    share the streamed B, however few their tiles; elsewhere the tile-count rule holds (one tile row: no pair)."""
    pairs = [c for c in CLUSTER if c.lean and c.bm == 64 and c.bn > 64 and c.cluster_m == 2 and not c.l2_promo]
    assert [c.id for c in pairs] == [71, 72, 73]
    # (89-90, session 24: 71-72 with 128 B L2 promotion, every other field equal)
    assert [replace(KERNEL_CONFIGS[i], id=j, index=KERNEL_CONFIGS[j].index, l2_promo="") for i, j in ((89, 71), (90, 72))] == [
        KERNEL_CONFIGS[71], KERNEL_CONFIGS[72]] and all(c.b_mc == 0 and c.uncond for c in pairs)
    for c in pairs:
        assert c.tiles(128, 12288) < 2 * NUM_SMS_H200 and cluster_offered(c, 128, 12288)
        assert cluster_offered(c, 100, 4096)  # a partial second row still makes a pair
        assert not cluster_offered(c, 64, 12288)  # one tile row: rank 1 would idle
        assert not cluster_offered(c, 256, 2048)  # two pairs of rows, few tiles: the tile-count rule
    assert next(c for c in pairs if c.bn == 192).units(128, 12288) == 64  # cuBLAS's 128 CTAs


def test_the_pairs_along_n_share_a_where_one_pair_spans_n():
    """Session 22: the mirror of 71-73 for N = 128 (74-76: B mode 5, two horizontally adjacent tiles sharing the
    streamed A): units pair tile columns, and they are offered only where one pair spans N."""
    pairs = [c for c in CLUSTER if c.pair_along_n and c.cluster_m == 2 and not c.l2_promo]  # (96: 74 at 128 B)
    assert [c.id for c in pairs] == [74, 75, 76, 82] and all(c.lean and c.uncond and c.bn == 64 for c in pairs)
    assert [plain_twin(c).id for c in pairs] == [31, 36, 37, 81]  # 82 (session 23): 256 x 64 for M = 16384
    assert [c.units(12288, 128) for c in pairs] == [64, 96, 192, 48] and pairs[0].grid(12288, 128) == 128
    assert pairs[3].units(16384, 128) == 64 and pairs[3].grid(16384, 128) == 128 and pairs[0].units(16384, 128) == 86
    assert KERNEL_CONFIGS[81].smem_bytes == pairs[3].smem_bytes <= 232448 and KERNEL_CONFIGS[81].rows_per_consumer == 128
    assert pairs[0].units(12288, 200) == 64 * 2  # four tile columns (the last partial): two pairs a tile row
    for c in pairs:
        assert cluster_offered(c, 12288, 128) and cluster_offered(c, 4096, 72)  # a partial second column
        assert not cluster_offered(c, 12288, 64) and not cluster_offered(c, 12288, 256)
        assert not cluster_offered(c, 128, 12288)  # pairs along M are 71-73's


def test_the_quads_share_the_small_operand_of_the_64_wide_shapes():
    """Session 24: clusters of four (83: 64 x 128 tiles along N sharing A; 84: 128 x 64 tiles along M sharing B) run
    cuBLAS's 96 CTAs at 64 x 12288 and 12288 x 64, and are offered only where one tile spans the short side and
    the long side fills at least one cluster."""
    quads = [c for c in CLUSTER if c.cluster_m == 4]
    assert [c.id for c in quads] == [83, 84, 85, 86, 87, 88] and all(c.lean and c.uncond for c in quads)
    # 87-88: 83-84 with 128 B L2 promotion of their own (every field but that one equal)
    for a, b in zip(quads[:2], quads[4:]):
        assert b.l2_promo == "128B" and not a.l2_promo and replace(b, id=a.id, index=a.index, l2_promo="") == a
    quads = quads[:4]
    along_n, along_m, along_m_turn, along_n_turn = quads  # (85-86: whole boxes of the shared operand in turn)
    assert along_n.pair_along_n and along_n_turn.pair_along_n and not along_m.pair_along_n and not along_m_turn.pair_along_n
    assert [c.b_mc for c in quads] == [5, 0, 2, 6]
    assert [plain_twin(c).id for c in quads] == [22, 36, 36, 22]
    assert all(c.smem_bytes == plain_twin(c).smem_bytes for c in quads)
    for a, b in [(along_n, along_n_turn), (along_m, along_m_turn)]:  # the same walk and offers
        assert all(a.units(m, n) == b.units(m, n) and a.grid(m, n) == b.grid(m, n) and
                   cluster_offered(a, m, n) == cluster_offered(b, m, n)
                   for m, n in [(64, 12288), (12288, 64), (40, 1000), (1000, 40), (64, 384), (8, 8)])
    assert (along_n.units(64, 12288), along_n.grid(64, 12288)) == (24, 96)
    assert (along_m.units(12288, 64), along_m.grid(12288, 64)) == (24, 96)
    assert (along_n.units(64, 65536), along_n.grid(64, 65536)) == (128, 132)  # 33 clusters at most
    assert along_n.units(40, 1000) == 2 and along_m.units(1000, 40) == 2  # 8 tiles: two quads
    for m, n in [(64, 12288), (64, 512), (33, 4096)]:
        assert cluster_offered(along_n, m, n) and not cluster_offered(along_m, m, n)
        assert cluster_offered(along_m, n, m) and not cluster_offered(along_n, n, m)
    for m, n in [(64, 384), (128, 12288), (65, 4096), (8, 8)]:  # fewer than four tiles, or two along the short side
        assert not cluster_offered(along_n, m, n) and not cluster_offered(along_m, n, m)


# Two-CTA model of the cluster kernel (hgemm_wgmma2_cluster_kernel, transcribed by hand): per CTA a
# producer and two consumers as in _simulate, plus: full barriers expect A (own, local; none for an
# idle CTA) + both B halves (own multicast + the peer's); each producer multicasts its B half to
# both CTAs; empty barriers count both CTAs' consumer warps, each consumer releasing on both CTAs;
# barrier init, then a cluster barrier; a cluster barrier before exit. Pieces land asynchronously,
# in any order, per destination. Checks, besides _simulate's: a piece never lands in a slot whose
# previous position the destination CTA's consumers have not all released (refill before both
# released), nor in an uninitialised or exited CTA, and no arrival reaches an exited CTA.
# The pair along N (B mode 5, session 22) is this protocol with A and B's roles swapped (B own and local, none
# for an idle CTA; A's two halves multicast), and its idle rank 1 (an odd tiles_n) the same liveness pattern.


class _CBar(_MBar):
    """mbarrier whose transaction count may go transiently negative (a peer's multicast bytes can
    land before this CTA's producer's arrive.expect_tx; the phase still needs that arrival)."""

    def complete_tx(self, nbytes):
        self.tx -= nbytes
        self._maybe_complete()


def _simulate_cluster(live, k_tiles, stages, pingpong, seed, cluster_sync=(True, True), uncond=False, turn=False):
    import random

    rng = random.Random(seed)
    units = len(live)  # live[j] = (rank 0 live, rank 1 live, ...) for the cluster's unit j
    cm = len(live[0])  # CTAs in the cluster: 2 (pairs) or 4 (session 24's quads)
    a_bytes, b_half = 1000, 700  # (b_half: the share of B each CTA multicasts, 1 / cm of it)
    per_cta = 4 if pingpong else 8
    empty_count = per_cta * cm
    full = [[_CBar(1) for _ in range(stages)] for _ in range(cm)]
    empty = [[_CBar(empty_count) for _ in range(stages)] for _ in range(cm)]
    order = [{1: _NamedBar(256), 2: _NamedBar(256)} for _ in range(cm)]
    content = [[{} for _ in range(stages)] for _ in range(cm)]  # piece -> ring position, per CTA/slot
    readers = [[0] * stages for _ in range(cm)]
    released = [{} for _ in range(cm)]  # ring position -> consumer warpgroups that released it
    need_release = 1 if pingpong else 2
    inited, exited = [False] * cm, [False] * cm
    cbar = {"init": 0, "exit": 0}
    tma_queue = []  # (destination CTA, slot, position, piece)
    groups = {(x, c): [] for x in range(cm) for c in (0, 1)}
    issued = []

    def remote_arrive(y, s, n):
        assert inited[y] and not exited[y], "arrival on an uninitialised or exited CTA's barrier"
        empty[y][s].arrive(n)

    def start(x, is_producer):
        if is_producer:
            inited[x] = True  # thread 0: mbarrier.init x 2 x stages, fence.mbarrier_init
        yield lambda: inited[x]  # __syncthreads
        cbar["init"] += 1
        if cluster_sync[0]:
            yield lambda: cbar["init"] == 3 * cm  # barrier.cluster.arrive + wait

    def finish():
        cbar["exit"] += 1
        if cluster_sync[1]:
            yield lambda: cbar["exit"] == 3 * cm

    def producer(x):
        yield from start(x, True)
        slot, phase, pos = 0, 0, 0
        for j in range(units):
            for kt in range(k_tiles):
                yield lambda s=slot, p=phase: empty[x][s].passed(p ^ 1)
                full[x][slot].arrive(1, expect_tx=(a_bytes if live[j][x] else 0) + cm * b_half)
                if live[j][x]:
                    tma_queue.append((x, slot, pos, "A"))
                for y in range(cm):  # multicast: this CTA's share of B to every CTA (turn: all of it, its turn only)
                    if not turn:
                        tma_queue.append((y, slot, pos, f"B{x}"))
                    elif kt % cm == x:  # (B mode 2 / 6: CTA kt % CM sends k-block kt's whole box)
                        tma_queue.extend((y, slot, pos, f"B{z}") for z in range(cm))
                pos += 1
                slot += 1
                if slot == stages:
                    slot, phase = 0, phase ^ 1
        yield from finish()

    def consumer(x, c):
        yield from start(x, False)
        pos = k_tiles if pingpong and c == 1 else 0
        first, step = (c, 2) if pingpong else (0, 1)

        def release(s, p):
            released[x][p] = released[x].get(p, 0) + 1
            for y in range(cm):
                remote_arrive(y, s, 4)

        for j in range(first, units, step):
            if pingpong and j != 0:
                bar = order[x][1 + c]
                gen = bar.generation
                bar.arrive(128)
                yield lambda b=bar, g=gen: b.generation > g
            prev = None
            for kt in range(k_tiles):
                slot = pos % stages
                yield lambda s=slot, p=(pos // stages) & 1: full[x][s].passed(p)
                want = {f"B{y}" for y in range(cm)} | ({"A"} if live[j][x] else set())
                got = {piece for piece, p in content[x][slot].items() if p == pos}
                assert want <= got, f"parity aliased or incomplete: CTA {x} slot {slot} has {got} of position {pos}"
                if live[j][x] or uncond:  # UNCOND (session 16): an idle CTA's wgmmas read the slot too
                    readers[x][slot] += 1
                    groups[(x, c)].append(slot)
                    if live[j][x]:
                        issued.append((x, c, j, kt))
                yield lambda: len(groups[(x, c)]) <= 1  # wgmma.wait_group 1
                if kt > 0:
                    release(prev, pos - 1)
                prev = slot
                pos += 1
            if pingpong and j + 1 < units:
                order[x][1 + (c ^ 1)].arrive(128)
            yield lambda: not groups[(x, c)]  # wgmma.wait_group 0
            release(prev, pos - 1)
            if pingpong:
                pos += k_tiles
        yield from finish()

    actors = [(x, f) for x in range(cm) for f in (producer(x), consumer(x, 0), consumer(x, 1))]
    waits = [lambda: True] * len(actors)
    alive = list(range(len(actors)))
    for _ in range(400000):
        ready = [i for i in alive if waits[i]()]
        events = (["tma"] if tma_queue else []) + [key for key, g in groups.items() if g]
        if not ready and not events:
            break
        pick = rng.randrange(len(ready) + len(events))
        if pick >= len(ready):
            ev = events[pick - len(ready)]
            if ev == "tma":  # pieces land in any order, each destination on its own
                y, slot, p, piece = tma_queue.pop(rng.randrange(len(tma_queue)))
                assert inited[y] and not exited[y], "TMA into an uninitialised or exited CTA"
                assert readers[y][slot] == 0, "TMA refills a slot an in-flight wgmma still reads"
                if p >= stages:
                    assert released[y].get(p - stages, 0) == need_release, \
                        f"refill before every CTA released: CTA {y} slot {slot} position {p}"
                content[y][slot][piece] = p
                full[y][slot].complete_tx(a_bytes if piece == "A" else b_half)
            else:
                readers[ev[0]][groups[ev].pop(0)] -= 1
            continue
        i = ready[pick]
        try:
            waits[i] = next(actors[i][1])
        except StopIteration:
            alive.remove(i)
            for x in range(cm):
                if not exited[x] and all(j not in alive for j in range(len(actors)) if actors[j][0] == x):
                    exited[x] = True
    assert not alive, f"deadlock: actors {alive} blocked (live={live}, k={k_tiles}, stages={stages})"
    assert not tma_queue
    every = sorted((x, j, kt) for j in range(units) for x in range(cm) if live[j][x] for kt in range(k_tiles))
    if pingpong:
        assert sorted((x, j, kt) for x, _, j, kt in issued) == every
        assert all(c == j % 2 for _, c, j, _ in issued)
    else:
        assert sorted(issued) == sorted((x, c, j, kt) for x, j, kt in every for c in (0, 1))


def _cluster_live_patterns(cm=2):
    """Per cluster: its units' (rank 0, ..., rank cm - 1) liveness, from real schedules (tiles_m not a multiple of
    cm gives idle ranks on the last group of rows) plus hand-made ones (idle first, idle alternate)."""
    if cm == 2:
        out = [[(True, True)], [(True, False)], [(True, False), (True, True)], [(True, True), (True, False)] * 2,
               [(True, False)] * 3]
        grids = [(3, 3, 2), (5, 2, 3), (1, 4, 2)]
    else:  # session 24's quads
        out = [[(True,) * 4], [(True, False, False, False)], [(True, True, False, False), (True,) * 4]]
        grids = [(5, 3, 2), (6, 2, 3), (3, 2, 1)]
    for tiles_m, tiles_n, clusters in grids:
        for seq in cluster_sequences(tiles_m, tiles_n, clusters, cm):
            if seq:
                out.append([tuple(r < tiles_m for r, _ in unit) for unit in seq])
    return out


@pytest.mark.parametrize("turn", [False, True], ids=["shares", "turns"])
@pytest.mark.parametrize("cm", [2, 4], ids=["pairs", "quads"])
@pytest.mark.parametrize("uncond", [False, True], ids=["branch", "uncond"])
@pytest.mark.parametrize("pingpong", [False, True], ids=["coop", "pingpong"])
def test_cluster_protocol_model_has_no_deadlock_alias_or_early_refill(pingpong, uncond, cm, turn):
    """uncond: the UNCOND configs (48, 49), whose idle CTAs issue wgmmas on the slot too: the TMA of the
    next fill must still wait for their reads (the model asserts no refill under an in-flight read).
    cm = 4: session 24's clusters of four (83, 84), each CTA multicasting a quarter of the shared operand; turn: the
    whole shared box multicast by CTA kt % cm at k-block kt (B modes 2 and 6: 58, 85, 86)."""
    for stages in (2, 3, 5):
        for live in _cluster_live_patterns(cm):
            for k_tiles in (1, 2, stages, stages + 2):
                for seed in range(4):
                    _simulate_cluster(live, k_tiles, stages, pingpong, seed, uncond=uncond, turn=turn)


def _mutated_cluster_model(pairs):
    import inspect
    import textwrap

    src = textwrap.dedent(inspect.getsource(_simulate_cluster))
    for old, new in pairs:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    ns = dict(globals())
    exec(compile(src, "<mutated cluster model>", "exec"), ns)  # noqa: S102 - this file's own model, mutated
    return ns["_simulate_cluster"]


@pytest.mark.parametrize("pairs,expect", [
    # empty barriers collect only the own CTA's consumers: a peer refills a slot this CTA still reads
    ([("empty_count = per_cta * cm", "empty_count = per_cta"), ("for y in range(cm):\n                remote_arrive",
                                                               "for y in (x,):\n                remote_arrive")],
     "refill before every CTA released"),
    # full barrier expects only the bytes this CTA's producer issues (not the peers' multicast shares)
    ([("expect_tx=(a_bytes if live[j][x] else 0) + cm * b_half", "expect_tx=(a_bytes if live[j][x] else 0) + b_half")],
     "incomplete"),
    # no cluster barrier before exit: a CTA leaves while the peer still arrives on its barriers
    ([("cluster_sync=(True, True)", "cluster_sync=(True, False)")], "exited"),
    # no cluster barrier after init: the peer multicasts / arrives before this CTA initialised
    ([("cluster_sync=(True, True)", "cluster_sync=(False, True)")], "uninitialised"),
    # an idle CTA that skips its B half (instead of taking part): the live peer waits forever
    ([("for y in range(cm):  # multicast", "for y in (range(cm) if live[j][x] else ()):  # multicast")], "deadlock"),
])
@pytest.mark.parametrize("cm", [2, 4], ids=["pairs", "quads"])
def test_cluster_protocol_model_catches_breakages(pairs, expect, cm):
    _assert_mutation_caught(pairs, expect, cm)


def test_cluster_protocol_model_catches_a_quad_counting_a_pairs_releases():
    """Session 24: a quad's empty barriers must count all four CTAs' consumers (a pair's count lets a producer refill
    a slot two of the four still read)."""
    _assert_mutation_caught([("empty_count = per_cta * cm", "empty_count = per_cta * 2")],
                            "refill before every CTA released", 4)


def test_cluster_protocol_model_catches_an_idle_cta_skipping_its_turn():
    """B modes 2 and 6 (whole boxes in turn): an idle CTA must still send the k-blocks of its turn."""
    for cm in (2, 4):
        _assert_mutation_caught([("elif kt % cm == x:", "elif kt % cm == x and live[j][x]:")], "deadlock", cm, turn=True)


def _assert_mutation_caught(pairs, expect, cm, **kw):
    broken = _mutated_cluster_model(pairs)
    idle = (True,) + (False,) * (cm - 1)
    for seed in range(400):
        for pingpong in (False, True):
            try:
                broken([(True,) * cm, idle, (True,) * cm], 3, 2, pingpong, seed, **kw)
            except AssertionError as err:
                if expect in str(err):
                    return
    pytest.fail(f"mutation {pairs!r} not caught")


def _load_repo_script(rel: str):
    """A script or benchmark of this repository (not a package module) loaded as a module, for its helpers."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / rel
    spec = importlib.util.spec_from_file_location(f"repo_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (a dataclass resolves its module's annotations through sys.modules)
    spec.loader.exec_module(mod)
    return mod


def test_gemm_ncu_reads_the_raw_csv_and_ranks_stalls():
    """scripts/gemm_ncu.py's table from `ncu --csv --page raw` text (the GPU run is gpu_check.sh gemm_ncu)."""
    mod = _load_repo_script("scripts/gemm_ncu.py")
    text = "\n".join([
        "==PROF== Connected to process 1",
        '"ID","Kernel Name","gpu__time_duration.sum","launch__cluster_dim_x",'
        '"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",'
        '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",'
        '"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",'
        '"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",'
        '"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active","lts__t_sector_hit_rate.pct"',
        '"","","nsecond","","ratio","ratio","ratio","%","%","%"',
        '"0","k","1,053,820","2","0.5","2.25","n/a","0","71.25","88.5"',
        "==PROF== Disconnected",
    ])
    rows = mod.rows_of(text)
    assert [r["ID"] for r in rows] == ["0"]  # the units row is not a kernel
    s = mod.summary(rows[0], top=1)
    assert s["time us"] == "1053.8" and s["cluster"] == "2"
    assert s["stalls"] == "long_scoreboard 2.25"  # the largest only, the unreadable one skipped
    assert s["tensor %"] == "71.2" and s["L2 hit %"] == "88.5"  # the busiest tensor pipe column
    # --breakdown (session 34): the busiest units by percent of peak, elapsed; unreadable values skipped
    units = {"l1tex__data_pipe_lsu_wavefronts.max.pct_of_peak_sustained_elapsed": "85.04",
             "sm__throughput.avg.pct_of_peak_sustained_elapsed": "84.2", "lts__throughput.avg.pct_of_peak_sustained_elapsed": "n/a",
             "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": "93.3"}
    assert mod.busiest(units, 2) == "l1tex__data_pipe_lsu_wavefronts.max 85.0, sm__throughput.avg 84.2"
    assert mod.parse_config("22") == (22, 1) and mod.parse_config("25:4") == (25, 4)
    assert mod.parse_config("torch") == (-1, 1)  # torch.matmul's cuBLAS kernel
    assert mod.parse_config("lt:3") == (mod.LT, 3)  # cuBLASLt's algorithm 3 (session 25)
    for bad in ("lt:", "lt:x", "lt:-1"):
        with pytest.raises(SystemExit, match="lt:"):
            mod.parse_config(bad)
    for bad in ("x", "25:", "25:0", "25:two"):
        if bad == "25:":
            assert mod.parse_config(bad) == (25, 1)  # an empty split count is one split
            continue
        with pytest.raises(SystemExit, match="--configs"):
            mod.parse_config(bad)


def test_gemm_ncu_keeps_only_the_extra_metrics_ncu_lists(tmp_path, capsys):
    """--metrics: a name whose base `ncu --query-metrics` does not list is dropped with a note (ncu would
    refuse the whole profile for it); the rollup suffix is not part of the match."""
    mod = _load_repo_script("scripts/gemm_ncu.py")
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nprintf 'Device GH100\\nMetric Name   Metric Description\\n"
                    "lts__t_sectors_srcunit_tex_op_read   # of sectors read\\ndram__bytes_read   # of bytes\\n'\n")
    fake.chmod(0o755)
    got = mod.known_metrics(str(fake), ["lts__t_sectors_srcunit_tex_op_read.sum", "made_up__metric.sum",
                                        "dram__bytes_read.sum.per_second"])
    assert got == ["lts__t_sectors_srcunit_tex_op_read.sum", "dram__bytes_read.sum.per_second"]
    assert "made_up__metric.sum not listed" in capsys.readouterr().out
    assert mod.known_metrics(str(tmp_path / "absent"), []) == []  # nothing asked: ncu is not run


def test_gemm_ncu_passes_clock_control_and_call_count_to_ncu(tmp_path, monkeypatch, capsys):
    """--clock-control and --calls reach ncu's command line (launch-skip counts the calls before the profiled
    one) and the child's; an lt:ALGO candidate asks the build for the cuBLAS library, a bad one stops before it."""
    import sys

    from cudaopt.gemm import build

    mod = _load_repo_script("scripts/gemm_ncu.py")
    argv_file = tmp_path / "argv.txt"
    fake = tmp_path / "ncu"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {argv_file}\n')
    fake.chmod(0o755)
    built = []
    monkeypatch.setattr(build, "build", lambda with_blas=True: built.append(with_blas))
    monkeypatch.setattr(sys, "argv", ["gemm_ncu.py", "--shape", "4096x4096x512", "--configs", "22", "lt:2",
                                      "--ncu", str(fake), "--clock-control", "none", "--calls", "10"])
    mod.main()
    lines = argv_file.read_text().splitlines()
    assert built == [True] and len(lines) == 2
    for line, child in zip(lines, ("22", "lt:2")):
        assert "--clock-control none" in line and "--launch-skip 9 --launch-count 1" in line
        assert line.endswith(f"--shape 4096x4096x512 --calls 10 --child {child}")
    out = capsys.readouterr().out
    assert "cuBLASLt algo 2: ncu exit 0, 0 kernel rows" in out
    assert f"{KERNEL_CONFIGS[22].label} [id 22]: ncu exit 0" in out  # the id beside the label (not a wgmma index)
    monkeypatch.setattr(sys, "argv", ["gemm_ncu.py", "--configs", "lt:two", "--ncu", str(fake)])
    with pytest.raises(SystemExit, match="lt:two"):
        mod.main()
    assert built == [True]  # the bad candidate stopped it before the build


def test_reduce_benchmark_picks_each_shapes_best_reduce_split_candidate(tmp_path):
    """benchmarks/gemm_reduce_kernels.py's shape list from a screening log: per shape the fastest
    wgmma split-K candidate of 2..8 splits that runs a reduce kernel (not a cluster split-K twin, not
    more splits, not mma, not torch), kept only within `within` of the shape's screened best."""
    import json

    mod = _load_repo_script("benchmarks/gemm_reduce_kernels.py")
    pp = next(c for c in GEN2 if c.schedule == 2 and (c.bm, c.bn) == (64, 128)).label
    cs = next(c for c in CSPLIT if (c.bm, c.bn) == (64, 128)).label
    mma = MMA_CONFIGS[0].label
    log = tmp_path / "tuned.screening.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in [
        {"m": 512, "n": 512, "k": 8192, "rounds": 5, "screen_us": {
            pp: 10.0, f"{pp}_splitk2": 9.0, f"{pp}_splitk4": 8.5, f"{pp}_splitk16": 7.0,
            f"{cs}_splitk2": 6.0, f"{mma}_splitk2": 5.0, "torch": 8.0}},
        {"m": 64, "n": 64, "k": 64, "rounds": 5, "screen_us": {pp: 2.0, "torch": 2.1}},  # no split-K
        {"m": 1024, "n": 64, "k": 4096, "rounds": 5, "screen_us": {f"{pp}_splitk3": 10.0, "torch": 5.0}},
    ]) + "\n")
    assert mod.split_shapes(log, within=0.5) == [((512, 512, 8192), f"{pp}_splitk4", 5.0 / 8.5),
                                                 ((1024, 64, 4096), f"{pp}_splitk3", 0.5)]
    assert mod.split_shapes(log, within=0.1) == []  # 5.0 / 8.5 and 0.5 are both too far off


def test_tuner_times_mma_configs_only_below_1e9_flop(monkeypatch):
    for var in ("CUDAOPT_GEMM_KINDS", "CUDAOPT_GEMM_WGMMA_IDS", "CUDAOPT_GEMM_WGMMA_SPLITK_IDS"):
        monkeypatch.delenv(var, raising=False)
    kinds = lambda shape: {KERNEL_CONFIGS[c.config].kind for c in candidate_choices(*shape)}  # noqa: E731
    assert kinds((256, 256, 256)) == {"mma", "wgmma"}  # 3.4e7 FLOP: both kinds are timed
    assert kinds((512, 512, 1024)) == {"mma", "wgmma"}  # 5.4e8
    assert kinds((1024, 512, 1024)) == {"wgmma"}  # 1.07e9: wgmma only
    assert kinds((16384, 16384, 16384)) == {"wgmma"}
    monkeypatch.setenv("CUDAOPT_GEMM_WGMMA_IDS", "")  # no wgmma config passed the smoke test: mma stays
    assert kinds((4096, 4096, 4096)) == {"mma"}
    monkeypatch.setenv("CUDAOPT_GEMM_KINDS", "mma")
    assert kinds((4096, 4096, 4096)) == {"mma"}


@pytest.mark.timeout(120)
def test_programmatic_launch_switch_without_a_gpu(kernel_lib, monkeypatch):
    """Both kernel families launch with PDL by default; _lib.set_pdl switches both (host state only)."""
    from cudaopt.gemm import _lib

    _lib.declare_wgmma_splitk(kernel_lib)
    assert kernel_lib.cudaopt_hgemm_pdl() == 1 and kernel_lib.cudaopt_wgmma_pdl() == 1
    _lib.set_pdl(False, kernel_lib)
    assert kernel_lib.cudaopt_hgemm_pdl() == 0 and kernel_lib.cudaopt_wgmma_pdl() == 0
    _lib.set_pdl(True, kernel_lib)
    assert kernel_lib.cudaopt_hgemm_pdl() == 1 and kernel_lib.cudaopt_wgmma_pdl() == 1


def test_every_kernel_waits_for_its_predecessor_before_touching_memory():
    """PDL lets a launch start under the previous kernel's tail, so every __global__ function must call
    griddepcontrol.wait (pdl_wait_then_release) first; read from the sources, kernel by kernel. (The compile tests
    check the same on the SASS, path by path: gemm_sass.unguarded_global_ops.)"""
    import re

    from cudaopt.gemm.build import CSRC as CSRC_DIR

    for name in ("hgemm_mma.cu", "hgemm_wgmma.cu"):
        src = (CSRC_DIR / name).read_text()
        # the kernels of the local headers it includes (splitk_reduce.cuh) are compiled into it too
        src += "".join((CSRC_DIR / h).read_text() for h in re.findall(r'#include "(\w+\.cuh)"', src))
        assert name == "hgemm_mma.cu" or "splitk_reduce_chunked_kernel" in src
        kernels = re.findall(r"__global__ void[^{]*?\b(\w+)\s*\(([^)]*)\)\s*\{(.*?)\n\}", src, re.S)
        assert len(kernels) >= 2, name
        # the plain call, a role's (session 31: where the release sits per kernel role), or the reduce kernels' own
        waits = re.compile(r"\bpdl_(reduce_)?wait_then_release(<[^;]*>)?\(\);")
        for kname, _, body in kernels:
            calls_body = re.search(r"\b(wgmma2_body|wgmma2_cluster_body)\b", body)
            if calls_body:  # the body template waits itself, in the split-K kernels as a split-K role
                tmpl = re.search(r"void " + calls_body.group(1) + r"\(.*?\n\}", src, re.S).group(0)
                assert "constexpr PdlRole kRole = SPLITK ? kPdlSplitK : kPdlGemm;" in tmpl, (name, calls_body.group(1))
                # at the top (pdl_top: the release alone, or under CUDAOPT_EXPERIMENT_TOP_WAIT all of it), then
                # (late wait) per role: the producer thread inside produce_tiles*, the other threads at their start
                assert "pdl_top<kRole>();" in tmpl and tmpl.count("pdl_late<kRole>();") >= 2, (name, calls_body.group(1))
                assert len(re.findall(r"kLateWait, kRole(?:, BT)?>\(", tmpl)) >= 1, (name, calls_body.group(1))
            else:
                assert waits.search(body), (name, kname)
                # a split-K reduce keeps wait-then-release: released first it cost long-K split-K shapes 15-17%
                if name == "hgemm_wgmma.cu" and "reduce" in kname:
                    assert "pdl_reduce_wait_then_release();" in body, (name, kname)


def test_split_k_switches_exist_in_the_library_with_their_defaults(kernel_lib, monkeypatch):
    """The host switches the GPU runs flip (chunked reduce, in-kernel fixup) are exported, and
    set_reduce_chunked reaches both families; the chunked reduce is on by default (session 12), the
    fixup off."""
    from cudaopt.gemm import _lib

    _lib.declare_wgmma_splitk(kernel_lib)
    for name in ("cudaopt_hgemm_set_reduce_chunked", "cudaopt_wgmma_set_reduce_chunked",
                 "cudaopt_wgmma_set_splitk_fixup"):
        getattr(kernel_lib, name)(1)
        getattr(kernel_lib, name)(0)
    calls = []

    class Recorder:
        def __getattr__(self, name):
            return lambda on: calls.append((name, on))

    _lib.set_reduce_chunked(True, Recorder())
    assert calls == [("cudaopt_hgemm_set_reduce_chunked", 1), ("cudaopt_wgmma_set_reduce_chunked", 1)]
    src = (CSRC / "hgemm_wgmma.cu").read_text() + (CSRC / "hgemm_mma.cu").read_text()
    assert src.count("g_reduce_chunked{true}") == 2 and "g_splitk_fixup{0}" in src
    assert "g_reduce_fixed{1}" in src  # the fixed-split reduce, one lane a thread (session 13's grid)


def test_fixed_split_reduce_switch_takes_1_2_4_lanes_and_refuses_the_rest(kernel_lib, monkeypatch):
    """CUDAOPT_GEMM_REDUCE_FIXED picks the wgmma fixed-split reduce (1 by default, 0 = off); other values are one clear
    error, and set_reduce_fixed passes the lane count through to the library's switch."""
    from cudaopt.gemm import _lib
    from cudaopt.gemm._lib import GemmError

    _lib.declare_wgmma_splitk(kernel_lib)
    for lanes in (0, 1, 2, 4):
        monkeypatch.setenv("CUDAOPT_GEMM_REDUCE_FIXED", str(lanes))
        assert _lib.reduce_fixed_lanes() == lanes
        _lib.set_reduce_fixed(lanes, kernel_lib)
    kernel_lib.cudaopt_wgmma_set_reduce_fixed(3)  # the library turns unknown values off, never crashes
    kernel_lib.cudaopt_wgmma_set_reduce_fixed(0)
    monkeypatch.delenv("CUDAOPT_GEMM_REDUCE_FIXED")
    assert _lib.reduce_fixed_lanes() == 1
    for bad in ("3", "8", "two"):
        monkeypatch.setenv("CUDAOPT_GEMM_REDUCE_FIXED", bad)
        with pytest.raises(GemmError, match="CUDAOPT_GEMM_REDUCE_FIXED"):
            _lib.reduce_fixed_lanes()
    with pytest.raises(GemmError, match="lanes a thread 3"):
        _lib.set_reduce_fixed(3, kernel_lib)


def test_kernel_library_is_rebuilt_when_an_included_header_changes(tmp_path, monkeypatch):
    """The library is rebuilt when a kernel source or a csrc header (splitk_reduce.cuh) is newer than
    it, and not otherwise (a copy of csrc with set file times; nvcc itself is not run)."""
    import os

    from cudaopt.gemm import build

    csrc = tmp_path / "csrc"
    csrc.mkdir()
    for name in (*build.KERNEL_SOURCES, "splitk_reduce.cuh"):
        (csrc / name).write_text((CSRC / name).read_text())
        os.utime(csrc / name, (1000, 1000))
    calls = []
    monkeypatch.setattr(build, "CSRC", csrc)
    monkeypatch.setattr(build, "find_nvcc", lambda: "nvcc")
    monkeypatch.setattr(build, "_nvcc", lambda cmd: calls.append(cmd))
    lib = tmp_path / build.KERNEL_LIB
    lib.write_bytes(b"")
    os.utime(lib, (2000, 2000))
    build.build(out_dir=tmp_path, with_blas=False)
    assert calls == []  # up to date
    os.utime(csrc / "splitk_reduce.cuh", (3000, 3000))  # only the header changed
    build.build(out_dir=tmp_path, with_blas=False)
    assert len(calls) == 1


def test_library_built_with_other_defines_is_rebuilt(tmp_path, monkeypatch):
    """Session 37: a kernel library carries a stamp of the defines it was built with, and build() rebuilds one whose
    defines differ from those asked for, however new it is: a diagnostic build left in the package's folder (as
    gpu_check's gemm_order phase once did) is never loaded as the shipped library. A failed build leaves no library
    behind to pass for the default (nvcc is not run: a recorder stands in)."""
    from cudaopt.gemm import build

    calls = []

    def fake_nvcc(cmd):
        calls.append(cmd)
        if "-DBREAK" in cmd:
            raise build.BuildError("nvcc failed (test)")
        Path(cmd[cmd.index("-o") + 1]).write_bytes(b"lib")

    monkeypatch.setattr(build, "find_nvcc", lambda: "nvcc")
    monkeypatch.setattr(build, "_nvcc", fake_nvcc)
    lib = tmp_path / build.KERNEL_LIB
    build.build(out_dir=tmp_path, with_blas=False, defines=("CUDAOPT_EXPERIMENT_TOP_WAIT",))
    assert build.built_defines(lib) == ("CUDAOPT_EXPERIMENT_TOP_WAIT",) and len(calls) == 1
    build.build(out_dir=tmp_path, with_blas=False, defines=("CUDAOPT_EXPERIMENT_TOP_WAIT",))
    assert len(calls) == 1  # same defines, sources older: kept
    build.build(out_dir=tmp_path, with_blas=False)  # the default asked for: the variant is not it
    assert len(calls) == 2 and build.built_defines(lib) == () and build.defines_stamp(lib).read_text() == ""
    build.build(out_dir=tmp_path, with_blas=False)
    assert len(calls) == 2
    monkeypatch.setattr(build, "COMMON_FLAGS", [*build.COMMON_FLAGS, "-DGROUP_M=4"])  # (flags appended by hand count)
    build.build(out_dir=tmp_path, with_blas=False)
    assert len(calls) == 3 and build.built_defines(lib) == ("GROUP_M=4",)
    monkeypatch.setenv("CUDAOPT_GEMM_DEFINES", "GROUP_M=4, CUDAOPT_EXPERIMENT_TOP_WAIT")  # (defines=None: these)
    build.build(out_dir=tmp_path, with_blas=False)
    assert len(calls) == 4 and build.built_defines(lib) == ("CUDAOPT_EXPERIMENT_TOP_WAIT", "GROUP_M=4")
    monkeypatch.setenv("CUDAOPT_GEMM_DEFINES", "CUDAOPT_EXPERIMENT_SLOT_DESC")
    with pytest.raises(build.BuildError, match="retired"):
        build.build(out_dir=tmp_path, with_blas=False)
    monkeypatch.delenv("CUDAOPT_GEMM_DEFINES")
    with pytest.raises(build.BuildError):
        build.build(out_dir=tmp_path, with_blas=False, defines=("BREAK",))
    assert not lib.exists() and not build.defines_stamp(lib).exists()


def test_splitk_fixup_mode_reads_the_environment_and_refuses_other_values(monkeypatch):
    from cudaopt.gemm import _lib

    for raw, mode in [(None, 0), ("", 0), ("0", 0), ("1", 1), (" 2 ", 2), ("4", 4)]:
        if raw is None:
            monkeypatch.delenv("CUDAOPT_GEMM_SPLITK_FIXUP", raising=False)
        else:
            monkeypatch.setenv("CUDAOPT_GEMM_SPLITK_FIXUP", raw)
        assert _lib.splitk_fixup_mode() == mode
    for bad in ("5", "yes", "-1"):
        monkeypatch.setenv("CUDAOPT_GEMM_SPLITK_FIXUP", bad)
        with pytest.raises(_lib.GemmError, match="use 0 .* 1 .* 2 .* 3 .* or 4"):
            _lib.splitk_fixup_mode()


# The shared staging hand-over of configs 44-45 (SHEPI in wgmma2_body), transcribed by hand: a block's
# ping-pong consumers own its items alternately (consumer c: sequence numbers c, c + 2, ...); before its
# t-th epilogue a consumer waits on the hand-over mbarrier for phase t - 1 (try_wait.parity semantics:
# passes once the barrier's current phase has the other parity), writes the shared buffers, issues its
# stores, waits until they have read the buffers, and arrives (completing phase t). Mainloops take turns
# through the order barrier (mainloop t + 1 starts once mainloop t is issued). Random interleavings;
# checks: no write while the other consumer's stores may still read, and every epilogue completes.
def _simulate_shared_staging(items, seed, wait_parity_of=lambda t: (t - 1) & 1):
    import random

    rng = random.Random(seed)
    phase = 0  # completed phases of the hand-over barrier (its current phase is `phase`)
    mainloops_issued = 0
    reading = None  # the consumer whose stores may still read the buffers
    state = {c: ("mainloop", c) for c in (0, 1) if c < items}  # (step, sequence number)
    for _ in range(100 * items + 100):  # far more steps than a run needs: running out is a deadlock
        if not state:
            break
        c = rng.choice(sorted(state))
        step, t = state[c]
        if step == "mainloop":
            if mainloops_issued != t:  # order barrier: mainloop t after mainloop t - 1 is issued
                continue
            mainloops_issued += 1
            state[c] = ("wait", t)
        elif step == "wait":
            if t > 0 and phase % 2 == wait_parity_of(t):  # try_wait.parity has not passed yet
                continue
            if reading is not None and reading != c:
                raise AssertionError(f"epilogue {t} writes while consumer {reading}'s stores read")
            reading = c
            state[c] = ("stores", t)
        elif step == "stores":
            if rng.random() < 0.5:  # the stores read the buffers for a while
                continue
            reading = None
            phase += 1  # bulk_wait_read<0>, then arrive
            state[c] = ("mainloop", t + 2)
            if t + 2 >= items:
                del state[c]
    assert not state, f"deadlock: {state}, {phase} phases complete"
    assert phase == items


@pytest.mark.parametrize("items", [0, 1, 2, 3, 4, 7, 16])
def test_shared_staging_hand_over_model_is_safe_and_completes(items):
    for seed in range(200):
        _simulate_shared_staging(items, seed)


def test_shared_staging_model_catches_a_wrong_parity():
    with pytest.raises(AssertionError):
        for seed in range(200):
            _simulate_shared_staging(6, seed, wait_parity_of=lambda t: t & 1)  # waits for phase t instead


def test_gemm_ncu_source_ranks_sass_lines_by_stall_samples():
    """scripts/gemm_ncu_source.py's table from `ncu --page source --csv --print-source sass` text."""
    mod = _load_repo_script("scripts/gemm_ncu_source.py")
    text = "\n".join([
        "==PROF== Connected to process 1",
        '"Kernel Name","void k<1>(int)",',
        '"Address","Source","Warp Stall Sampling (All Samples)","stall_barrier","stall_long_sb",'
        '"stall_long_sb (Not Issued)","stall_wait"',
        '"0x10","  HGMMA.64x128x16.F32 R24","30","0","5","5","25"',
        '"0x20","  UCGABAR_WAIT","60","60","0","0","0"',
        '"0x30","  @!P0 BRA 0x10","10","0","1,0","9","0"',
    ])
    kernel, header, rows = mod.parse_source_csv(text)
    assert kernel == "void k<1>(int)" and len(rows) == 3
    total, lines = mod.top_stalls(header, rows, top=2)
    assert total == 100
    assert lines == [(60.0, "UCGABAR_WAIT", "barrier 60"), (30.0, "HGMMA.64x128x16.F32 R24", "wait 25, long_sb 5")]
    with pytest.raises(ValueError):
        mod.parse_source_csv("==PROF== nothing profiled")


def test_gemm_adopt_takes_a_config_only_where_the_paired_screen_clears_the_margin(tmp_path):
    """scripts/gemm_adopt.py: a shape takes the config where it was correct and table/config >= margin;
    a fallback keeps its backend; a wrong output or a smaller gain leaves the entry as it was."""
    import json

    mod = _load_repo_script("scripts/gemm_adopt.py")
    table = {"device": "H200", "entries": [
        {"m": 512, "n": 1024, "k": 4096, "backend": "ours", "config": 37, "splits": 1, "label": "a"},
        {"m": 1024, "n": 512, "k": 2048, "backend": "cublaslt", "lt_algo": 0, "config": 37, "splits": 1},
        {"m": 256, "n": 256, "k": 256, "backend": "ours", "config": 37, "splits": 1},
        {"m": 128, "n": 1024, "k": 1024, "backend": "ours", "config": 37, "splits": 1},
        {"m": 64, "n": 64, "k": 64, "backend": "ours", "config": 37, "splits": 1}]}

    def row(m, n, k, table_us, us, err=1e-4):
        return {"m": m, "n": n, "k": k, "table_us": table_us, "lt_us": 9.0, "torch_us": 9.5,
                "configs": {"x": {"config": 55, "splits": 1, "us": us, "err": err}}}

    split = row(512, 1024, 4096, 12.5, 10.4)
    split["configs"]["y"] = {"config": 55, "splits": 2, "us": 11.0, "err": 1e-4}  # slower: the plain one is taken
    split["configs"]["z"] = {"config": 55, "splits": 4, "us": 9.0, "err": 0.5}  # faster but wrong: never
    screen = [split, row(1024, 512, 2048, 7.7, 7.0), row(256, 256, 256, 5.0, 4.9),
              row(128, 1024, 1024, 5.0, 4.0, err=0.5)]
    new, changed = mod.adopt(table, screen, 55, 1.03)
    assert [c[:3] for c in changed] == [(512, 1024, 4096), (1024, 512, 2048)]
    by = {(e["m"], e["n"], e["k"]): e for e in new["entries"]}
    assert by[(512, 1024, 4096)]["config"] == 55 and by[(512, 1024, 4096)]["label"] == "wgmma64x64x64_pp_s8_cm2_e1"
    assert by[(512, 1024, 4096)]["splits"] == 1
    assert by[(1024, 512, 2048)]["backend"] == "cublaslt" and by[(1024, 512, 2048)]["config"] == 55
    assert by[(256, 256, 256)]["config"] == 37 and by[(128, 1024, 1024)]["config"] == 37  # 1.02x; wrong output
    assert table["entries"][0]["config"] == 37  # the input table is not touched
    from cudaopt.gemm.dispatch import parse_table

    assert parse_table(new)[(512, 1024, 4096)].config == 55
    (tmp_path / "t.json").write_text(json.dumps(table))
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in screen))
    import subprocess
    import sys
    from pathlib import Path

    script = str(Path(__file__).resolve().parents[1] / "scripts" / "gemm_adopt.py")
    p = subprocess.run([sys.executable, script, str(tmp_path / "t.json"), str(tmp_path / "s.jsonl"),
                        "--config", "55", "--out", str(tmp_path / "n.json")], capture_output=True, text=True)
    assert p.returncode == 0 and "adopted config 55 on 2 of 4" in p.stdout, p.stderr
    bad = subprocess.run([sys.executable, script, str(tmp_path / "missing.json"),
                          str(tmp_path / "s.jsonl"), "--config", "55", "--out", str(tmp_path / "n2.json")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and "cannot read" in bad.stderr
    unknown = subprocess.run([sys.executable, script, str(tmp_path / "t.json"), str(tmp_path / "s.jsonl"),
                              "--config", "999", "--out", str(tmp_path / "n3.json")], capture_output=True, text=True)
    assert unknown.returncode != 0 and unknown.stderr.count("\n") == 1 and "not a config id" in unknown.stderr
    assert not (tmp_path / "n3.json").exists()
    # several configs (session 21): each shape takes the fastest correct of them
    two = row(512, 1024, 4096, 12.5, 11.0)
    two["configs"]["w"] = {"config": 56, "splits": 2, "us": 10.0, "err": 1e-4}
    new2, changed2 = mod.adopt(table, [two], [55, 56], 1.03)
    assert changed2 and new2["entries"][0]["config"] == 56 and new2["entries"][0]["splits"] == 2
    assert mod.adopt(table, [two], 55, 1.03)[0]["entries"][0]["config"] == 55  # one id: only that one
    (tmp_path / "s2.jsonl").write_text(json.dumps(two) + "\n")
    p2 = subprocess.run([sys.executable, script, str(tmp_path / "t.json"), str(tmp_path / "s2.jsonl"),
                         "--config", "55,56", "--out", str(tmp_path / "n4.json")], capture_output=True, text=True)
    assert p2.returncode == 0 and "adopted config 55,56 on 1 of 1" in p2.stdout, p2.stderr
    assert json.loads((tmp_path / "n4.json").read_text())["entries"][0]["config"] == 56


def test_gemm_adopt_confirm_needs_the_same_pick_past_the_margin_in_a_second_screen(tmp_path):
    """--confirm (session 25): a shape the first screen adopts stays on its table choice unless the second screen
    times the same (config, splits) correct and past the margin; the confirming gain is recorded."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    mod = _load_repo_script("scripts/gemm_adopt.py")
    table = {"device": "H200", "entries": [
        {"m": m, "n": 4096, "k": 512, "backend": "ours", "config": 42, "splits": 1} for m in (4096, 8192, 12288, 16384)]}

    def row(m, table_us, us, splits=1, err=1e-4):
        return {"m": m, "n": 4096, "k": 512, "table_us": table_us, "lt_us": 9.0, "torch_us": 9.5,
                "configs": {"x": {"config": 94, "splits": splits, "us": us, "err": err}}}

    first = [row(4096, 10.5, 10.0), row(8192, 10.5, 10.0), row(12288, 10.5, 10.0), row(16384, 10.5, 10.0)]
    second = [row(4096, 10.4, 10.0),  # 1.04x again: adopted
              row(8192, 10.1, 10.0),  # 1.01x: the first screen's gain did not repeat
              row(12288, 10.5, 10.0, err=0.5)]  # wrong output there; 16384 not in the second screen at all
    new, changed = mod.adopt(table, first, 94, 1.03, confirm=second)
    assert [c[:3] for c in changed] == [(4096, 4096, 512)]
    assert new["entries"][0]["config"] == 94 and new["entries"][0]["adopted"]["confirm_gain"] == 1.04
    assert [e["config"] for e in new["entries"][1:]] == [42, 42, 42]
    assert len(mod.adopt(table, first, 94, 1.03)[1]) == 4  # without --confirm: one screen decides
    (tmp_path / "t.json").write_text(json.dumps(table))
    (tmp_path / "s1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first))
    (tmp_path / "s2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in second))
    script = str(Path(__file__).resolve().parents[1] / "scripts" / "gemm_adopt.py")
    p = subprocess.run([sys.executable, script, str(tmp_path / "t.json"), str(tmp_path / "s1.jsonl"), "--config", "94",
                        "--confirm", str(tmp_path / "s2.jsonl"), "--out", str(tmp_path / "n.json")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "on 1 of 4 screened shapes (margin 1.03, confirmed by a second screen)" in p.stdout
    bad = subprocess.run([sys.executable, script, str(tmp_path / "t.json"), str(tmp_path / "s1.jsonl"), "--config",
                          "94", "--confirm", str(tmp_path / "absent.jsonl"), "--out", str(tmp_path / "n2.json")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and "absent.jsonl" in bad.stderr


def test_gemm_adopt_rebackend_decides_ours_or_torch_from_the_screen_and_unchecks_the_fallback():
    """--rebackend (session 23): an adopted shape handed to torch or cuBLASLt becomes "ours" where the screen
    timed the config at least as fast as torch.matmul (fallback_below), "torch" where not; its cuBLASLt record is
    dropped so the fallback pass checks it again; shapes not adopted keep everything."""
    mod = _load_repo_script("scripts/gemm_adopt.py")
    lt = {"checked": True, "best_algo": 1, "replaced": "torch"}
    table = {"device": "H200", "fallback_below": 1.0, "entries": [
        {"m": 128, "n": 8192, "k": 1024, "backend": "torch", "config": 36, "splits": 1},
        {"m": 128, "n": 8192, "k": 2048, "backend": "cublaslt", "lt_algo": 1, "lt_fallback": lt, "config": 36,
         "splits": 1},
        {"m": 128, "n": 12288, "k": 512, "backend": "cublaslt", "lt_algo": 1, "lt_fallback": lt, "config": 21,
         "splits": 1},
        {"m": 128, "n": 4096, "k": 512, "backend": "torch", "config": 21, "splits": 1,
         "lt_fallback": {"checked": True}}]}

    def row(m, n, k, table_us, us, torch_us):
        return {"m": m, "n": n, "k": k, "table_us": table_us, "lt_us": 9.0, "torch_us": torch_us,
                "configs": {"x": {"config": 72, "splits": 1, "us": us, "err": 1e-4}}}

    screen = [row(128, 8192, 1024, 8.0, 7.5, 8.0), row(128, 8192, 2048, 12.3, 11.7, 12.0),
              row(128, 12288, 512, 7.6, 7.3, 7.1), row(128, 4096, 512, 5.0, 4.99, 6.0)]
    kept, _ = mod.adopt(table, screen, 72, 1.03)  # without it the backends stay
    assert [e["backend"] for e in kept["entries"]] == ["torch", "cublaslt", "cublaslt", "torch"]
    new, changed = mod.adopt(table, screen, 72, 1.03, rebackend=True)
    assert [c[:3] for c in changed] == [(128, 8192, 1024), (128, 8192, 2048), (128, 12288, 512)]
    e = new["entries"]
    assert [x["backend"] for x in e] == ["ours", "ours", "torch", "torch"]  # 7.3 us against torch's 7.1: torch
    assert all("lt_fallback" not in x and "lt_algo" not in x for x in e[:3])
    assert e[1]["adopted"]["backend_was"] == "cublaslt" and e[1]["adopted"]["torch_us"] == 12.0
    assert e[2]["adopted"]["ratio_vs_torch"] == round(7.1 / 7.3, 6)
    assert e[3]["lt_fallback"] == {"checked": True} and e[3]["config"] == 21  # 1.002x: not adopted, untouched
    from cudaopt.gemm.dispatch import parse_table

    parsed = parse_table(new)
    assert parsed[(128, 8192, 1024)].backend == "ours" and parsed[(128, 8192, 1024)].config == 72


def test_energy_benchmark_takes_config_ids_or_says_what_is_wrong():
    """benchmarks/gemm_energy.py --configs (session 27): ids of the registry, comma-separated; anything else one line."""
    mod = _load_repo_script("benchmarks/gemm_energy.py")
    assert mod.parse_config_ids("107,109") == [107, 109] and mod.parse_config_ids("") == []
    for bad in ("107,x", str(len(KERNEL_CONFIGS)), "-1"):
        with pytest.raises(SystemExit, match="give config ids 0.."):
            mod.parse_config_ids(bad)


def test_screen_shape_lists_filter_the_grid_and_pick_candidates(tmp_path, monkeypatch):
    """scripts/gemm_screen_shapes.py (session 27): the grid's shapes of M, N >= 2048 (250 of them), less an excluded
    list; a screen's candidates are the shapes where a correct config beat the table by the margin (a wrong or
    failed one never counts)."""
    import json

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "scripts"))  # as when the script runs
    mod = _load_repo_script("scripts/gemm_screen_shapes.py")
    big = mod.grid(2048, 2048, set())
    assert len(big) == 250 and all(int(s.split("x")[0]) >= 2048 and int(s.split("x")[1]) >= 2048 for s in big)
    assert mod.grid(2048, 2048, {big[0], "1x1x1"}) == big[1:]
    small = mod.grid(0, 0, set(), max_mn=2**20, min_k=1024)  # session 28: the small long-K shapes of the narrow tiles
    dims = [tuple(map(int, s.split("x"))) for s in small]
    assert len(small) == 282 and "512x512x2048" in small and all(m * n <= 2**20 and k >= 1024 for m, n, k in dims)
    assert "1024x2048x1024" not in small and "512x512x512" not in small
    short = mod.grid(0, 0, set(), max_mn=2**22, max_k=256)  # session 29: the small short-K shapes
    dims = [tuple(map(int, s.split("x"))) for s in short]
    assert len(short) == 198 and "2048x2048x256" in short and all(m * n <= 2**22 and k <= 256 for m, n, k in dims)
    assert "64x64x512" not in short and "4096x2048x64" not in short
    def row(m, **configs):
        return {"m": m, "n": 2, "k": 3, "table_us": 10.0, "configs": {name: {"us": us, "err": err}
                                                                      for name, (us, err) in configs.items()}}

    rows = [row(1, a=(9.6, 0.0), b=(9.8, 0.0)), row(4, a=(5.0, 0.5)),  # the second one wrong
            row(7, a=(float("inf"), 0.0)), row(2)]  # a failed config; none
    assert mod.candidates(rows, 1.03) == ["1x2x3"] and mod.candidates(rows, 1.05) == []
    screen = tmp_path / "screen.jsonl"
    screen.write_text("\n".join(json.dumps(r) for r in rows[:2]) + "\n")
    mod.main(["candidates", str(screen)])
    with pytest.raises(SystemExit, match="not JSON lines"):
        (tmp_path / "bad.jsonl").write_text("{oops\n")
        mod.main(["candidates", str(tmp_path / "bad.jsonl")])
    with pytest.raises(SystemExit, match="give a file of comma-separated"):
        mod.main(["grid", "--exclude", str(tmp_path / "missing.txt")])


def test_generated_wgmma_asm_header_is_current():
    """csrc/wgmma_asm.cuh is scripts/gen_wgmma_asm.py's output (session 27): edit the generator, not the header. Each
    instruction lists N / 2 accumulators, then the two descriptors, the predicate's source and the two flags."""
    mod = _load_repo_script("scripts/gen_wgmma_asm.py")
    assert mod.main(["--check"]) == 0
    src = mod.HEADER.read_text()
    for n in mod.WIDTHS:
        acc = n // 2
        block = src[src.index(f"wgmma_m64n{n}k16(float (&d)[{acc}]"):]
        block = block[:block.index("\n}\n")]
        assert f"setp.ne.b32 p, %{acc + 2}, 0;" in block and f'"%{acc}, %{acc + 1}, p, 1, 1, %{acc + 3}, %{acc + 4};' in block
        assert block.count('"+f"(d[') == acc and f'"+f"(d[{acc - 1}])' in block
        operands = block.split('.f32.f16.f16 "')[1].split("p, 1, 1")[0]  # the accumulators, then the descriptors
        assert [int(x) for x in re.findall(r"%(\d+)", operands)] == list(range(acc + 2))


def test_clock_summary_reads_nvidia_smi_samples(tmp_path, capsys):
    """scripts/clock_summary.py (session 29): the grid phase's clock samples in one line; a header, an [N/A] field or a
    half-written last line is skipped, a zero reason mask is not counted, a missing file is one clear line and exit 2;
    with the run's shapes log, the SM clock while the small shapes ran and while the others did."""
    import json

    mod = _load_repo_script("scripts/clock_summary.py")
    lines = ["timestamp, clocks.current.sm [MHz], clocks.current.memory [MHz], power.draw [W], temperature.gpu, x",
             "2026/12/03 22:01:02.123, 1980 MHz, 3201 MHz, 350.12 W, 45, 0x0000000000000000",
             "2026/12/03 22:01:02.623, 1755 MHz, 3201 MHz, [N/A], 60, 0x0000000000000004",
             "2026/12/03 22:01:03.123, 1755 MHz, 3201 MHz, 699.00 W, 61, 0x0000000000000004",
             "2026/12/03 22:01:03.6"]
    line = mod.summarise(lines)
    assert line.startswith("clocks: 3 samples; SM median 1755 MHz (p10 1755, p90 1980)")
    assert "power median 525 W, max 699 W" in line and "temp median 60 C" in line
    assert line.endswith("reasons 0x0000000000000004 67%")
    assert mod.summarise(lines[:2]).endswith("reasons none")
    assert mod.summarise(["oops"]).startswith("clocks: no samples")
    f = tmp_path / "clocks.csv"
    f.write_text("\n".join(lines) + "\n")
    assert mod.main([str(f)]) == 0 and "3 samples" in capsys.readouterr().out
    assert mod.main([str(tmp_path / "missing.csv")]) == 2 and "give the CSV" in capsys.readouterr().err
    # with the same run's shapes log: the clock while the small shapes ran (the first two samples' window) and the rest
    from datetime import datetime

    t = [datetime.strptime(x.split(",")[0], "%Y/%m/%d %H:%M:%S.%f").timestamp() for x in lines[1:4]]
    log = tmp_path / "shapes.jsonl"
    log.write_text(json.dumps({"m": 64, "n": 64, "k": 64, "seconds": 0.6, "finished_at": t[1] + 0.05}) + "\n"
                   + json.dumps({"m": 4096, "n": 4096, "k": 4096, "seconds": 0.3, "finished_at": t[2] + 0.1}) + "\n"
                   + '{"m": 64, "n"')  # a cut last line
    assert mod.main([str(f), "--shapes", str(log)]) == 0
    out = capsys.readouterr().out
    assert "while shapes < 1e+08 FLOP ran 1868 MHz (2 samples); while the others ran 1755 MHz (1 samples)" in out
    assert "no finished_at" in mod.by_shape_size(lines, [{"m": 1, "n": 1, "k": 1, "seconds": 1.0}])
    assert mod.main([str(f), "--shapes", str(tmp_path / "none.jsonl")]) == 2


def test_small_state_probe_without_gpu(monkeypatch, capsys):
    """benchmarks/gemm_small_state.py (session 30): the one-line summary names the figures and the machine, n/a for a
    latency walk that did not run; without a CUDA device it is one clear line and exit 2, not a traceback."""
    mod = _load_repo_script("benchmarks/gemm_small_state.py")
    res = {"machine": {"host": "h1", "uuid": "GPU-1", "serial": "123", "pci.bus_id": "00000000:19:00.0",
                       "driver_version": "580.1", "persistence_mode": "Enabled"},
           "empty_us": 1.234, "add1_us": 1.5, "matmul64_us": 2.1, "matmul256_us": 2.6, "l2_chase_ns": None,
           "hbm_chase_ns": 612.4}
    line = mod.summary(res)
    assert line.startswith("small-call probe: empty 1.23 us, add 1.50 us, matmul 64^3 2.10 us, 256^3 2.60 us")
    assert "L2 load n/a, HBM load 612.40 ns" in line and "machine h1 GPU-1 serial 123 bus 00000000:19:00.0" in line
    assert "ours 64^3 n/a with PDL, n/a without; 256^3 n/a / n/a" in line  # a probe file from before session 32
    res.update(ours64_pdl_us=1.81, ours64_nopdl_us=2.43, ours256_pdl_us=2.2, ours256_nopdl_us=2.9)
    assert "ours 64^3 1.81 us with PDL, 2.43 us without; 256^3 2.20 us / 2.90 us" in mod.summary(res)
    assert mod.machine()["host"]  # nvidia-smi absent here: the host name alone, no exception
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert mod.main([]) == 2 and "no CUDA device here" in capsys.readouterr().err


def test_build_passes_defines_and_refuses_malformed_ones(tmp_path, monkeypatch):
    """build(defines=...) (session 30): each define reaches nvcc as -DNAME[=VALUE] for the kernel library; anything
    that is not NAME or NAME=VALUE is refused before nvcc runs."""
    from cudaopt.gemm import build

    calls = []
    monkeypatch.setattr(build, "find_nvcc", lambda: "nvcc")
    monkeypatch.setattr(build, "_nvcc", lambda cmd: calls.append(cmd))
    build.build(out_dir=tmp_path, with_blas=False, force=True, defines=("CUDAOPT_EXPERIMENT_X", "GROUP_M=4"))
    assert "-DCUDAOPT_EXPERIMENT_X" in calls[0] and "-DGROUP_M=4" in calls[0]
    for bad in ("X; rm -rf /", "-O0", "4X", "A B"):
        with pytest.raises(build.BuildError, match="NAME or NAME=VALUE"):
            build.build(out_dir=tmp_path, with_blas=False, force=True, defines=(bad,))
    assert len(calls) == 1


@pytest.mark.timeout(900)
def test_experiment_builds_compile_and_load(tmp_path):
    """The diagnostic defines still in the source compile, together, and the library carries the same config table
    (host code, no GPU needed): sessions 30-31's CUDAOPT_EXPERIMENT_EARLY_MAP_PREFETCH (the tensor maps prefetched
    before the PDL wait) and CUDAOPT_EXPERIMENT_EXIT_AFTER_READ (the last wait on C's TMA stores only for the staging
    read), and the opt-outs of session 38's default, CUDAOPT_EXPERIMENT_TOP_WAIT (every thread waits for the predecessor at the
    top) and CUDAOPT_EXPERIMENT_RING_FIRST_WAIT (the empty-slot wait on the ring's first pass too), and session 38's
    CUDAOPT_EXPERIMENT_POINTER_PRODUCER (the opt-out of session 43's producer ring). benchmarks/gemm_build_ab.py
    times them against the shipped build."""
    import ctypes

    from cudaopt.gemm import build

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    defines = ("CUDAOPT_EXPERIMENT_EARLY_MAP_PREFETCH", "CUDAOPT_EXPERIMENT_EXIT_AFTER_READ",
               "CUDAOPT_EXPERIMENT_TOP_WAIT", "CUDAOPT_EXPERIMENT_RING_FIRST_WAIT", "CUDAOPT_EXPERIMENT_POINTER_PRODUCER")
    result = build.build(out_dir=tmp_path, with_blas=False, force=True, defines=defines)
    try:
        lib = ctypes.CDLL(str(result.kernel_lib))
    except OSError as err:
        pytest.skip(f"library built but not loadable here (no CUDA runtime): {err}")
    assert lib.cudaopt_wgmma_num_configs() == len(WGMMA_CONFIGS)


def test_retired_defines_are_refused_and_gone_from_the_source(tmp_path, monkeypatch):
    """The opt-out and diagnostic defines retired in session 37 (the measured forms are the only form) and session 38
    (LATE_WAIT and FRESH_RING, now the default): nvcc would ignore them silently, so an A/B build naming one would
    time the shipped kernels against themselves. build() refuses them with a line that says which session retired
    them and which commit still builds them, before nvcc runs; and no source file reads them."""
    from cudaopt.gemm import build

    calls = []
    monkeypatch.setattr(build, "find_nvcc", lambda: "nvcc")
    monkeypatch.setattr(build, "_nvcc", lambda cmd: calls.append(cmd))
    for name, (why, commit) in build.RETIRED_DEFINES.items():
        assert re.fullmatch(r"session (3[78]|43): .+", why) and re.fullmatch(r"[0-9a-f]{7}", commit), (name, why, commit)
        with pytest.raises(build.BuildError, match=f"{name} was retired in {why[:10]}.*check out {commit}"):
            build.build(out_dir=tmp_path, with_blas=False, force=True, defines=("CUDAOPT_EXPERIMENT_TOP_WAIT", name))
    assert set(build.RETIRED_DEFINES) >= {"CUDAOPT_EXPERIMENT_LATE_WAIT", "CUDAOPT_EXPERIMENT_FRESH_RING",
                                          "CUDAOPT_EXPERIMENT_PRODUCER_RING"}
    assert calls == []
    sources = "".join(p.read_text() for p in CSRC.glob("*.cu*"))
    for name in build.RETIRED_DEFINES:
        assert not re.search(rf"#\s*(if|ifdef|ifndef|elif|define)\b.*\b{name}\b", sources), name


def test_build_ab_helpers_and_clear_exits(tmp_path, monkeypatch, capsys):
    """benchmarks/gemm_build_ab.py (session 30): shapes filtered by FLOP in grid order, one build folder per define
    set, variants named B1, B2, ..., the A / variant summary per work class; bad shapes, no shapes left or no CUDA
    device: one line and exit 2."""
    mod = _load_repo_script("benchmarks/gemm_build_ab.py")
    small = mod.pick_shapes("grid", 1e8)
    assert small[0] == (64, 64, 64) and all(2 * m * n * k <= 1e8 for m, n, k in small) and len(small) == 120
    assert mod.pick_shapes("64x64x64,4096x4096x4096", 1e9) == [(64, 64, 64)]
    assert mod.ab_dir(["B", "A"], tmp_path) == mod.ab_dir(["A", "B"], tmp_path) != mod.ab_dir(["A"], tmp_path)
    assert mod.parse_variants(["X", "X, Y=2"]) == {"B1": ("X",), "B2": ("X", "Y=2")}
    rows = [{"m": 64, "n": 64, "k": 64, "choice": "wgmma64x64x64_pp_s8_e1", "a_over": {"B1": 1.1, "B2": 1.0}},
            {"m": 64, "n": 64, "k": 128, "choice": "wgmma64x64x64_pp_s8_e1_splitk4", "a_over": {"B1": 0.9}},
            {"m": 4096, "n": 4096, "k": 4096, "choice": "wgmma64x64x64_pp_s8_e1_cs_splitk2", "a_over": {"B1": 1.0}},
            {"m": 64, "n": 64, "k": 64, "error": "x"}]
    text = "\n".join(mod.summarise(rows, "B1"))
    assert "B1               all: A/B geomean 0.9967 over 3 shapes, B faster on 1" in text
    assert "B1              <1e8: A/B geomean 0.9950 over 2 shapes, B faster on 1" in text
    assert "B1               all: A/B geomean 0.9967 over 3 shapes, B faster on 1, median 1.0000" in text
    # per kernel family (session 31: the split-K reduce was where releasing first cost 15-17%), then the slowest
    assert "B1             plain: A/B geomean 1.1000 over 1 shapes, B faster on 1" in text
    assert "B1  split-K + reduce: A/B geomean 0.9000 over 1 shapes, B faster on 0" in text
    assert "B1 in-kernel split-K: A/B geomean 1.0000 over 1 shapes" in text
    assert text.splitlines()[-1] == ("  B1 slowest: 64x64x128 wgmma64x64x64_pp_s8_e1_splitk4 0.900, 4096x4096x4096 "
                                     "wgmma64x64x64_pp_s8_e1_cs_splitk2 1.000, 64x64x64 wgmma64x64x64_pp_s8_e1 1.100")
    one = "A/B geomean 1.0000 over 1 shapes, B faster on 0, median 1.0000"
    assert mod.summarise(rows, "B2") == [f"  B2               all: {one}", f"  B2              <1e8: {one}",
                                         f"  B2             plain: {one}",
                                         "  B2 slowest: 64x64x64 wgmma64x64x64_pp_s8_e1 1.000"]
    assert [mod.kernel_family(x) for x in ("mma_w2x2_s4_splitk16", "wgmma64x128x64_pp_s8_cm2_u_lean_p128_sk_splitk2",
                                           "wgmma128x128x64_pp_s6_e1_cs_splitk2", "wgmma32x64x64_pp_s12_e1_sw")] == [
        "split-K + reduce", "split-K + reduce", "in-kernel split-K", "plain"]
    assert mod.main(["--variant", "X", "--shapes", "bogus"]) == 2 and "bogus" in capsys.readouterr().err
    assert mod.main(["--variant", "X", "--shapes", "64x64x64", "--max-flop", "10"]) == 2
    assert "no shapes left" in capsys.readouterr().err
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert mod.main(["--variant", "X", "--shapes", "64x64x64"]) == 2 and "no CUDA device" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # --variant is required
        mod.main(["--shapes", "grid"])


def test_build_ab_verdict_applies_the_written_rule():
    """benchmarks/gemm_build_ab.py's verdict (session 37): adopt only with every output equal to A's, no failed shape,
    the geomean over all shapes above the bar and no work class under its bar; otherwise the first reason."""
    mod = _load_repo_script("benchmarks/gemm_build_ab.py")

    def row(m, ratio, equal=True, n=64):
        return {"m": m, "n": n, "k": 64, "choice": "x", "bitwise": {"B1": equal}, "a_over": {"B1": ratio}}

    small, large = 64, 8192 * 16  # (<1e8 and 1e9-1e10 FLOP)
    rows = [row(small, 1.03), row(small, 1.01, n=128), row(large, 0.999)]
    assert mod.verdict(rows, "B1", 1.0, 0.998).startswith("B1 verdict: adopt (all 1.0129 > 1.0")
    low = mod.verdict(rows, "B1", 1.0, 0.9995)
    assert low.startswith("B1 verdict: keep off (all 1.0129, but 1e9-1e10 0.9990 < 0.9995")
    assert "keep off (all 0.9950 <= 1.0; <1e8 0.9900, 1e9-1e10 1.0000)" in mod.verdict([row(small, 0.99), row(large, 1.0)], "B1", 1.0, 0.998)
    assert mod.verdict([*rows, row(small, 1.2, equal=False, n=256)], "B1", 1.0, 0.998) == (
        "B1 verdict: keep off (1 shapes differ from A, 0 failed)")
    assert "0 shapes differ from A, 1 failed" in mod.verdict([*rows, {"m": 1, "n": 1, "k": 1, "bitwise": {},
                                                                      "a_over": {}, "error": "x"}], "B1", 1.0, 0.998)
    assert mod.verdict([], "B1", 1.0, 0.998) == "B1 verdict: no timed shapes"


def _make_desc(addr: int, lbo: int, sbo: int, swizzle: int = 1) -> int:
    """hgemm_wgmma.cu's make_desc: start address, leading and stride byte offsets (>> 4, 14 bits each), swizzle."""
    return (((addr & 0x3FFFF) >> 4) | (((lbo & 0x3FFFF) >> 4) << 16) | (((sbo & 0x3FFFF) >> 4) << 32)
            | (swizzle << 62))


def _desc_at(base: int, off: int, lbo: int, sbo: int, swizzle: int = 1, units: int = 0) -> int:
    """SmemDesc<LBO, SBO, SWZ>(base).at(off, units) (session 34; units, session 35's SLOT_DESC): the base's descriptor,
    off / 16 and units added to its low 32 bits."""
    d0 = _make_desc(base, lbo, sbo, swizzle)
    return (d0 & 0xFFFFFFFF00000000) | (((d0 & 0xFFFFFFFF) + (off >> 4) + units) & 0xFFFFFFFF)


def test_uniform_descriptors_equal_make_desc_wherever_the_kernels_point():
    """The shipped kernels' descriptors (session 34: one per slot and operand, each wgmma's offset added to the start
    address field) are make_desc's bit for bit for every slot base a config's shared memory can hold and every offset
    its wgmmas add: any 16-byte-aligned address below 227 KB, offsets up to a slot. The premise is the 18-bit shared
    window: past 256 KB the add would carry into the leading-byte-offset field, which the check below shows."""
    limit = 227 * 1024
    for c in WGMMA_CONFIGS:
        assert c.smem_bytes <= limit, c.label
    lbo_sbo = {(16, 1024, 1), (8192, 1024, 1), (4096, 512, 2), (16384, 1024, 1)}
    offsets = sorted({kk * 32 + mi * 64 * 128 + chunk * 8192 for kk in range(8) for mi in range(4)
                      for chunk in range(4)})
    for lbo, sbo, swz in lbo_sbo:
        for base in range(0, limit, 16 * 37):  # a stride co-prime to the slot sizes visits every residue class
            base -= base % 16
            for off in offsets:
                if base + off >= limit:
                    continue
                assert _desc_at(base, off, lbo, sbo, swz) == _make_desc(base + off, lbo, sbo, swz), (base, off, lbo)
    # SLOT_DESC (session 35): the ring base's descriptor, the slot's offset in 16-byte units, the wgmma's in bytes.
    for lbo, sbo, swz in lbo_sbo:
        for ring in range(0, 4096, 16 * 7):
            for slot_off in range(0, limit, 1024 * 5):
                for off in offsets[:: 7]:
                    if ring + slot_off + off < limit:
                        assert _desc_at(ring, off, lbo, sbo, swz, units=slot_off // 16) == _make_desc(
                            ring + slot_off + off, lbo, sbo, swz), (ring, slot_off, off)
    # Beyond the 18-bit window the identity breaks (make_desc masks, the add carries): what the premise rules out.
    assert _desc_at(0x3FFF0, 0x20, 16, 1024) != _make_desc(0x3FFF0 + 0x20, 16, 1024)


def test_gemm_sass_pdl_paths_on_an_excerpt():
    """scripts/gemm_sass.py --pdl (session 36): the shortest control-flow path from a PDL wait (ACQBULK) to a TMA load
    and the long-latency instructions on it; a global access reachable from the entry around every wait is flagged,
    one behind a wait on every path is not."""
    gs = _load_repo_script("scripts/gemm_sass.py")
    sass = """
        Function : _Z3barPv
        /*0000*/                   S2R R0, SR_TID.X ;                   /* 0x00 */
        /*0010*/                   ISETP.NE.AND P0, PT, R0, RZ, PT ;    /* 0x00 */
        /*0020*/               @P0 BRA 0x80 ;                           /* 0x00 */
        /*0030*/                   ACQBULK ;                            /* 0x00 */
        /*0040*/                   I2F.RP R3, R2 ;                      /* 0x00 */
        /*0050*/                   MUFU.RCP R3, R3 ;                    /* 0x00 */
        /*0060*/                   UTMALDG.2D [UR8], [UR4] ;            /* 0x00 */
        /*0070*/                   EXIT ;                               /* 0x00 */
        /*0080*/                   ACQBULK ;                            /* 0x00 */
        /*0090*/                   STG.E [R4.64], R5 ;                  /* 0x00 */
        /*00a0*/                   EXIT ;                               /* 0x00 */
"""
    (kernel,) = gs.parse(sass)
    way = gs.wait_to_load(kernel)
    assert (way["wait"], way["load"], way["instrs"], way["slow"]) == (0x30, 0x60, 2, ["I2F", "MUFU"])
    assert gs.unguarded_global_ops(kernel) == []
    # the store's wait moved past it: reachable without a wait
    (bad,) = gs.parse(sass.replace("/*0080*/                   ACQBULK", "/*0080*/                   NOP"))
    assert [i.addr for i in gs.unguarded_global_ops(bad)] == [0x90]
    assert gs.wait_to_load(gs.parse(sass.replace("UTMALDG.2D", "LDS.64"))[0]) is None


def test_gemm_sass_finds_the_hgmma_loop_and_counts_its_overhead():
    """scripts/gemm_sass.py (session 35) on a cuobjdump-format excerpt: the backward branch whose body issues HGMMAs is
    the main loop; its non-HGMMA instructions (NOPs aside), R2UR and S2UR are counted against the tensor cycles of its
    HGMMAs (64 x N x 16: N / 2); a loop without HGMMA is not one."""
    gs = _load_repo_script("scripts/gemm_sass.py")
    sass = """
        Function : _Z3fooPv
        /*0000*/                   MOV R1, c[0x0][0x28] ;              /* 0x00000a0000017a02 */
        /*0010*/                   S2UR UR4, SR_CgaCtaId ;             /* 0x0000000000047 */
        /*0020*/                   R2UR UR5, R2 ;                       /* 0x00000000020572ca */
        /*0030*/                   HGMMA.64x64x16.F32 R24, gdesc[UR4].tnspB, R24 ;  /* 0x00 */
        /*0040*/                   NOP ;                                /* 0x00 */
        /*0050*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4].tnspB, R24, gsb0 ;  /* 0x00 */
        /*0060*/              @!P0 BRA 0x10 ;                           /* 0x00 */
        /*0070*/                   IADD3 R3, R3, 0x1, RZ ;              /* 0x00 */
        /*0080*/                   BRA 0x70 ;                           /* 0x00 */
        /*0090*/                   EXIT ;                               /* 0x00 */
"""
    (kernel,) = gs.parse(sass)
    assert len(kernel.instrs) == 10
    (loop,) = kernel.loops()  # (the branch back to 0x70 holds no HGMMA)
    assert [i.addr for i in loop.body] == [0x10, 0x20, 0x30, 0x40, 0x50, 0x60]
    s = gs.summary(kernel)
    assert (s["hgmma"], s["tensor"], s["other"], s["s2ur"], s["r2ur"]) == (2, 96.0, 3, 1, 1)
    assert gs.summary(gs.parse(sass.replace("HGMMA.64x", "IMAD.64x"))[0])["loop"] is None


def test_gemm_sass_against_a_cubin_counts_identical_kernels(tmp_path, monkeypatch, capsys):
    """scripts/gemm_sass.py --against CUBIN (session 37): the check a refactor of the kernels needs, the build against
    an older build's cubin, kernel by kernel; a kernel the base has and the build lacks is named; a missing cubin and
    a retired define are one line each and a non-zero exit, before anything is compiled."""
    gs = _load_repo_script("scripts/gemm_sass.py")
    loop = """
        /*0000*/                   HGMMA.64x64x16.F32 R24, gdesc[UR4].tnspB, R24, gsb0 ;  /* 0x00 */
        /*0010*/                   {} ;                                 /* 0x00 */
        /*0020*/              @!P0 BRA 0x0 ;                            /* 0x00 */
        /*0030*/                   EXIT ;                               /* 0x00 */
"""
    new, old = tmp_path / "new.cubin", tmp_path / "old.cubin"
    new.write_bytes(b"x")
    old.write_bytes(b"y")
    texts = {
        new: "\n        Function : _Z1av" + loop.format("IADD3 R3, R3, 0x1, RZ") + "        Function : _Z1bv"
        + loop.format("IADD3 R3, R3, 0x2, RZ"),
        old: "\n        Function : _Z1av" + loop.format("IADD3 R3, R3, 0x1, RZ") + "        Function : _Z1bv"
        + loop.format("IADD3 R3, R3, 0x3, RZ") + "        Function : _Z1cv" + loop.format("NOP"),
    }
    monkeypatch.setattr(gs, "disassemble", lambda p: gs.parse(texts[Path(p)]))
    assert gs.main(["--cubin", str(new), "--against", str(old)]) == 0
    out = capsys.readouterr().out
    assert f"1 of 2 kernels identical to {old}'s" in out
    assert "1 kernels of the base are not in this build: c\n" in out
    assert re.search(r"  b\n", out) and not re.search(r"  a\n", out)  # (the changed kernel listed, the same one not)
    assert gs.main(["--cubin", str(new), "--against", str(tmp_path / "none.cubin")]) == 2
    assert "no such cubin" in capsys.readouterr().err
    if gs.check_defines is not None:  # (the dev install provides the package's check)
        with pytest.raises(SystemExit, match="CUDAOPT_EXPERIMENT_SLOT_DESC was retired"):
            gs.build_cubin(["CUDAOPT_EXPERIMENT_SLOT_DESC"], tmp_path)
