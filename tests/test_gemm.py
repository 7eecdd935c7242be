"""CPU tests of the HGEMM package: shape grid, statistics, reports, dispatcher, checks, and the
resumable benchmark/tuner bookkeeping (GPU work monkeypatched)."""

import contextlib
import json
import math
import statistics
import time

import numpy as np
import pytest

from cudaopt.gemm import bench, dispatch, tune
from cudaopt.gemm.configs import KERNEL_CONFIGS, Choice, candidate_choices
from cudaopt.gemm.correctness import exact_match_ok, normal_ok, zero_one_probability
from cudaopt.gemm.report import summary_markdown, write_shape_csv, write_summary_csv
from cudaopt.gemm.shapes import (
    GRID_SIZES,
    WORK_CLASS_NAMES,
    grid_shapes,
    parse_shapes,
    sample_shapes,
    work_class,
)
from cudaopt.gemm.stats import max_of, ratios, summarize, summarize_by_class


def test_grid_has_1000_shapes_over_all_classes():
    shapes = grid_shapes()
    assert len(shapes) == 1000 and len(set(shapes)) == 1000
    assert {work_class(s) for s in shapes} == set(WORK_CLASS_NAMES)
    assert work_class((64, 64, 64)) == "<1e8"  # 2*64^3 = 5.2e5
    assert work_class((16384, 16384, 16384)) == ">=1e12"
    assert work_class((1024, 1024, 512)) == "1e9-1e10"  # 1.07e9


def test_sample_is_stratified_and_reproducible():
    s = sample_shapes(12, seed=3)
    assert s == sample_shapes(12, seed=3) and len(s) == 12
    assert {work_class(x) for x in s} == set(WORK_CLASS_NAMES)
    assert all(v in GRID_SIZES for x in s for v in x)


def test_offgrid_shapes_are_off_the_grid_stratified_and_reproducible():
    from cudaopt.gemm.shapes import offgrid_shapes

    s = offgrid_shapes(30, seed=2)
    assert s == parse_shapes("offgrid:30:2") and len(s) == len(set(s)) == 30
    assert s != offgrid_shapes(30, seed=3)
    assert all(not all(v in GRID_SIZES for v in x) for x in s)  # at least one size off the grid
    assert all(v % 8 == 0 and 64 <= v <= 16384 for x in s for v in x)  # what the wgmma kernels take
    assert [work_class(x) for x in s].count("<1e8") == 5 and {work_class(x) for x in s} == set(WORK_CLASS_NAMES)
    for bad in ("offgrid:", "offgrid:x", "sample:3:y"):
        with pytest.raises(ValueError, match="with integers"):
            parse_shapes(bad)


def test_parse_shapes(tmp_path):
    assert parse_shapes("64x128x256,8x8x8") == [(64, 128, 256), (8, 8, 8)]
    f = tmp_path / "s.txt"
    f.write_text("# comment\n64 64 64\n128,256,512\n")
    assert parse_shapes(str(f)) == [(64, 64, 64), (128, 256, 512)]
    assert len(parse_shapes("grid")) == 1000
    with pytest.raises(ValueError):
        parse_shapes("nonsense")
    # A list of hundreds of shapes is longer than a file name may be: it must parse, not raise OSError.
    many = parse_shapes("grid")[:300]
    assert parse_shapes(",".join(f"{m}x{n}x{k}" for m, n, k in many)) == many


def test_statistics_on_synthetic_timings():
    ref = {(64, 64, 64): 10.0, (128, 128, 128): 10.0, (4096, 4096, 4096): 100.0, (8, 8, 8): float("nan")}
    ours = {(64, 64, 64): 5.0, (128, 128, 128): 20.0, (4096, 4096, 4096): 100.0}
    r = ratios(ref, ours)
    assert r == {(64, 64, 64): 2.0, (128, 128, 128): 0.5, (4096, 4096, 4096): 1.0}
    s = summarize("x", "all", list(r.values()))
    assert s.mean_speedup == pytest.approx((1.0 - 0.5 + 0.0) / 3)  # the seed's mean of ratio - 1
    assert s.geomean_speedup == pytest.approx(0.0)
    assert s.median_ratio == 1.0 and s.win_rate == pytest.approx(1 / 3) and s.min_ratio == 0.5
    rows = summarize_by_class("x", r)
    assert rows[0].group == "all" and rows[0].n == 3
    assert {row.group for row in rows[1:]} == {"<1e8", "1e11-1e12"}
    assert math.isnan(summarize("x", "all", []).mean_speedup)


def test_max_of_takes_the_faster_layout():
    assert max_of({(1, 1, 1): 3.0, (2, 2, 2): 1.0}, {(1, 1, 1): 2.0}) == {(1, 1, 1): 2.0, (2, 2, 2): 1.0}


def test_reports(tmp_path):
    times = {"ours": {(64, 64, 64): 5.0}, "torch": {(64, 64, 64): 6.0}}
    write_shape_csv(tmp_path / "s.csv", times, {(64, 64, 64): {"correct": True}})
    text = (tmp_path / "s.csv").read_text().splitlines()
    assert text[0].startswith("m,n,k,flops,work_class,ours_us,torch_us,correct")
    rows = summarize_by_class("ours vs torch", ratios(times["torch"], times["ours"]))
    write_summary_csv(tmp_path / "sum.csv", rows)
    md = summary_markdown(rows, "t")
    assert "| ours vs torch | all | 1 | +20.0% |" in md


def test_exact_check_logic():
    ref = np.array([[1.0, 2047.0], [2048.0, 5000.0]])
    assert exact_match_ok(ref.copy(), ref)
    off_above = ref.copy()
    off_above[1, 1] = 5004.0  # entries >= 2048 are not checked exactly
    assert exact_match_ok(off_above, ref)
    off_below = ref.copy()
    off_below[0, 1] = 2046.0
    assert not exact_match_ok(off_below, ref)
    assert zero_one_probability(64) == 0.5 and 16384 * zero_one_probability(16384) ** 2 == pytest.approx(512)


def test_normal_bound():
    assert normal_ok(3.0e-4, 2.9e-4)
    assert not normal_ok(9e-4, 2.9e-4)  # what fp16 accumulation at K~1000 looks like
    assert not normal_ok(float("nan"), 2.9e-4)


def test_dispatcher_table_lookup_and_fallback(tmp_path):
    data = {"entries": [{"m": 64, "n": 64, "k": 64, "backend": "ours", "config": 6, "splits": 1},
                        {"m": 4096, "n": 4096, "k": 4096, "backend": "torch", "config": 0, "splits": 1}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    table = dispatch.load_table(str(path))
    assert dispatch.choose(64, 64, 64, table) == Choice("ours", 6, 1)
    assert dispatch.choose(4096, 4096, 4096, table).backend == "torch"
    assert dispatch.choose(96, 64, 64, table) == Choice("ours", 6, 1)  # nearest tuned shape
    far = dispatch.choose(16384, 64, 16384, table)  # 64x from 4096 in N: the heuristic
    assert far == dispatch.heuristic_choice(16384, 64, 16384) and far.backend == "ours"
    assert dispatch.choose(16384, 4096, 1024, table).backend == "torch"  # within 4x per dimension
    assert dispatch.load_table(str(tmp_path / "missing.json")) == {}


def test_untuned_shapes_without_128_byte_rows_fall_back_to_torch():
    table = {(4096, 4096, 4096): Choice("ours", 27, 1), (4088, 4088, 4088): Choice("ours", 27, 1)}
    assert dispatch.choose(4096, 4032, 4096, table) == Choice("ours", 27, 1)  # N - 64: rows stay aligned
    assert dispatch.choose(4088, 4096, 4096, table) == Choice("ours", 27, 1)  # M is no row length
    for n, k in ((4088, 4096), (4096, 4088), (4040, 4040)):
        assert dispatch.choose(4096, n, k, table) == Choice("torch", 27, 1)  # the config stays on record
        assert dispatch.choose(4096, n, k, table).as_ours() == Choice("ours", 27, 1)  # what benchmarks time
    assert dispatch.choose(4088, 4088, 4088, table) == Choice("ours", 27, 1)  # tuned exactly: as measured
    assert dispatch.choose(200, 200, 1000, {}).backend == "ours"  # 8e7 FLOP: launch latency rules
    h = dispatch.heuristic_choice(200, 200, 1256)  # 1.005e8 FLOP and K = 1256: the heuristic's kernel, then torch
    assert dispatch.choose(200, 200, 1256, {}) == Choice("torch", h.config, h.splits)
    assert dispatch.misaligned_rows(4096, 4096, 4104) and not dispatch.misaligned_rows(4100, 4096, 4096)
    # rows padded to 64 elements (pad_rows) keep the neighbour's kernel; one unpadded operand does not
    assert dispatch.choose(4096, 4088, 4088, table, strides=(4096, 4096, 4096)) == Choice("ours", 27, 1)
    assert dispatch.choose(4096, 4088, 4088, table, strides=(4096, 4096, 4088)) == Choice("ours", 27, 1)  # C: free
    assert dispatch.choose(4096, 4088, 4088, table, strides=(4088, 4096, 4096)).backend == "torch"  # A unpadded
    assert not dispatch.misaligned_rows(4096, 4088, 4088, (4160, 4096, 4088))


def test_row_stride_accepts_row_padded_views_only():
    import torch

    from cudaopt.gemm import pad_rows, row_stride

    x = torch.arange(24 * 40, dtype=torch.float16).reshape(24, 40)
    assert row_stride(x) == 40
    p = pad_rows(x)
    assert p.shape == x.shape and p.stride() == (64, 1) and torch.equal(p, x) and row_stride(p) == 64
    assert pad_rows(x, 8).stride() == (40, 1)  # already a multiple of 8
    assert row_stride(x.t()) is None  # column-major
    assert row_stride(x[:, 1:33]) is None  # 2-byte offset: not 16-byte aligned
    assert row_stride(x[:, :24]) == 40  # a column slice: its parent's row stride
    wide = torch.zeros(24, 44, dtype=torch.float16)
    assert row_stride(wide[:, :40]) is None  # stride 44: not a multiple of 8
    assert row_stride(x[:1]) == 40  # one row: any stride, its length rounded up to 8
    with pytest.raises(ValueError, match="2-D"):
        pad_rows(torch.zeros(2, 3, 4, dtype=torch.float16))


def test_col_stride_accepts_transposed_views_only():
    """col_stride (session 39): b = w.t() of a row-major (N, K) w, the TN layout hgemm's B^T kernels read."""
    import torch

    from cudaopt.gemm import col_stride, pad_rows

    w = torch.zeros(24, 40, dtype=torch.float16)  # (N, K)
    assert col_stride(w.t()) == 40 and col_stride(pad_rows(w).t()) == 64
    assert col_stride(w) is None  # row-major: row_stride's case
    assert col_stride(torch.zeros(24, 44, dtype=torch.float16)[:, :40].t()) is None  # stride 44: not a multiple of 8
    assert col_stride(w[:, 1:33].t()) is None  # 2-byte offset
    assert col_stride(w[:1].t()) == 40  # one column: any stride, its length rounded up to 8


def test_packed_fast_path_agrees_with_row_stride():
    """hgemm's fast path (three is_contiguous calls) answers only where row_stride would give (k, n, n)."""
    import torch

    from cudaopt.gemm import _packed_strides, row_stride

    base = torch.zeros(4096, dtype=torch.float16)
    views = [base[: 24 * 40].view(24, 40), base[8: 8 + 24 * 40].view(24, 40), base[1: 1 + 24 * 40].view(24, 40),
             base[: 24 * 40].view(40, 24).t(), base[: 24 * 64].view(24, 64)[:, :40], base[:40].view(1, 40)]
    for a in views:
        for b in views:
            m, k = a.shape
            kb, n = b.shape
            fast = _packed_strides(a, b, a, m, n, k)
            if fast is not None:
                assert fast == (k, n, n) and (row_stride(a), row_stride(b)) == (k, n)
    assert _packed_strides(views[0], views[0], views[0], 24, 40, 40) == (40, 40, 40)
    assert _packed_strides(views[2], views[0], views[0], 24, 40, 40) is None  # 2-byte offset
    assert _packed_strides(views[4], views[0], views[0], 24, 40, 40) is None  # padded rows: row_stride's case


def test_packed_bt_fast_path_agrees_with_the_stride_readers():
    """(session 50) the B^T route's fast path (b = w.t() of a packed w) answers only where row_stride and col_stride
    would give (k, k, n)."""
    import torch

    from cudaopt.gemm import _packed_bt_strides, col_stride, pad_rows, row_stride

    base = torch.zeros(8192, dtype=torch.float16)
    w = base[: 40 * 48].view(40, 48)  # N x K, packed
    bts = [w.t(), base[8: 8 + 40 * 48].view(40, 48).t(), base[1: 1 + 40 * 48].view(40, 48).t(), pad_rows(w[:, :40]).t(),
           base[: 48 * 40].view(48, 40), base[:48].view(1, 48).t()]
    a, out = base[: 24 * 48].view(24, 48), base[: 24 * 40].view(24, 40)
    for bt in bts:
        k, n = bt.shape
        fast = _packed_bt_strides(a[:, :k], bt, out[:, :n], 24, n, k)
        if fast is not None:
            assert fast == (k, k, n) and col_stride(bt) == k and row_stride(out[:, :n]) == n, bt.stride()
    assert _packed_bt_strides(a, bts[0], out, 24, 40, 48) == (48, 48, 40)
    assert _packed_bt_strides(a, bts[2], out, 24, 40, 48) is None  # 2-byte offset
    assert _packed_bt_strides(a[:, :40], bts[3], out, 24, 40, 40) is None  # padded rows: col_stride's case
    assert _packed_bt_strides(a, bts[4].t().contiguous(), out, 24, 40, 48) is None  # row-major: the NN path's case
    assert _packed_bt_strides(a, bts[5], out[:, :1], 24, 1, 48) is None  # N not a multiple of 8


@pytest.fixture
def cpu_hgemm(monkeypatch):
    """hgemm's routing on CPU tensors: the launchers record what they were handed instead of launching."""
    import torch

    import cudaopt.gemm as g

    calls = []

    class FakeLib:
        @staticmethod
        def has_bt(config, splits=1):
            return FakeLib.bt

        bt = True
        workspace_bytes = staticmethod(lambda m, n, splits: 0)
        launch_ours = staticmethod(lambda a, b, c, m, n, k, cfg, splits, wp, wb, st, *lds: calls.append(
            ("nn", b, lds)))
        launch_ours_bt = staticmethod(lambda a, b, c, m, n, k, cfg, splits, wp, wb, st, *lds: calls.append(
            ("bt", b, lds)))

    def checked(a, b):  # hgemm's check less its is_cuda line
        assert a.dtype == b.dtype == torch.float16 and a.shape[1] == b.shape[0]

    monkeypatch.setattr(g, "_hot_modules", (torch, FakeLib, None))
    monkeypatch.setattr(g, "_check_operands", checked)
    monkeypatch.setattr(g, "_raw_stream", lambda index: 0)
    monkeypatch.delenv("CUDAOPT_GEMM_BT", raising=False)
    return g, FakeLib, calls


def test_hgemm_routes_both_layouts_and_transposed_b_without_the_row_stride_reads(cpu_hgemm, monkeypatch):
    """(session 50) handed both layouts with a both_bt choice, hgemm reads the copy through the B^T route with the
    packed strides; with CUDAOPT_GEMM_BT=0 it reads b through the NN path; with no twin for the choice, torch.matmul on
    the copy, as hgemm(a, copy) would and as the grids that chose "bt" timed it (session 52; session 50 read b there);
    a packed transposed b goes to the B^T route without reading row strides; a padded one still reaches it through
    col_stride."""
    import dataclasses

    import torch

    g, lib, calls = cpu_hgemm
    m, n, k = 64, 40, 48
    a, b = torch.zeros(m, k, dtype=torch.float16), torch.zeros(k, n, dtype=torch.float16)
    bcm = b.t().contiguous().t()
    nn = Choice("ours", 42, 1)
    both = dataclasses.replace(nn, both_bt=True)
    g.hgemm(a, b, choice=both, b_col_major=bcm)
    g.hgemm(a, b, choice=nn, b_col_major=bcm)
    assert calls == [("bt", bcm.data_ptr(), (k, k, n)), ("nn", b.data_ptr(), (k, n, n))]
    calls.clear()
    monkeypatch.setenv("CUDAOPT_GEMM_BT", "0")
    g.hgemm(a, b, choice=both, b_col_major=bcm)
    monkeypatch.delenv("CUDAOPT_GEMM_BT")
    assert calls == [("nn", b.data_ptr(), (k, n, n))]
    calls.clear()
    lib.bt = False  # (no twin: torch.matmul, here on a copy holding other values, so the product says which it read)
    a1, other = torch.ones(m, k, dtype=torch.float16), torch.full((n, k), 0.5, dtype=torch.float16).t()
    got = g.hgemm(a1, b, choice=both, b_col_major=other)
    assert calls == [] and torch.equal(got, torch.full((m, n), 0.5 * k, dtype=torch.float16))
    lib.bt = True
    reads = []
    real = g.row_stride
    monkeypatch.setattr(g, "row_stride", lambda t: (reads.append(t.shape), real(t))[1])
    g.hgemm(a, bcm, choice=nn)
    assert calls == [("bt", bcm.data_ptr(), (k, k, n))] and reads == []
    calls.clear()
    padded = g.pad_rows(b.t().contiguous()).t()  # N x K rows padded to 64: column stride 64
    g.hgemm(a, padded, choice=nn)
    assert calls == [("bt", padded.data_ptr(), (k, 64, n))] and reads


def test_a_neighbours_split_count_is_refitted_to_the_tile_count():
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    gen2 = next(c for c in WGMMA_CONFIGS if c.schedule != 0 and c.max_splits > 1)
    table = {(512, 512, 4096): Choice("ours", gen2.id, 8)}
    assert dispatch.choose(512, 512, 4096, table) == Choice("ours", gen2.id, 8)  # exact: as tuned
    near = dispatch.choose(2048, 2048, 4096, table)  # 4x the tiles: 8 splits would time past 4 x SMs
    assert near.config == gen2.id and near.splits < 8
    assert gen2.tiles(2048, 2048) * near.splits <= 4 * 132 < gen2.tiles(2048, 2048) * near.splits * 2
    assert dispatch.choose(1024, 512, 1024, table) == Choice("ours", gen2.id, 8)  # few tiles: kept
    assert dispatch.choose(512, 512, 65536, table) == dispatch.heuristic_choice(512, 512, 65536)  # 16x K: out of reach


def test_heuristic_fills_the_sms_or_splits_k():
    big = dispatch.heuristic_choice(16384, 16384, 16384)
    assert KERNEL_CONFIGS[big.config].tiles(16384, 16384) >= 132 and big.splits == 1
    skinny = dispatch.heuristic_choice(64, 64, 16384)
    assert skinny.splits > 1
    assert dispatch.heuristic_choice(64, 64, 64).splits == 1


def test_candidates_and_python_mirror_of_the_family():
    assert len(KERNEL_CONFIGS) >= 12
    for cfg in (c for c in KERNEL_CONFIGS if c.kind == "mma"):  # wgmma: tests/test_gemm_wgmma.py
        assert cfg.smem_bytes <= 227 * 1024 and cfg.threads in (128, 256)
        assert (cfg.bm // cfg.warps_m) % 16 == 0 and (cfg.bn // cfg.warps_n) % 16 == 0
    cands = candidate_choices(64, 64, 16384)
    assert any(c.splits > 1 for c in cands)
    assert all(KERNEL_CONFIGS[c.config].bm <= 128 for c in cands)
    assert all(c.splits == 1 for c in candidate_choices(16384, 16384, 16384))


@pytest.mark.parametrize("device", ["NVIDIA H200", "NVIDIA H100 80GB HBM3"])
def test_shipped_tables_parse_and_cover_the_grid(device):
    from cudaopt.gemm.shapes import grid_shapes

    path = dispatch.shipped_tables()[device]  # (session 44: one a GPU, found by the name its "device" field gives)
    table = dispatch.load_table(str(path))
    assert set(table) == set(grid_shapes())
    for c in table.values():
        assert c.backend in dispatch.BACKENDS and 0 <= c.config < len(KERNEL_CONFIGS)
        assert (c.algo >= 0) == (c.backend == "cublaslt")  # an algorithm index only on cuBLASLt fallbacks


def test_python_mirror_matches_the_cuda_source():
    import re
    from pathlib import Path

    import cudaopt.gemm as g

    src = (Path(g.__file__).parent / "csrc" / "hgemm_mma.cu").read_text()
    rows = [tuple(int(v) for v in m) for m in re.findall(r"CUDAOPT_CFG\((\d+), (\d+), (\d+), (\d+), (\d+), (\d+)\)", src)]
    assert rows == [(c.bm, c.bn, c.bk, c.warps_m, c.warps_n, c.stages) for c in KERNEL_CONFIGS if c.kind == "mma"]


# --- resumable benchmark and tuning (the GPU parts monkeypatched; bookkeeping for real) -----------


SHAPES5 = [(64, 64, 64), (128, 128, 128), (256, 256, 256), (512, 512, 512), (1024, 1024, 1024)]


class _Killed(BaseException):
    """Stands in for the process being killed mid-shape (not an Exception: nothing may catch it)."""


def test_shard_parse_and_selection():
    assert bench.parse_shard(None) is None and bench.parse_shard("") is None
    assert bench.parse_shard("1/3") == (1, 3) and bench.parse_shard(" 0 / 1 ") == (0, 1)
    for bad in ("3/2", "2/2", "1/0", "-1/2", "a/b", "1", "1/2/3"):
        with pytest.raises(ValueError, match="shard"):
            bench.parse_shard(bad)
    assert bench.shard_indices(7, (1, 3)) == [1, 4]
    assert bench.shard_indices(4, None) == [0, 1, 2, 3]
    parts = [bench.shard_indices(1000, (i, 3)) for i in range(3)]
    assert sorted(j for p in parts for j in p) == list(range(1000))  # disjoint and complete


def test_shape_log_roundtrip_survives_a_cut_line(tmp_path):
    log = tmp_path / "out" / bench.SHAPE_LOG
    r1 = bench.shape_record(0, (64, 64, 64), "offline", "gpu", times={"ours": 5.0, "torch": math.nan}, check={"correct": True})
    bench.append_record(log, r1)
    with open(log, "a") as f:
        f.write('{"m": 128, "n": 128, "k"')  # a kill in the middle of a write
    r2 = bench.shape_record(2, (256, 256, 256), "offline", "gpu", error="RuntimeError: boom", fatal=False)
    bench.append_record(log, r2)
    recs = bench.load_log(log)
    assert set(recs) == {(64, 64, 64), (256, 256, 256)}  # the cut line is ignored, the next one kept
    assert recs[(64, 64, 64)]["times"] == {"ours": 5.0, "torch": None}  # NaN stored as null
    assert abs(recs[(64, 64, 64)]["finished_at"] - time.time()) < 600  # wall time, to line up with clock samples
    assert recs[(256, 256, 256)]["status"] == "failed" and recs[(256, 256, 256)]["error"] == "RuntimeError: boom"
    bench.append_record(log, bench.shape_record(2, (256, 256, 256), "offline", "gpu", times={"ours": 1.0}))
    assert bench.load_log(log)[(256, 256, 256)]["status"] == "ok"  # the last record of a shape wins
    assert bench.load_log(tmp_path / "missing.jsonl") == {}


def test_a_runs_protocol_is_logged_and_resumes_only_its_own_records(monkeypatch):
    """(session 52) a bench run's seed (other than 0) and gpu timing's L2 flush (on by default since session 53,
    CUDAOPT_GEMM_L2_FLUSH=0 turns it off) are logged with each shape; a resumed run counts only records of its own
    protocol (records without one: seed 0, no flush)."""
    from cudaopt.gemm.timing import L2_FLUSH_ENV, l2_flush_on

    monkeypatch.delenv(L2_FLUSH_ENV, raising=False)
    assert l2_flush_on() and not l2_flush_on(False)
    flushed = bench.run_protocol(3, "gpu")
    assert flushed == {"seed": 3, "l2_flush": True}
    monkeypatch.setenv(L2_FLUSH_ENV, "0")
    assert bench.run_protocol(0, "gpu") == {} and not l2_flush_on() and l2_flush_on(True)
    assert bench.run_protocol(3, "gpu") == {"seed": 3}
    monkeypatch.setenv(L2_FLUSH_ENV, "1")
    assert bench.run_protocol(0, "gpu") == {"l2_flush": True}
    assert bench.run_protocol(0, "call") == {}  # (call timing has no replays to flush before)
    a, b, c = (64, 64, 64), (128, 128, 128), (256, 256, 256)
    recs = {a: bench.shape_record(0, a, "offline", "gpu", times={"ours": 1.0}),
            b: bench.shape_record(1, b, "offline", "gpu", times={"ours": 1.0}, protocol=flushed),
            c: bench.shape_record(2, c, "offline", "gpu", error="E: x", protocol={"seed": 3})}
    assert "protocol" not in recs[a] and recs[b]["protocol"] == flushed
    assert set(bench.usable_records(recs, [a, b, c], "offline", "gpu")) == {a}
    assert set(bench.usable_records(recs, [a, b, c], "offline", "gpu", protocol=flushed)) == {b}
    assert set(bench.usable_records(recs, [a, b, c], "offline", "gpu", protocol={"seed": 3})) == {c}


def test_records_filtered_and_turned_into_a_result():
    recs = {(64, 64, 64): bench.shape_record(0, (64, 64, 64), "offline", "gpu",
                                             times={"ours": 5.0, "torch": 10.0, "cublas_nn": 8.0, "cublas_tn": 4.0},
                                             check={"correct": True}),
            (128, 128, 128): bench.shape_record(1, (128, 128, 128), "offline", "gpu", times={"ours": math.nan, "torch": 3.0}),
            (256, 256, 256): bench.shape_record(2, (256, 256, 256), "offline", "gpu", error="E: x"),
            (512, 512, 512): bench.shape_record(3, (512, 512, 512), "server", "gpu", times={"ours": 1.0})}
    kept = bench.usable_records(recs, SHAPES5[:3] + [(512, 512, 512)], "offline", "gpu")
    assert set(kept) == set(SHAPES5[:3])  # another mode's record does not count
    assert set(bench.usable_records(recs, SHAPES5[:1], "offline", "gpu")) == {(64, 64, 64)}
    res = bench.result_from_records(kept)
    assert res.failed == {(256, 256, 256): "E: x"}
    assert res.times["cublas_max"] == {(64, 64, 64): 4.0}
    assert math.isnan(res.times["ours"][(128, 128, 128)]) and res.checks == {(64, 64, 64): {"correct": True}}
    vs_torch = next(s for s in res.summaries if s.baseline == "ours vs torch" and s.group == "all")
    assert vs_torch.n == 1 and vs_torch.median_ratio == 2.0  # the NaN shape is left out


def _fake_bench(calls, kill_at=None, fail=(), ours=lambda i: 1.0 + i):
    def fake(index, shape, env):
        if index == kill_at:
            raise _Killed()
        calls.append(index)
        if index in fail:
            raise RuntimeError(f"CUDA error in a candidate on {shape}")
        return {"ours": ours(index), "torch": 2.0 * ours(index)}, {"correct": True}, {}
    return fake


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(bench, "_gpu_setup", lambda seed, with_blas, log: False)
    monkeypatch.setattr(bench, "_release", lambda: None)
    monkeypatch.setattr(bench, "cuda_usable", lambda: True)
    monkeypatch.setattr(tune, "_device_meta", lambda: {"device": "fake", "torch": "x"})
    return monkeypatch


def test_run_bench_killed_then_resumed(tmp_path, no_gpu):
    calls = []
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls, kill_at=3))
    with pytest.raises(_Killed):
        bench.run_bench(SHAPES5, out_dir=tmp_path, log=lambda s: None)
    assert calls == [0, 1, 2] and len(bench.load_log(tmp_path / bench.SHAPE_LOG)) == 3
    calls.clear()
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls))
    res = bench.run_bench(SHAPES5, out_dir=tmp_path, log=lambda s: None)
    assert calls == [3, 4]  # the logged shapes are not run again
    assert res.times["ours"] == {s: 1.0 + i for i, s in enumerate(SHAPES5)}  # ...but reported
    assert len(res.checks) == 5 and not res.skipped and not res.failed
    calls.clear()
    no_gpu.delenv(dispatch.TABLE_ENV, raising=False)
    said = []
    res = bench.run_bench(SHAPES5, out_dir=tmp_path, resume=False, log=said.append)
    assert calls == [0, 1, 2, 3, 4] and len(bench.load_log(tmp_path / bench.SHAPE_LOG)) == 5  # log started afresh
    want = f"table: {dispatch.DEFAULT_TABLE} (tuned on NVIDIA H200; fingerprint {dispatch.table_digest()})"
    assert want in said  # (no GPU here: the H200's, by default)


def test_a_resumed_run_never_mixes_two_tables(tmp_path, no_gpu):
    """(session 59) every record carries its table's fingerprint; a run resumed with another table measures the
    logged shapes afresh, a run resumed with the same table takes its own records back, and a summary of an old log
    that mixes tables (records from before fingerprints) says so in summary.md."""
    h200, h100 = dispatch.DEFAULT_TABLE, dispatch.DEFAULT_TABLE.parent / "tuned_h100.json"
    d200, d100 = dispatch.table_digest(str(h200)), dispatch.table_digest(str(h100))
    assert len({d200, d100}) == 2 and len(d200) == 12 and dispatch.table_digest(str(tmp_path / "no.json")) == "none"
    calls = []
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls, kill_at=2))
    with pytest.raises(_Killed):
        bench.run_bench(SHAPES5, out_dir=tmp_path, table_path=str(h200), log=lambda s: None)
    assert calls == [0, 1] and {r["table"] for r in bench.load_log(tmp_path / bench.SHAPE_LOG).values()} == {d200}
    calls.clear()
    said = []
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls, kill_at=3))
    with pytest.raises(_Killed):
        bench.run_bench(SHAPES5, out_dir=tmp_path, table_path=str(h100), log=said.append)
    assert calls == [0, 1, 2]  # the H200 table's two shapes are not taken for the H100 table's
    assert "2 logged shapes were measured with another table: measuring them afresh" in said
    calls.clear()
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls))
    res = bench.run_bench(SHAPES5, out_dir=tmp_path, table_path=str(h100), log=lambda s: None)
    assert calls == [3, 4] and res.tables == (d100,) and len(res.times["ours"]) == 5  # its own three come back
    bench.write_outputs(res, tmp_path, "t")
    assert f"table fingerprint: {d100}" in (tmp_path / "summary.md").read_text()
    # a log written before session 59: records without a fingerprint, beside new ones; nothing left to run
    old = tmp_path / "old"
    for i, s in enumerate(SHAPES5):
        rec = bench.shape_record(i, s, "offline", "gpu", times={"ours": 1.0, "torch": 2.0}, check={"correct": True},
                                 protocol=bench.run_protocol(0, "gpu"), table=d100 if i < 2 else None)
        bench.append_record(old / bench.SHAPE_LOG, rec)
    calls.clear()
    res = bench.run_bench(SHAPES5, out_dir=old, log=lambda s: None)
    assert calls == [] and res.tables == ("", d100)
    bench.write_outputs(res, old, "t")
    assert f"WARNING: these shapes were measured with 2 different tables (unrecorded, {d100})" in (
        old / "summary.md").read_text()


def test_run_bench_shuffled_order_is_seeded_covers_every_shape_and_resumes(tmp_path, no_gpu):
    """(session 40) order="shuffled": a seeded permutation, so a budget-cut run leaves out shapes of every class, not
    the largest; the same seed gives the same order, resuming runs the rest, and a bad order is one clear error."""
    shapes = [(64 * (i + 1), 64, 64) for i in range(12)]
    calls = []
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls))
    bench.run_bench(shapes, out_dir=tmp_path / "a", log=lambda s: None, order="shuffled", seed=3)
    first = list(calls)
    assert sorted(first) == list(range(12)) and first != list(range(12))
    calls.clear()
    bench.run_bench(shapes, out_dir=tmp_path / "b", log=lambda s: None, order="shuffled", seed=3)
    assert calls == first  # (seeded)
    calls.clear()
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls, kill_at=first[5]))
    with pytest.raises(_Killed):
        bench.run_bench(shapes, out_dir=tmp_path / "c", log=lambda s: None, order="shuffled", seed=3)
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls))
    res = bench.run_bench(shapes, out_dir=tmp_path / "c", log=lambda s: None, order="shuffled", seed=3)
    assert calls == first and len(res.times["ours"]) == 12  # the first five, then the rest in the same order
    with pytest.raises(ValueError, match="order 'random'"):
        bench.run_bench(shapes, out_dir=tmp_path / "d", log=lambda s: None, order="random")
    from cudaopt.gemm.cli import check_args

    with pytest.raises(ValueError, match="order 'sorted': use 'list' or 'shuffled'"):
        check_args("grid", order="sorted")


def test_run_bench_of_a_diagnostic_build_is_labelled_and_not_mixed(tmp_path, no_gpu):
    """Session 37: with CUDAOPT_GEMM_DEFINES the package's kernel library is a diagnostic build; its shapes' records
    carry the defines, a resumed run of the shipped build measures them afresh (and the reverse) instead of mixing
    two builds' times, and summary.md says the kernels are not the shipped ones."""
    calls = []
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls))
    no_gpu.setenv("CUDAOPT_GEMM_DEFINES", "CUDAOPT_EXPERIMENT_TOP_WAIT,CUDAOPT_EXPERIMENT_RING_FIRST_WAIT")
    res = bench.run_bench(SHAPES5[:2], out_dir=tmp_path, log=lambda s: None)
    want = ("CUDAOPT_EXPERIMENT_RING_FIRST_WAIT", "CUDAOPT_EXPERIMENT_TOP_WAIT")
    assert calls == [0, 1] and res.build == want
    assert all(tuple(r["build"]) == want for r in bench.load_log(tmp_path / bench.SHAPE_LOG).values())
    bench.write_outputs(res, tmp_path, "t")
    assert f"diagnostic build, CUDAOPT_GEMM_DEFINES = {' '.join(want)} (not the shipped" in (
        tmp_path / "summary.md").read_text()
    no_gpu.delenv("CUDAOPT_GEMM_DEFINES")
    calls.clear()
    res = bench.run_bench(SHAPES5[:3], out_dir=tmp_path, log=lambda s: None)
    assert calls == [0, 1, 2] and res.build == () and len(res.times["ours"]) == 3  # nothing taken from the variant
    assert "build" not in bench.load_log(tmp_path / bench.SHAPE_LOG)[SHAPES5[0]]
    bench.write_outputs(res, tmp_path, "t")
    assert "diagnostic build" not in (tmp_path / "summary.md").read_text()


def test_summary_says_how_the_run_timed(tmp_path, no_gpu):
    """(session 53) summary.md names the run's seed and whether gpu timing flushed L2: grids of different protocols
    are not to be read as one."""
    no_gpu.setattr(bench, "_bench_shape", _fake_bench([]))
    no_gpu.delenv("CUDAOPT_GEMM_L2_FLUSH", raising=False)
    res = bench.run_bench(SHAPES5[:2], out_dir=tmp_path / "a", seed=7, log=lambda s: None)
    assert res.protocol == {"seed": 7, "l2_flush": True}
    bench.write_outputs(res, tmp_path / "a", "HGEMM offline / gpu timing")
    assert "timing protocol: seed 7; L2 flushed before every timed replay" in (tmp_path / "a/summary.md").read_text()
    no_gpu.setenv("CUDAOPT_GEMM_L2_FLUSH", "0")
    res = bench.run_bench(SHAPES5[:2], out_dir=tmp_path / "b", log=lambda s: None)
    assert res.protocol == {}
    bench.write_outputs(res, tmp_path / "b", "HGEMM offline / gpu timing")
    assert "timing protocol: seed 0; L2 not flushed" in (tmp_path / "b/summary.md").read_text()
    no_gpu.delenv("CUDAOPT_GEMM_L2_FLUSH")
    res = bench.run_bench(SHAPES5[:2], timing="call", out_dir=tmp_path / "c", log=lambda s: None)
    bench.write_outputs(res, tmp_path / "c", "HGEMM offline / call timing")
    lines = (tmp_path / "c/summary.md").read_text().splitlines()
    assert "timing protocol: seed 0" in lines  # (call timing has no replays to flush before: no L2 clause)


def test_run_bench_budget_reports_skipped_and_writes_outputs(tmp_path, no_gpu):
    calls = []
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls))
    res = bench.run_bench(SHAPES5, out_dir=tmp_path, budget_s=0.0, log=lambda s: None)
    assert calls == [] and res.skipped == SHAPES5 and res.times == {}
    bench.write_outputs(res, tmp_path, "t")
    md = (tmp_path / "summary.md").read_text()
    assert "shapes timed: 0;" in md and "skipped for time: 5" in md and "not run yet" in md and res.remaining == 5


def test_bench_report_carries_the_runs_own_aa_noise(tmp_path, no_gpu):
    """summary.md's A/A table (session 32): on the shapes the table hands to torch.matmul, "dispatch" is torch.matmul
    itself, so torch / dispatch there is the run's per-shape noise; shapes dispatched elsewhere stay out of it."""
    from cudaopt.gemm.stats import aa_spread

    aa = {0: 1.02, 1: 0.98, 2: 1.0}  # shapes 0-2 dispatch to torch; 3-4 to ours (their ratio 2.0 must not count)

    def fake(index, shape, env):
        label = bench.TORCH_DISPATCH if index in aa else "wgmma64x64x64_pp_s8_e1"
        t_torch = 2.0
        return ({"ours": 1.0, "dispatch": t_torch / aa.get(index, 2.0), "torch": t_torch},
                {"correct": True, "dispatch": label}, {})

    no_gpu.setattr(bench, "_bench_shape", fake)
    res = bench.run_bench(SHAPES5, out_dir=tmp_path, log=lambda s: None)
    assert bench.aa_ratios(res) == pytest.approx({SHAPES5[i]: r for i, r in aa.items()})
    (group, n, geo, sd, dev), *_ = aa_spread(bench.aa_ratios(res))
    assert (group, n) == ("all", 3) and geo == pytest.approx((1.02 * 0.98) ** (1 / 3))
    assert sd == pytest.approx(0.016330, rel=1e-3) and dev == pytest.approx(0.02)
    bench.write_outputs(res, tmp_path, "t")
    md = (tmp_path / "summary.md").read_text()
    assert "### A/A: torch.matmul timed as dispatch and as torch" in md and "| all | 3 | 0.9999 | 1.63% | 2.0% |" in md
    res.checks = {s: {"correct": True} for s in SHAPES5}  # no dispatch labels (a run without checks): no A/A table
    bench.write_outputs(res, tmp_path, "t")
    assert "A/A" not in (tmp_path / "summary.md").read_text()


def test_bench_report_carries_a_second_aa_on_the_shapes_dispatched_to_ours(tmp_path):
    """(session 40) where the dispatcher runs ours, "dispatch" and "ours" are one kernel: t_ours / t_dispatch is a
    second A/A over far more shapes (session 38's grids: 660 against 128), medians and paired, in summary.md."""
    from cudaopt.gemm.stats import aa_spread

    a, b, c = (64, 64, 64), (128, 128, 128), (256, 256, 256)
    label = "wgmma64x64x64_pp_s8_e1"
    times = {"dispatch": {a: 10.0, b: 10.0, c: 10.0}, "ours": {a: 10.1, b: 9.9, c: 9.0}, "torch": {a: 11, b: 11, c: 10.0}}
    checks = {a: {"correct": True, "dispatch": label, "choice": label},
              b: {"correct": True, "dispatch": label, "choice": label},
              c: {"correct": True, "dispatch": bench.TORCH_DISPATCH, "choice": label}}  # (c: ours is not dispatch)
    paired = {"ours vs dispatch": {a: 1 / 1.005, b: 1.0, c: 1.11}}
    res = bench.BenchResult(times=times, checks=checks, paired=paired)
    assert bench.aa_ratios(res, twin="ours") == pytest.approx({a: 1.01, b: 0.99})
    assert bench.aa_ratios(res, twin="ours", paired=True) == pytest.approx({a: 1.005, b: 1.0})
    assert bench.aa_ratios(res) == pytest.approx({c: 1.0})  # (the torch A/A: c only)
    with pytest.raises(ValueError, match="twin 'lt'"):
        bench.aa_ratios(res, twin="lt")
    bench.write_outputs(res, tmp_path, "t")
    md = (tmp_path / "summary.md").read_text()
    assert "### A/A: our kernel timed as dispatch and as ours (shapes the table runs ours on)" in md
    (group, n, geo, sd, dev), *_ = aa_spread(bench.aa_ratios(res, twin="ours"))
    assert (group, n) == ("all", 2) and f"| all | 2 | {geo:.4f} | {100 * sd:.2f}% | {100 * dev:.1f}% |" in md


def test_dispatch_floor_tells_the_tn_only_shapes_from_the_others(tmp_path):
    """stats.dispatch_floor (session 36): the shapes dispatch runs under 0.98x of a baseline, slowest first; tn_only
    where the baseline's TN layout beats every NN-readable candidate of the run by more than 2% (no table choice
    reaches it), not where some NN option was within 2% of it. write_outputs reports both counts and floor.csv."""
    from cudaopt.gemm.stats import dispatch_floor

    a, b, c, d = (64, 64, 64), (128, 128, 128), (256, 256, 256), (512, 512, 512)
    times = {
        "dispatch": {a: 10.0, b: 10.0, c: 10.0, d: 10.0},
        "ours": {a: 10.5, b: 10.5, c: 9.6, d: 9.0},
        "torch": {a: 10.2, b: 10.0, c: 10.0, d: 10.0},
        "lt_auto_nn": {a: 10.1, b: 9.6, c: 9.9, d: 9.9},
        "lt_auto_tn": {a: 9.5, b: 9.5, c: 9.7, d: 9.9},
    }
    times["lt_auto_max"] = {s: min(times["lt_auto_nn"][s], times["lt_auto_tn"][s]) for s in times["dispatch"]}
    under = dispatch_floor(times)
    # a: TN 9.5 against the best NN 10.1 (6% faster): TN only. b: NN autotuned 9.6 within 2% of TN 9.5: reachable.
    # c: 0.97x, TN 9.7 against ours 9.6: reachable. d: 0.99x: not under the floor.
    assert [(f.shape, f.tn_only, f.best_nn) for f in under] == [(a, True, "dispatch"), (b, False, "lt_auto_nn"),
                                                                (c, False, "ours")]
    assert under[0].ratio == pytest.approx(0.95) and under[0].tn_gain == pytest.approx(10.0 / 9.5)
    assert [f.shape for f in dispatch_floor(times, "torch")] == []  # dispatch never under torch here
    assert math.isnan(dispatch_floor({"dispatch": {a: 2.0}, "torch": {a: 1.0}}, "torch")[0].tn_gain)

    res = bench.BenchResult(times=times, checks={s: {"correct": True, "dispatch": "fallback:torch"} for s in times["ours"]})
    bench.write_outputs(res, tmp_path, "t")
    md = (tmp_path / "summary.md").read_text()
    assert "### Dispatcher floor" in md and "| lt_auto_max | 3 | 1 | 0.950 (64x64x64) |" in md
    assert "| lt_auto_nn | 1 | 0 | 0.960 (128x128x128) |" in md  # (session 42) like for like: NN against NN
    rows = (tmp_path / "floor.csv").read_text().splitlines()
    assert rows[0] == "m,n,k,dispatch,ratio,best_nn,tn_gain,tn_only,paired_ratio,paired_hi95"
    assert rows[1].startswith("64,64,64,fallback:torch,0.9500")
    assert len(rows) == 4 and rows[1].endswith(",1,,") and rows[2].endswith(",0,,")  # (no paired ratios logged)


def test_floor_and_aa_are_also_read_paired_within_rounds(tmp_path):
    """Session 39: the floor and the A/A again on the within-round paired ratios, beside the ratios of medians. A
    shape whose medians read 0.95x (clock drift between rounds) but 1.0 paired counts under the floor only in the
    first row; a paired ratio under 0.98 counts in the second; floor.csv carries each listed shape's paired ratio."""
    from cudaopt.gemm.stats import dispatch_floor

    a, b, c = (64, 64, 64), (128, 128, 128), (256, 256, 256)
    times = {"dispatch": {a: 10.0, b: 10.0, c: 10.0}, "ours": {a: 10.0, b: 10.0, c: 10.0},
             "torch": {a: 9.5, b: 10.0, c: 10.1}, "lt_auto_nn": {a: 9.5, b: 9.9, c: 9.9},
             "lt_auto_tn": {a: 9.6, b: 9.9, c: 9.95}}
    times["lt_auto_max"] = {s: min(times["lt_auto_nn"][s], times["lt_auto_tn"][s]) for s in times["dispatch"]}
    paired = {"dispatch vs lt_auto_max": {a: 1.0, b: 0.97, c: 0.99}, "dispatch vs torch": {a: 1.0, b: 1.0, c: 0.99},
              "lt_auto_nn vs dispatch": {a: 1.0 / 0.95, b: 1.0, c: 0.99}}  # (dispatch / lt_auto_nn within rounds)
    assert [f.shape for f in dispatch_floor(times)] == [a]
    under = dispatch_floor(times, shape_ratios=paired["dispatch vs lt_auto_max"])
    assert [(f.shape, f.ratio, f.best_nn) for f in under] == [(b, 0.97, "lt_auto_nn")]
    assert dispatch_floor({}, shape_ratios={a: 0.9})[0].best_nn == ""  # paired only: no medians, no crash

    checks = {s: {"correct": True, "dispatch": bench.TORCH_DISPATCH} for s in (a, b)}
    checks[c] = {"correct": True, "dispatch": "wgmma64x64x64_pp_s8_e1"}
    res = bench.BenchResult(times=times, checks=checks, paired=paired)
    assert bench.aa_ratios(res) == pytest.approx({a: 0.95, b: 1.0})
    assert bench.aa_ratios(res, paired=True) == {a: 1.0, b: 1.0}  # c is not dispatched to torch: not an A/A
    bench.write_outputs(res, tmp_path, "t")
    md = (tmp_path / "summary.md").read_text()
    assert "| lt_auto_max | 1 | 0 | 0.950 (64x64x64) |" in md
    assert "| lt_auto_max (paired) | 1 | 0 | 0.970 (128x128x128) |" in md
    assert "| lt_auto_nn (paired) | 1 | 0 | 0.950 (64x64x64) |" in md  # (session 42: inverted to lt_auto_nn / dispatch)
    assert "Paired within rounds" in md and "| all | 2 | 1.0000 | 0.00% | 0.0% |" in md
    rows = (tmp_path / "floor.csv").read_text().splitlines()
    assert rows[0].endswith(",tn_only,paired_ratio,paired_hi95") and rows[1].startswith("64,64,64,")
    assert rows[1].endswith(",1.0000,")  # (no upper bounds logged)
    import csv

    with open(tmp_path / "shapes.csv", newline="") as f:  # shapes.csv carries each paired ratio beside the checks
        by_shape = {(int(r["m"]), int(r["n"]), int(r["k"])): r for r in csv.DictReader(f)}
    assert by_shape[b]["paired_dispatch_vs_lt_auto_max"] == "0.9700" and by_shape[c]["paired_dispatch_vs_torch"] == "0.9900"
    assert by_shape[a]["dispatch"] == bench.TORCH_DISPATCH
    res.paired = {}  # a run logged before session 39: the old rows only
    bench.write_outputs(res, tmp_path, "t")
    md = (tmp_path / "summary.md").read_text()
    assert "(paired)" not in md and "Paired within rounds" not in md


def test_run_bench_failed_shape_is_recorded_and_the_run_goes_on(tmp_path, no_gpu):
    calls = []
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls, fail={1}))
    res = bench.run_bench(SHAPES5, out_dir=tmp_path, log=lambda s: None)
    assert calls == [0, 1, 2, 3, 4]
    assert list(res.failed) == [SHAPES5[1]] and "CUDA error" in res.failed[SHAPES5[1]]
    assert len(res.times["ours"]) == 4 and not res.aborted
    rec = bench.load_log(tmp_path / bench.SHAPE_LOG)[SHAPES5[1]]
    assert rec["status"] == "failed" and rec["fatal"] is False
    bench.write_outputs(res, tmp_path, "t")
    md = (tmp_path / "summary.md").read_text()
    assert "shapes timed: 4; correct (all checks): 4/4" in md and "failed shapes" in md and "128x128x128" in md


def test_run_bench_stops_cleanly_when_the_context_dies(tmp_path, no_gpu):
    calls = []
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls, fail={2}))
    no_gpu.setattr(bench, "cuda_usable", lambda: False)
    res = bench.run_bench(SHAPES5, out_dir=tmp_path, log=lambda s: None)
    assert calls == [0, 1, 2] and "unusable" in res.aborted
    assert res.skipped == SHAPES5[3:] and len(res.times["ours"]) == 2
    assert bench.load_log(tmp_path / bench.SHAPE_LOG)[SHAPES5[2]]["fatal"] is True
    calls.clear()
    no_gpu.setattr(bench, "cuda_usable", lambda: True)
    res = bench.run_bench(SHAPES5, out_dir=tmp_path, log=lambda s: None)
    assert calls == [3, 4]  # a fresh process goes on; the failed shape is not retried
    assert len(res.times["ours"]) == 4 and list(res.failed) == [SHAPES5[2]]


def test_run_bench_shards_split_the_grid_and_share_one_log(tmp_path, no_gpu):
    calls = []
    no_gpu.setattr(bench, "_bench_shape", _fake_bench(calls))
    first = bench.run_bench(SHAPES5, out_dir=tmp_path, shard="1/2", log=lambda s: None)
    assert calls == [1, 3] and set(first.times["ours"]) == {SHAPES5[1], SHAPES5[3]} and first.remaining == 3
    second = bench.run_bench(SHAPES5, out_dir=tmp_path, shard="0/2", log=lambda s: None)
    assert calls == [1, 3, 0, 2, 4]
    assert set(second.times["ours"]) == set(SHAPES5)  # the report covers both shards' shapes
    assert second.remaining == 0 and not second.skipped
    with pytest.raises(ValueError, match="shard"):
        bench.run_bench(SHAPES5, out_dir=tmp_path, shard="2/2")


def test_table_written_atomically(tmp_path, monkeypatch):
    path = tmp_path / "t" / "tuned.json"
    tune.write_json_atomic(path, {"entries": [1]})
    assert json.loads(path.read_text()) == {"entries": [1]}

    def broken_dump(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(tune.json, "dump", broken_dump)
    with pytest.raises(OSError):
        tune.write_json_atomic(path, {"entries": [2]})
    assert json.loads(path.read_text()) == {"entries": [1]}  # the old table stays whole
    assert [p.name for p in path.parent.iterdir()] == ["tuned.json"]  # no temp file left behind


def _entry(shape, tag="x"):
    m, n, k = shape
    return {"m": m, "n": n, "k": k, "backend": "ours", "config": 0, "splits": 1, "ours_us": 1.0, "torch_us": 1.0, "tag": tag}


def test_save_table_merges_what_another_shard_wrote(tmp_path):
    path = tmp_path / "tuned.json"
    meta = {"device": "fake"}
    tune.save_table(path, {SHAPES5[0]: _entry(SHAPES5[0], "other")}, {}, True, meta)  # another process
    data = tune.save_table(path, {SHAPES5[1]: _entry(SHAPES5[1])}, {}, True, meta)
    assert [(e["m"], e["tag"]) for e in data["entries"]] == [(64, "other"), (128, "x")]
    data = tune.save_table(path, {SHAPES5[1]: _entry(SHAPES5[1])}, {}, False, meta)  # no merge: ours only
    assert [e["m"] for e in json.loads(path.read_text())["entries"]] == [128]
    assert tune.shapes_to_tune(SHAPES5, [0, 1, 2], {SHAPES5[1]: {}}, retune=False) == [0, 2]
    assert tune.shapes_to_tune(SHAPES5, [0, 1, 2], {SHAPES5[1]: {}}, retune=True) == [0, 1, 2]


def _fake_tune(calls, kill_at=None, fail=(), tag="x"):
    def fake(m, n, k, rounds=5, rng=None):
        if (m, n, k) == kill_at:
            raise _Killed()
        calls.append((m, n, k))
        if (m, n, k) in fail:
            raise RuntimeError("CUDA error: out of memory")
        return _entry((m, n, k), tag), {"m": m, "n": n, "k": k, "rounds": rounds, "screen_us": {"a": 1.0, "torch": 2.0}}
    return fake


def test_run_tune_killed_keeps_its_table_and_resumes(tmp_path, no_gpu):
    out = tmp_path / "tuned.json"
    calls = []
    no_gpu.setattr(tune, "tune_shape", _fake_tune(calls, kill_at=SHAPES5[2]))
    with pytest.raises(_Killed):
        tune.run_tune(SHAPES5, out, log=lambda s: None)
    assert [(e["m"], e["n"], e["k"]) for e in json.loads(out.read_text())["entries"]] == SHAPES5[:2]
    calls.clear()
    no_gpu.setattr(tune, "tune_shape", _fake_tune(calls, fail={SHAPES5[3]}, tag="second"))
    data = tune.run_tune(SHAPES5, out, log=lambda s: None)
    assert calls == SHAPES5[2:]  # the tuned shapes are skipped
    assert [e["tag"] for e in data["entries"]] == ["x", "x", "second", "second"]  # the failed shape is left out
    assert json.loads(out.read_text()) == data and data["device"] == "fake"
    screened = [json.loads(line) for line in tune.screening_log(out).read_text().splitlines()]
    assert tune.screening_log(out).name == "tuned.screening.jsonl"  # beside the table, every tuned shape
    assert [(r["m"], r["n"], r["k"]) for r in screened] == [SHAPES5[i] for i in (0, 1, 2, 4)]
    calls.clear()
    no_gpu.setattr(tune, "tune_shape", _fake_tune(calls, tag="third"))
    data = tune.run_tune(SHAPES5, out, shard="0/2", retune=True, log=lambda s: None)
    assert calls == [SHAPES5[0], SHAPES5[2], SHAPES5[4]]
    assert [e["tag"] for e in data["entries"]] == ["third", "x", "third", "third"]  # 1x: kept; 3x: failed before
    calls.clear()
    data = tune.run_tune(SHAPES5[:2], out, merge=False, log=lambda s: None)
    assert calls == SHAPES5[:2] and len(data["entries"]) == 2 == len(json.loads(out.read_text())["entries"])


def test_run_tune_stops_when_the_context_dies(tmp_path, no_gpu):
    out = tmp_path / "tuned.json"
    calls = []
    no_gpu.setattr(tune, "tune_shape", _fake_tune(calls, fail={SHAPES5[1]}))
    no_gpu.setattr(bench, "cuda_usable", lambda: False)
    data = tune.run_tune(SHAPES5, out, log=lambda s: None)
    assert calls == SHAPES5[:2] and [e["m"] for e in data["entries"]] == [64]


def test_bad_shard_is_a_usage_error():
    import subprocess
    import sys
    from pathlib import Path

    from cudaopt.gemm.cli import bench_gemm, tune_gemm

    with pytest.raises(ValueError, match="shard"):
        bench_gemm(shapes="64x64x64", shard="3/2")
    with pytest.raises(ValueError, match="shard"):
        tune_gemm(shapes="64x64x64", shard="x")
    for args in (["bench-gemm", "--shard", "3/2"], ["tune-gemm", "--shard", "1/0"], ["bench-gemm", "--mode", "batch"],
                 ["tune-gemm-fallbacks", "--ours-back", "--table", "/nonexistent/tuned.json"],
                 ["bench-gemm", "--table", "/nonexistent/tuned.json"]):
        p = subprocess.run([sys.executable, "-m", "cudaopt.cli", *args], capture_output=True, text=True, timeout=120,
                           check=False)
        assert p.returncode == 2 and "error:" in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert "needs a CUDA GPU" not in p.stderr, p.stderr  # what is wrong with the arguments, on any machine
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gemm.py"
    p = subprocess.run([sys.executable, str(script), "grid", "offline", "gpu", "/nonexistent", "--shard", "3/2"],
                       capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 2 and p.stderr.startswith("error: shard '3/2'"), p.stderr


def test_bad_or_retired_build_defines_are_a_usage_error():
    """CUDAOPT_GEMM_DEFINES (session 37) is checked with the other options, before any GPU work or build: a malformed
    or retired define is one line and exit 2, not a failure on every shape."""
    import os
    import subprocess
    import sys

    for value, want in (("bad;x", "give NAME or NAME=VALUE"), ("CUDAOPT_EXPERIMENT_SLOT_DESC", "retired in session 37"),
                        ("CUDAOPT_EXPERIMENT_LATE_WAIT", "retired in session 38")):
        for args in (["bench-gemm", "--shapes", "64x64x64"], ["tune-gemm", "--shapes", "64x64x64"]):
            p = subprocess.run([sys.executable, "-m", "cudaopt.cli", *args], capture_output=True, text=True,
                               timeout=120, check=False, env={**os.environ, "CUDAOPT_GEMM_DEFINES": value})
            assert p.returncode == 2 and p.stderr.startswith("error: CUDAOPT_GEMM_DEFINES: ") and want in p.stderr, (
                p.stderr)


# ---- the wgmma comparison (scripts/gpu_gemm.sh, GEMM_WGMMA_ONLY=1): bookkeeping with fake GPU parts ----


def test_wgmma_compare_times_split_k_and_checks_it(tmp_path, monkeypatch):
    """run_wgmma_compare offers split-K only where the tile grid leaves SMs idle, never calls a
    candidate that failed the quick fp32 check "best", and runs the full checks on the best
    (config, splits), the best without split-K and the best with it."""
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    few, many = (512, 512, 4096), (4096, 4096, 4096)
    timed, full_checks = {}, []

    def fake_time(m, n, k, choices, mma, rounds, rng):
        t, errs = {"mma": 50.0, "torch": 12.0, "lt_auto_nn": 11.0, "lt_auto_tn": 10.0}, {}
        for c in choices:
            cfg = KERNEL_CONFIGS[c.config]
            lbl = c.label()
            t[lbl] = 20.0 / c.splits if cfg.label == "wgmma64x128x64_pp_s8" else 30.0
            errs[lbl] = 1e-4
        if (m, n, k) == few:  # the fastest candidate of all computes garbage: it must not win
            t["wgmma64x128x64_pp_s8_splitk16"] = 0.5
            errs["wgmma64x128x64_pp_s8_splitk16"] = float("inf")
        timed[(m, n, k)] = [c.label() for c in choices]
        return t, errs

    def fake_check(choice, m, n, k):
        full_checks.append(((m, n, k), choice.label()))
        return True

    monkeypatch.setattr(bench, "_compare_time_shape", fake_time)
    monkeypatch.setattr(bench, "_compare_full_check", fake_check)
    monkeypatch.delenv("CUDAOPT_GEMM_WGMMA_SPLITK_IDS", raising=False)
    out = bench.run_wgmma_compare([few, many], 1e9, tmp_path, configs=WGMMA_CONFIGS, log=lambda s: None)
    rows = {(r["m"], r["n"], r["k"]): r for r in out["rows"]}
    r = rows[few]
    assert r["best"] == "wgmma64x128x64_pp_s8_splitk12" and (r["best_splits"], r["correct"]) == (12, True)
    assert r["nosplit_best"] == "wgmma64x128x64_pp_s8" and r["splitk_best"] == r["best"]
    assert r["quick_failed"] == ["wgmma64x128x64_pp_s8_splitk16"] and r["splitk_candidates"] > 0
    assert {lbl for s, lbl in full_checks if s == few} == {r["best"], r["nosplit_best"]}
    assert any(lbl.endswith("_splitk2") for lbl in timed[few])
    assert not any("_c2_s" in lbl and "_tma" not in lbl and "splitk" in lbl for lbl in timed[few])  # gen 1: no split
    r = rows[many]
    assert r["splitk_candidates"] == 0 and r["splitk_best"] is None and r["best_splits"] == 1
    assert not any("splitk" in lbl for lbl in timed[many])
    md = (tmp_path / "summary.md").read_text()
    assert "split-K: offered on 1 shapes" in md and "fastest on 1" in md and "correct (all checks) 1/1" in md
    assert "quick fp32 check: 1: 512x512x4096 wgmma64x128x64_pp_s8_splitk16" in md
    assert "| wgmma_best vs wgmma_nosplit (split-K shapes) | all | 1 |" in md
    assert "| 512x512x4096 | wgmma64x128x64_pp_s8_splitk12 | 1.67 | wgmma64x128x64_pp_s8 | 20.00 | 10.00 | 6.000 | 0.500 | True / split-K True |" in md
    assert len(json.loads((tmp_path / "shapes.json").read_text())) == 2


def test_shipped_table_choices_are_memoised_and_equal_the_search():
    """An off-grid shape's nearest-neighbour search runs once, not on every hgemm call."""
    from cudaopt.gemm import dispatch

    dispatch._choose_shipped.cache_clear()
    first = dispatch.choose(100, 100, 104)
    again = dispatch.choose(100, 100, 104)
    info = dispatch._choose_shipped.cache_info()
    assert (info.hits, info.misses) == (1, 1)
    assert first == again == dispatch._choose(100, 100, 104, dispatch.load_table(), (104, 100, 100))
    assert dispatch.choose(100, 100, 104, table={}) == dispatch.heuristic_choice(100, 100, 104)  # explicit tables: no memo


def test_raw_stream_uses_torchs_accessor_and_falls_back(monkeypatch):
    import types

    import torch

    import cudaopt.gemm as g

    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda idx: 1000 + idx, raising=False)
    assert g._raw_stream(3) == 1003
    monkeypatch.delattr(torch._C, "_cuda_getCurrentRawStream")
    monkeypatch.setattr(torch.cuda, "current_stream", lambda idx: types.SimpleNamespace(cuda_stream=2000 + idx))
    assert g._raw_stream(1) == 2001


def test_tuner_keeps_ours_only_where_screening_and_confirmation_agree():
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.tune import decide

    by_label = {c.label(): c for c in (Choice("ours", 18, 1), Choice("ours", 21, 1), Choice("ours", 6, 1))}
    a, b, c = by_label
    screen = {a: 9.0, b: 9.5, c: 12.0, "torch": 10.0}  # the screening says a is 1.11x torch
    right = lambda ch: True  # noqa: E731
    e = decide(screen, by_label, right, lambda ch: (10.2, 10.0))  # the confirmation: 0.98x
    assert e["backend"] == "torch" and e["label"] == a and e["ratio_vs_torch"] == round(10.0 / 10.2, 4)
    assert (e["screen_ours_us"], e["screen_torch_us"]) == (9.0, 10.0)
    e = decide(screen, by_label, right, lambda ch: (9.1, 10.0))
    assert e["backend"] == "ours" and (e["ours_us"], e["torch_us"]) == (9.1, 10.0)
    e = decide(screen, by_label, lambda ch: ch.label() != a, lambda ch: (9.6, 10.0))  # a is wrong: b
    assert e["label"] == b and e["backend"] == "ours"
    e = decide(screen, by_label, lambda ch: False, lambda ch: (1.0, 10.0))
    assert e["backend"] == "torch" and e["ours_us"] is None and "no correct" in e["note"]
    e = decide(screen, by_label, right, lambda ch: (float("nan"), 10.0))  # a failed confirmation: torch
    assert e["backend"] == "torch"
    # both timings must find ours faster: a screening at 0.99x is not overruled by a 1.05x confirmation
    slow_screen = {a: 10.1, b: 10.5, c: 12.0, "torch": 10.0}
    e = decide(slow_screen, by_label, right, lambda ch: (9.5, 10.0))
    assert e["backend"] == "torch" and e["label"] == a and e["ratio_vs_torch"] == round(10.0 / 9.5, 4)
    # a confirmation with a within-round (paired) ratio is judged by it, not by its medians' ratio
    e = decide(screen, by_label, right, lambda ch: (9.5, 10.0, 0.99))
    assert e["backend"] == "torch" and e["paired_ratio_vs_torch"] == 0.99
    e = decide(screen, by_label, right, lambda ch: (10.1, 10.0, 1.02))
    assert e["backend"] == "ours" and e["ratio_vs_torch"] == round(10.0 / 10.1, 4)
    e = decide(screen, by_label, right, lambda ch: (9.5, 10.0, None))  # no usable rounds: the medians
    assert e["backend"] == "ours" and "paired_ratio_vs_torch" not in e


def test_tuner_runoff_reorders_only_the_close_contenders():
    """The runoff: the screening's candidates within 3% of the fastest (at most 4) are timed again and
    ranked by that; the rest keep the screening's order; one close candidate, or no runoff, changes
    nothing; a contender the runoff could not time goes after the timed ones."""
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.tune import RUNOFF_MAX, decide, runoff_order

    screen = {"a": 10.0, "b": 10.1, "c": 10.25, "d": 10.5, "e": 12.0, "torch": 11.0}
    asked = []

    def runoff(labels):
        asked.append(list(labels))
        return {"a": 10.3, "b": 10.2, "c": 9.9}

    assert runoff_order(screen) == ["a", "b", "c", "d", "e"]
    assert runoff_order(screen, runoff) == ["c", "b", "a", "d", "e"] and asked == [["a", "b", "c"]]
    assert runoff_order({"a": 10.0, "b": 10.5, "torch": 9.0}, runoff) == ["a", "b"] and len(asked) == 1
    nan = runoff_order(screen, lambda labels: {"a": float("nan"), "b": 10.2})  # c untimed, a failed
    assert nan == ["b", "a", "c", "d", "e"]
    wide = {f"x{i}": 10.0 + i * 0.01 for i in range(6)}
    assert len(runoff_order(wide, lambda labels: (asked.append(labels), {})[1])) == 6 and len(asked[-1]) == RUNOFF_MAX
    # decide takes the runoff's winner (and its screening time for the screening verdict)
    by_label = {c.label(): c for c in (Choice("ours", 18, 1), Choice("ours", 21, 1), Choice("ours", 6, 1))}
    a, b, c = by_label
    e = decide({a: 9.0, b: 9.1, c: 12.0, "torch": 10.0}, by_label, lambda ch: True, lambda ch: (9.0, 10.0),
               lambda labels: {a: 9.4, b: 8.9})
    assert e["label"] == b and e["backend"] == "ours" and e["screen_ours_us"] == 9.1


def test_tune_shape_runs_the_runoff_and_logs_it(monkeypatch):
    """tune_shape's wiring, GPU parts replaced: the screening times every candidate, the runoff times the
    close ones again (RUNOFF_ROUNDS) and its winner is confirmed against torch; the screening record
    carries the runoff's times."""
    import types

    from cudaopt.gemm import _lib, bench, correctness, timing, tune
    from cudaopt.gemm.configs import candidate_choices

    m, n, k = 4096, 4096, 4096
    labels = [c.label() for c in candidate_choices(m, n, k)]
    first, second = labels[0], labels[1]
    calls = []

    def fake_time_gpu(cands, sets, rounds=15, rng=None, per_round=None, **kw):
        calls.append((sorted(cands), rounds))
        if rounds == tune.RUNOFF_ROUNDS:
            return {first: 10.4, second: 10.0}
        if per_round is not None:  # the confirmation: ours against torch
            per_round.update({"ours": [10.0, 10.1], "torch": [11.0, 11.0]})
            return {"ours": 10.05, "torch": 11.0}
        return {lbl: (10.0 if lbl == first else 10.1 if lbl == second else 20.0) for lbl in cands} | {"torch": 11.0}

    monkeypatch.setattr(timing, "time_gpu", fake_time_gpu)
    monkeypatch.setattr(bench, "make_inputs", lambda *a, **kw: types.SimpleNamespace(a=[None] * 2, b=[None] * 2, c=[None] * 2))
    monkeypatch.setattr(bench, "num_sets", lambda *a: 2)
    monkeypatch.setattr(bench, "ours_launch", lambda *a, **kw: (lambda i: None))
    monkeypatch.setattr(_lib, "workspace_bytes", lambda *a: 0)
    monkeypatch.setattr(correctness, "check_gemm", lambda *a, **kw: types.SimpleNamespace(ok=True))
    entry, screen = tune.tune_shape(m, n, k)
    assert [r for _, r in calls] == [5, tune.RUNOFF_ROUNDS, tune.CONFIRM_ROUNDS]
    assert calls[1][0] == sorted([first, second])  # only the two within 3%
    assert entry["label"] == second and entry["backend"] == "ours" and entry["screen_ours_us"] == 10.1
    assert screen["runoff_us"] == {first: 10.4, second: 10.0} and screen["screen_us"][first] == 10.0


def test_runoff_summary_counts_changed_winners(tmp_path):
    import json

    from cudaopt.gemm.tune import runoff_summary

    log = tmp_path / "tuned.screening.jsonl"
    assert runoff_summary(log) == "runoff: no shape ran it"  # no log yet
    log.write_text("\n".join([
        json.dumps({"screen_us": {"a": 10.0, "b": 10.1}, "runoff_us": {"a": 10.5, "b": 10.0}}),  # b wins
        json.dumps({"screen_us": {"a": 10.0, "b": 10.2}, "runoff_us": {"a": 10.0, "b": 10.3}}),  # a again
        json.dumps({"screen_us": {"a": 10.0}}),  # no runoff
        '{"screen_us": {"a": 1',  # a torn line
    ]))
    assert runoff_summary(log) == ("runoff: 2 shapes ran it; it changed the winner on 1, by geomean 1.0500x "
                                   "(max 1.0500x) in its own timing")


def test_pdl_ab_row_and_outputs(tmp_path, no_gpu):
    """With ours_nopdl timed, the report has an "ours vs ours_nopdl" row (> 1: PDL helped) and the CSV
    a column for it."""
    def fake(index, shape, env):
        return {"ours": 2.0, "ours_nopdl": 3.0, "torch": 2.5}, {"correct": True}, {}

    no_gpu.setattr(bench, "_bench_shape", fake)
    res = bench.run_bench(SHAPES5[:2], out_dir=tmp_path, log=lambda s: None)
    row = next(s for s in res.summaries if s.baseline == "ours vs ours_nopdl" and s.group == "all")
    assert row.n == 2 and row.median_ratio == 1.5
    # the kernel without the overlap against a baseline: torch 2.5 us / ours_nopdl 3.0 us
    nopdl = next(s for s in res.summaries if s.baseline == "ours_nopdl vs torch" and s.group == "all")
    assert abs(nopdl.median_ratio - 2.5 / 3.0) < 1e-9
    bench.write_outputs(res, tmp_path, "t")
    assert "ours_nopdl_us" in (tmp_path / "shapes.csv").read_text().splitlines()[0]
    assert "ours vs ours_nopdl" in (tmp_path / "summary.md").read_text()


def test_paired_ratio_cancels_a_drift_shared_within_rounds():
    """Candidates under a clock that changes from round to round by up to 40%: the median of
    within-round ratios recovers each candidate's true ratio (1.25, 9/8, and 1 within the 0.1%
    injected into every other round of the dispatch candidate)."""
    from cudaopt.gemm.stats import paired_ratio, paired_ratios

    drift = [1.0, 1.3, 0.9, 1.25, 1.0, 0.95, 1.4]
    per_round = {"torch": [10.0 * d for d in drift], "dispatch": [10.0 * d * (1.0 if r % 2 else 1.001)
                                                                  for r, d in enumerate(drift)],
                 "ours": [8.0 * d for d in drift], "lt_auto_nn": [9.0 * d for d in drift],
                 "lt_auto_tn": [9.5 * d for d in drift]}
    assert paired_ratio(per_round, ("torch",), "ours") == pytest.approx(1.25)
    assert paired_ratio(per_round, ("lt_auto_nn", "lt_auto_tn"), "ours") == pytest.approx(9.0 / 8.0)
    got = paired_ratios(per_round)
    assert set(got) == {"ours vs torch", "ours vs lt_auto_max", "dispatch vs torch", "dispatch vs lt_auto_max",
                        "ours vs dispatch", "lt_auto_nn vs dispatch"}  # (the last two: session 40, the table's moves)
    assert got["ours vs dispatch"] == pytest.approx(1.25, abs=2e-3)
    assert got["lt_auto_nn vs dispatch"] == pytest.approx(10.0 / 9.0, abs=2e-3)
    assert got["dispatch vs lt_auto_max"] == pytest.approx(0.9, abs=1e-3)
    assert got["dispatch vs torch"] == pytest.approx(1.0, abs=1e-3)
    per_round["ours"][2] = float("nan")  # a failed round is left out, not a crash
    assert paired_ratio(per_round, ("torch",), "ours") == pytest.approx(1.25)
    assert paired_ratios({"torch": [1.0]}) == {} and paired_ratio({}, ("torch",), "ours") is None


def test_median_upper_bound_is_the_order_statistic_that_covers_the_median():
    """Session 41: the floor's third count reads each shape's within-round ratios through a one-sided 95% upper bound
    on their median (distribution-free: an order statistic). For 20 rounds it is the 15th smallest; too few rounds
    give no bound; drawn from a known distribution the bound lies above the true median in at least 95% of runs and
    below the largest draw (it is not just the maximum)."""
    import random

    from cudaopt.gemm.stats import median_upper_bound, paired_upper_bounds

    assert median_upper_bound([float(v) for v in range(20, 0, -1)]) == 15.0
    assert median_upper_bound([1.0, 2.0, 3.0, 4.0]) is None  # 4 rounds: even the largest covers only 93.75%
    assert median_upper_bound([1.0, 2.0, 3.0, 4.0, 5.0]) == 5.0
    assert median_upper_bound([1.0, float("nan")] * 3) is None  # NaNs are no draws
    rng = random.Random(7)
    covered = sum(median_upper_bound([rng.gauss(1.0, 0.01) for _ in range(20)]) > 1.0 for _ in range(2000))
    assert 0.95 <= covered / 2000 <= 0.995  # the exact coverage for n = 20 is 97.9%
    # within rounds: dispatch 3% slower than the faster cuBLASLt layout in every round, under a shared drift
    drift = [1.0 + 0.02 * ((r * 7) % 5) for r in range(20)]
    per_round = {"dispatch": [10.3 * d * (1 + 0.001 * (r % 3)) for r, d in enumerate(drift)],
                 "lt_auto_nn": [10.0 * d for d in drift], "lt_auto_tn": [10.5 * d for d in drift]}
    hi = paired_upper_bounds(per_round)
    assert set(hi) == {"dispatch vs lt_auto_max", "lt_auto_nn vs dispatch"}  # (the pairs whose candidates all ran)
    assert 0.969 < hi["dispatch vs lt_auto_max"] < 0.972 and hi["lt_auto_nn vs dispatch"] > 1.0


def test_floor_counts_the_shapes_under_it_beyond_their_own_noise(tmp_path):
    """A shape's paired ratio can read under 0.98x on a tie; its upper bound under 0.98x cannot, often. The floor's
    "(paired hi95)" row counts those; bench logs the bounds ("paired_hi95"), reads them back, and writes them to
    shapes.csv and floor.csv."""
    a, b = (64, 64, 64), (128, 128, 128)
    times = {"dispatch": {a: 10.0, b: 10.0}, "ours": {a: 10.0, b: 10.0}, "lt_auto_nn": {a: 9.7, b: 9.7},
             "lt_auto_tn": {a: 9.9, b: 9.9}}
    times["lt_auto_max"] = {s: 9.7 for s in times["dispatch"]}
    rec_a = bench.shape_record(0, a, "offline", "gpu", times={c: times[c][a] for c in times},
                               check={"correct": True, "dispatch": "wgmma64x64x64_pp_s8_e1"},
                               paired={"dispatch vs lt_auto_max": 0.97}, paired_hi={"dispatch vs lt_auto_max": 0.99})
    rec_b = bench.shape_record(1, b, "offline", "gpu", times={c: times[c][b] for c in times},
                               check={"correct": True, "dispatch": "wgmma64x64x64_pp_s8_e1"},
                               paired={"dispatch vs lt_auto_max": 0.96}, paired_hi={"dispatch vs lt_auto_max": 0.975})
    assert rec_a["paired_hi95"] == {"dispatch vs lt_auto_max": 0.99}
    res = bench.result_from_records({a: rec_a, b: rec_b})
    assert res.paired_hi == {"dispatch vs lt_auto_max": {a: 0.99, b: 0.975}}
    bench.write_outputs(res, tmp_path, "t")
    md = (tmp_path / "summary.md").read_text()
    assert "| lt_auto_max (paired) | 2 | 0 | 0.960 (128x128x128) |" in md
    assert "| lt_auto_max (paired hi95) | 1 | 0 | 0.975 (128x128x128) |" in md
    rows = (tmp_path / "floor.csv").read_text().splitlines()
    assert rows[1].startswith("64,64,64,") and rows[1].endswith(",0.9700,0.9900")
    assert "paired_hi95_dispatch_vs_lt_auto_max" in (tmp_path / "shapes.csv").read_text().splitlines()[0]


def test_b_transposed_twin_is_summarised_against_the_tn_layouts(tmp_path, no_gpu):
    """CUDAOPT_GEMM_BENCH_BT=1 (session 39) adds "ours_bt", timed where the choice has a B^T twin: summarised against
    cuBLASLt's and cuBLAS's TN layouts, the max and ours (over the shapes it ran), paired against lt_auto_tn and ours;
    a run without it has none of these rows."""
    from cudaopt.gemm.stats import paired_ratios

    def fake(index, shape, env):
        t = {"ours": 2.0, "torch": 2.5, "dispatch": 2.0, "lt_auto_nn": 2.2, "lt_auto_tn": 2.1, "cublas_tn": 2.3}
        if index != 1:  # shape 1's choice has no twin: no ours_bt there
            t["ours_bt"] = 1.9
        return t, {"correct": True}, {}

    no_gpu.setattr(bench, "_bench_shape", fake)
    res = bench.run_bench(SHAPES5[:3], out_dir=tmp_path, log=lambda s: None)
    rows = {s.baseline: s for s in res.summaries if s.group == "all"}
    assert rows["ours_bt vs lt_auto_tn"].n == 2 and rows["ours_bt vs lt_auto_tn"].median_ratio == pytest.approx(2.1 / 1.9)
    assert {"ours_bt vs cublas_tn", "ours_bt vs lt_auto_max", "ours_bt vs ours"} <= set(rows)
    per_round = {"ours": [2.0, 2.2], "ours_bt": [1.9, 2.0], "lt_auto_tn": [2.1, 2.3], "torch": [2.5, 2.5]}
    got = paired_ratios(per_round)
    assert got["ours_bt vs lt_auto_tn"] == pytest.approx(statistics.median([2.1 / 1.9, 2.3 / 2.0]))
    assert got["ours_bt vs ours"] == pytest.approx(statistics.median([2.0 / 1.9, 2.2 / 2.0]))
    no_gpu.setattr(bench, "_bench_shape", lambda i, s, e: ({"ours": 2.0, "lt_auto_tn": 2.1}, {"correct": True}, {}))
    assert not any(s.baseline.startswith("ours_bt") for s in bench.run_bench(
        SHAPES5[:2], out_dir=tmp_path / "plain", log=lambda s: None).summaries)


def test_b_transposed_dispatch_is_summarised_and_floored_against_its_callers_baselines(tmp_path, no_gpu):
    """(session 42) "dispatch_bt" (hgemm on B held transposed) against torch.matmul on that B^T ("torch_bt") and
    cuBLAS(Lt)'s TN layout: summaries, paired rows from the per-round times, and a B^T floor table in summary.md
    counting the shapes under 0.98x by medians and paired."""
    def fake(index, shape, env):
        t_bt = {0: 2.0, 1: 2.2, 2: 1.9}[index]  # shape 1: 2.1 / 2.2 = 0.955x of lt_auto_tn, under the floor
        t = {"ours": 2.0, "torch": 2.5, "dispatch": 2.0, "lt_auto_nn": 2.2, "lt_auto_tn": 2.1, "cublas_tn": 2.3,
             "torch_bt": 2.4, "dispatch_bt": t_bt}
        return t, {"correct": True}, {name: [v, v * 1.01, v] for name, v in t.items()}

    no_gpu.setattr(bench, "_bench_shape", fake)
    res = bench.run_bench(SHAPES5[:3], out_dir=tmp_path, log=lambda s: None)
    rows = {s.baseline: s for s in res.summaries if s.group == "all"}
    assert rows["dispatch_bt vs torch_bt"].n == 3 and rows["dispatch_bt vs torch_bt"].median_ratio == pytest.approx(
        2.4 / 2.0)
    assert {"dispatch_bt vs cublas_tn", "dispatch_bt vs lt_auto_tn", "dispatch_bt vs lt_auto_tn (paired)"} <= set(rows)
    assert res.paired["dispatch_bt vs lt_auto_tn"][SHAPES5[1]] == pytest.approx(2.1 / 2.2)
    bench.write_outputs(res, tmp_path, "t")
    md = (tmp_path / "summary.md").read_text()
    under = "x".join(map(str, SHAPES5[1]))
    assert "### B held transposed" in md and f"| lt_auto_tn | 3 | 1 | 1 | 0.955 ({under}) |" in md
    assert "| torch_bt | 3 | 0 | 0 | - |" in md
    # the route's label, as a grid records it for gemm-table-from-grids --bt (Choice.bt_label names a TN algorithm)
    from cudaopt.gemm.configs import Choice

    ours = Choice("ours", 20, 1)
    assert bench.bt_route(ours, True) == ours.label() + "_bt" and bench.bt_route(ours, False) == "fallback:torch"
    assert bench.bt_route(Choice("cublaslt", 20, 1, 4), True) == "fallback:torch"
    with_tn = Choice("ours", 20, 1, -1, 3)
    assert bench.bt_route(with_tn, True) == with_tn.bt_label() == "fallback:cublaslt_tn_algo3"


def test_paired_max_reference_is_one_layout_not_each_rounds_luckier_one():
    """Two layouts equally fast (10 us) with independent noise, ours 10 us: the paired ratio against
    their "max" must read ~1. Taking the faster layout in every round would read it > 1 (the minimum of
    two noisy samples is biased low), which is how server mode's paired figure came out 4 points worse
    than its unpaired one."""
    import random

    from cudaopt.gemm.stats import paired_ratio

    rng = random.Random(1)
    rounds = 201
    per_round = {name: [10.0 * (1 + rng.gauss(0, 0.08)) for _ in range(rounds)]
                 for name in ("lt_auto_nn", "lt_auto_tn", "ours")}
    r = paired_ratio(per_round, ("lt_auto_nn", "lt_auto_tn"), "ours")
    assert r == pytest.approx(1.0, abs=0.02)
    biased = sorted(min(per_round["lt_auto_nn"][i], per_round["lt_auto_tn"][i]) / per_round["ours"][i]
                    for i in range(rounds))[rounds // 2]
    assert biased < 0.975  # what the per-round minimum would have read


def test_paired_ratios_are_logged_and_summarised(tmp_path, no_gpu):
    def fake(index, shape, env):
        return ({"ours": 2.0, "torch": 2.5, "dispatch": 2.0}, {"correct": True},
                {"torch": [2.5, 2.6, 2.4, 2.5, 2.7], "dispatch": [2.0] * 5,  # (per-round times)
                 "ours": [2.5 / 1.2, 2.6 / 1.2, 2.4 / 1.2, 2.5 / 1.2, 2.7 / 1.2]})  # 1.2x torch in every round

    no_gpu.setattr(bench, "_bench_shape", fake)
    res = bench.run_bench(SHAPES5[:3], out_dir=tmp_path, log=lambda s: None)
    row = next(s for s in res.summaries if s.baseline == "ours vs torch (paired)" and s.group == "all")
    assert row.n == 3 and row.median_ratio == pytest.approx(1.2)
    again = bench.result_from_records(bench.load_log(tmp_path / bench.SHAPE_LOG))  # from the log alone
    assert again.paired["dispatch vs torch"] == {s: pytest.approx(1.25) for s in SHAPES5[:3]}  # median 2.5 / 2.0
    # (session 41) the bounds, from the per-round times (5 rounds: the largest ratio, 2.7 / 2.0), and those times
    assert again.paired_hi["dispatch vs torch"] == {s: pytest.approx(1.35) for s in SHAPES5[:3]}
    assert again.paired_hi["ours vs torch"] == {s: pytest.approx(1.2) for s in SHAPES5[:3]}
    rec = bench.load_log(tmp_path / bench.SHAPE_LOG)[SHAPES5[0]]
    assert rec["rounds"]["dispatch"] == [2.0] * 5 and rec["rounds"]["ours"][0] == 2.083  # (4 significant digits)
    bench.write_outputs(res, tmp_path, "t")
    assert "| dispatch vs torch (paired) | all |" in (tmp_path / "summary.md").read_text()


# --- the cuBLASLt fallback (session 18) ---

def test_table_with_cublaslt_fallbacks_parses_and_neighbours_take_torch(tmp_path):
    data = {"entries": [{"m": 4096, "n": 4096, "k": 4096, "backend": "cublaslt", "config": 27, "splits": 1, "lt_algo": 3},
                        {"m": 64, "n": 64, "k": 64, "backend": "ours", "config": 6, "splits": 1, "lt_algo": 5}]}
    table = dispatch.parse_table(data)
    hit = dispatch.choose(4096, 4096, 4096, table)
    assert hit == Choice("cublaslt", 27, 1, 3) and hit.label() == "fallback:cublaslt_nn_algo3"
    assert hit.as_ours() == Choice("ours", 27, 1)  # what the benchmark times as "ours" there
    assert table[(64, 64, 64)] == Choice("ours", 6, 1)  # lt_algo means nothing to another backend
    # a neighbour's algorithm index names an entry of another shape's list: the neighbour gets torch.matmul
    assert dispatch.choose(4096, 2048, 4096, table) == Choice("torch", 27, 1)
    for bad, msg in (({"backend": "cublas"}, "not one of"), ({"backend": "cublaslt"}, "lt_algo")):
        with pytest.raises(ValueError, match=msg):
            dispatch.parse_table({"entries": [{"m": 1, "n": 1, "k": 1, **bad}]})


def _lt_entry(backend="ours", **kw):
    return {"m": 256, "n": 256, "k": 256, "backend": backend, "config": 27, "splits": 1, "label": "x", **kw}


def test_lt_fallback_needs_both_verdicts_and_a_correct_algorithm():
    screen = {"table": 10.0, "lt0": 10.5, "lt1": 9.0, "lt2": float("nan")}
    ok = lambda j: True  # noqa: E731
    e = tune.decide_lt(_lt_entry(), screen, lambda j: (10.0, 9.2, 1.05), ok, info=lambda j: {"algo_id": 7})
    assert e["backend"] == "cublaslt" and e["lt_algo"] == 1 and e["config"] == 27  # ours stays on record
    assert e["lt_fallback"]["replaced"] == "ours" and e["lt_fallback"]["algo_info"] == {"algo_id": 7}
    confirmed_slower = tune.decide_lt(_lt_entry(), screen, lambda j: (9.9, 10.0, 0.99), ok)
    assert confirmed_slower["backend"] == "ours" and confirmed_slower["lt_fallback"]["checked"]
    no_pairs = tune.decide_lt(_lt_entry(), screen, lambda j: (10.0, 9.5, None), ok)  # the medians decide
    assert no_pairs["backend"] == "cublaslt"
    assert tune.decide_lt(_lt_entry(), screen, lambda j: (10.0, 9.2, 1.05), lambda j: False)["backend"] == "ours"

    def never(j):
        raise AssertionError("confirmed although the screening found the table's choice faster")
    assert tune.decide_lt(_lt_entry(), {"table": 8.0, "lt0": 9.0}, never, ok)["backend"] == "ours"
    assert tune.decide_lt(_lt_entry(), {"table": float("nan"), "lt0": 9.0}, never, ok)["backend"] == "ours"
    assert "no cuBLASLt" in tune.decide_lt(_lt_entry(), {"table": 8.0}, never, ok)["lt_fallback"]["note"]
    # a torch fallback can move too, and a second pass over its own output starts from what it replaced
    moved = tune.decide_lt(_lt_entry("torch"), screen, lambda j: (10.0, 9.2, 1.05), ok)
    assert moved["lt_fallback"]["replaced"] == "torch"
    back = tune.decide_lt(moved, {"table": 9.0, "lt1": 9.5}, never, ok)
    assert back["backend"] == "torch" and "lt_algo" not in back


def test_lt_fallback_runoff_picks_among_the_close_algorithms_only():
    screen = {"table": 10.0, "lt0": 9.00, "lt1": 9.10, "lt2": 9.20, "lt3": 12.0}
    asked = []

    def runoff(labels):
        asked.append(sorted(labels))
        return {"lt0": 9.3, "lt1": 9.2, "lt2": 9.0}  # the screening's third is the fastest when timed again
    confirmed = []
    e = tune.decide_lt(_lt_entry(), screen, lambda j: confirmed.append(j) or (10.0, 9.0, 1.1), lambda j: True,
                       runoff=runoff)
    assert asked == [["lt0", "lt1", "lt2"]] and confirmed == [2] and e["lt_algo"] == 2  # lt3 is 33% off
    assert e["lt_fallback"]["screen_lt_us"] == 9.2 and e["lt_fallback"]["screen_fastest_lt_us"] == 9.0
    alone = tune.decide_lt(_lt_entry(), {"table": 10.0, "lt0": 9.0, "lt1": 11.0}, lambda j: (10.0, 9.0, 1.1),
                           lambda j: True, runoff=lambda labels: pytest.fail("one contender needs no runoff"))
    assert alone["lt_algo"] == 0 and "screen_fastest_lt_us" not in alone["lt_fallback"]


def test_lt_fallback_pass_resumes_and_survives_a_failing_shape(tmp_path, no_gpu):
    table = tmp_path / "t.json"
    shapes = [(64, 64, 64), (128, 128, 128), (256, 256, 256)]
    table.write_text(json.dumps({"device": "H", "fallback_below": 1.0, "entries": [
        {"m": m, "n": n, "k": kk, "backend": "ours", "config": 6, "splits": 1} for m, n, kk in shapes]}))
    calls = []

    def fake(entry, rng=None):
        s = (entry["m"], entry["n"], entry["k"])
        calls.append(s)
        if s == shapes[1]:
            raise RuntimeError("CUBLAS_STATUS_EXECUTION_FAILED")
        return {**entry, "backend": "cublaslt" if s == shapes[0] else "ours", "lt_algo": 2,
                "lt_fallback": {"checked": True, "replaced": "ours"}}
    no_gpu.setattr(tune, "lt_fallback_shape", fake)
    out = tmp_path / "out.json"
    data = tune.run_lt_fallbacks(table, out, log=lambda s: None)
    assert calls == shapes and json.loads(out.read_text()) == data and data["device"] == "H"
    assert [e["backend"] for e in data["entries"]] == ["cublaslt", "ours", "ours"]
    assert "lt_fallback" not in data["entries"][1]  # failed: unchanged, tried again next run
    assert dispatch.parse_table(data)[shapes[0]] == Choice("cublaslt", 6, 1, 2)
    calls.clear()
    tune.run_lt_fallbacks(table, out, log=lambda s: None)
    assert calls == [shapes[1]]  # the checked shapes are skipped
    calls.clear()
    tune.run_lt_fallbacks(table, out, shapes=[shapes[2], (8, 8, 8)], recheck=True, log=lambda s: None)
    assert calls == [shapes[2]]  # only shapes the table holds
    with pytest.raises(FileNotFoundError, match="--table|no table"):
        tune.run_lt_fallbacks(tmp_path / "none.json", out, log=lambda s: None)


def test_ours_back_needs_both_verdicts_and_a_correct_kernel():
    """Session 34: a fallback chosen against older kernels goes back to ours only where the screening and the paired
    confirmation both find ours faster and ours passes the checks; the cuBLASLt record goes with it."""
    lt = _lt_entry("cublaslt", lt_algo=3, lt_fallback={"checked": True, "replaced": "ours", "best_algo": 3})
    ok = lambda: True  # noqa: E731
    back = tune.decide_ours_back(lt, {"ours": 9.0, "fallback": 10.0}, lambda: (9.1, 10.0, 1.08), ok)
    assert back["backend"] == "ours" and back["config"] == 27 and "lt_algo" not in back and "lt_fallback" not in back
    assert back["ours_back"] == {"checked": True, "fallback": "cublaslt", "lt_algo": 3, "screen_ours_us": 9.0,
                                 "screen_fallback_us": 10.0, "ours_us": 9.1, "fallback_us": 10.0,
                                 "paired_fallback_over_ours": 1.08, "taken_back": True}
    assert dispatch.parse_table({"entries": [back]})[(256, 256, 256)] == Choice("ours", 27, 1)
    # the paired confirmation says the fallback is faster: stays, checked
    stays = tune.decide_ours_back(lt, {"ours": 9.0, "fallback": 10.0}, lambda: (9.1, 10.0, 0.99), ok)
    assert stays["backend"] == "cublaslt" and stays["lt_algo"] == 3 and stays["ours_back"]["checked"]
    assert "taken_back" not in stays["ours_back"]
    # no pairs: the medians decide; ours failing its checks stays out
    torch_fb = _lt_entry("torch")
    assert tune.decide_ours_back(torch_fb, {"ours": 9.0, "fallback": 10.0}, lambda: (9.5, 10.0, None), ok)["backend"] == "ours"
    assert tune.decide_ours_back(torch_fb, {"ours": 9.0, "fallback": 10.0}, lambda: (9.1, 10.0, 1.1),
                                 lambda: False)["backend"] == "torch"

    # Session 38: the screen only prunes; ours up to 3% slower there still goes to the paired confirmation
    close = tune.decide_ours_back(torch_fb, {"ours": 10.0, "fallback": 9.8}, lambda: (9.5, 10.0, 1.05), ok)
    assert close["backend"] == "ours" and close["ours_back"]["taken_back"]
    assert tune.decide_ours_back(torch_fb, {"ours": 10.0, "fallback": 9.8}, lambda: (10.0, 9.8, 0.98),
                                 ok)["backend"] == "torch"

    def never():
        raise AssertionError("confirmed although the screening found the fallback clearly faster")
    for screen in ({"ours": 10.0, "fallback": 9.6}, {"ours": float("nan"), "fallback": 9.0}, {"fallback": 9.0}):
        e = tune.decide_ours_back(torch_fb, screen, never, ok)
        assert e["backend"] == "torch" and e["ours_back"]["checked"] and e["ours_back"]["fallback"] == "torch"


def test_ours_back_pass_visits_only_the_fallbacks_and_resumes(tmp_path, no_gpu):
    table = tmp_path / "t.json"
    rows = [((64, 64, 64), "ours"), ((128, 128, 128), "torch"), ((256, 256, 256), "cublaslt"), ((512, 8, 8), "torch")]
    table.write_text(json.dumps({"device": "H", "fallback_below": 1.0, "entries": [
        {"m": m, "n": n, "k": kk, "backend": b, "config": 6, "splits": 1, **({"lt_algo": 1} if b == "cublaslt" else {})}
        for (m, n, kk), b in rows]}))
    calls = []

    def fake(entry, rng=None):
        s = (entry["m"], entry["n"], entry["k"])
        calls.append(s)
        if s == (512, 8, 8):
            raise RuntimeError("CUDA error: an illegal memory access")
        taken = s == (256, 256, 256)
        return tune.decide_ours_back(entry, {"ours": 1.0 if taken else 2.0, "fallback": 1.5},
                                     lambda: (1.0, 1.5, 1.4), lambda: True)
    no_gpu.setattr(tune, "ours_back_shape", fake)
    out = tmp_path / "out.json"
    lines = []
    data = tune.run_ours_back(table, out, log=lines.append)
    assert calls == [(128, 128, 128), (256, 256, 256), (512, 8, 8)]  # ours' own shape is not visited
    assert json.loads(out.read_text()) == data and data["device"] == "H"
    assert [e["backend"] for e in data["entries"]] == ["ours", "torch", "ours", "torch"]
    assert "ours_back" not in data["entries"][3]  # failed: unchanged, tried again next run
    assert any("FAILED" in ln for ln in lines) and "1 shapes back to ours" in lines[-1]
    calls.clear()
    tune.run_ours_back(table, out, log=lambda s: None)
    assert calls == [(512, 8, 8)]  # the checked ones skipped; the taken-back one is ours' now
    with pytest.raises(FileNotFoundError, match="no table"):
        tune.run_ours_back(tmp_path / "none.json", out, log=lambda s: None)


def test_lt_fallback_without_cublaslt_says_so_once_and_declines(monkeypatch):
    """No cuBLAS baseline library (or no algorithm for the shape): lt_matmul launches nothing and returns
    False, so hgemm calls torch.matmul; the warning comes once per shape, not once per call."""
    import warnings

    import torch

    from cudaopt.gemm import _lib, lt_fallback

    made = []

    def no_library(*args, **kwargs):
        made.append(args)
        raise _lib.GemmError("cuBLAS baseline library unavailable: no cublasLt.h")
    monkeypatch.setattr(_lib, "LtPlan", no_library)
    monkeypatch.setattr(torch.cuda, "device", lambda index: contextlib.nullcontext())  # no GPU here
    lt_fallback.clear_plans()
    a, b, out = torch.zeros(64, 128, dtype=torch.float16), torch.zeros(128, 64, dtype=torch.float16), None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert lt_fallback.lt_matmul(a, b, out, 0, 0) is False
        assert lt_fallback.lt_matmul(a, b, out, 0, 0) is False
    assert len(made) == 1 and len(caught) == 1 and "torch.matmul" in str(caught[0].message)
    lt_fallback.clear_plans()  # the remembered absence is dropped with the plans
    assert lt_fallback._plans == {}


def test_describe_lt_algo_puts_cublaslt_tiles_in_our_frame():
    """cuBLASLt's tile and cluster enums are column-major (its M runs along our N): session 22 read the skinny
    shapes' fallbacks with them, e.g. 12288x64xK runs 96-row x 64-column tiles paired along M."""
    from cudaopt.gemm.lt_fallback import describe_lt_algo

    d = describe_lt_algo({"tile": 26, "cluster": 5, "splitk": 1, "waves_x1000": 969})  # 64x96 lt, 1x2x1
    assert d == {"tile": (96, 64), "cluster": (2, 1), "splitk": 1, "waves": 0.969}
    d = describe_lt_algo({"tile": 27, "cluster": 3, "splitk": 2, "waves_x1000": 484})  # 96x64 lt, 2x1x1
    assert d["tile"] == (64, 96) and d["cluster"] == (1, 2) and d["splitk"] == 2
    assert describe_lt_algo({"tile": 0, "cluster": 0})["tile"] is None  # automatic: unknown here


def test_gemm_lt_tiles_script_lists_the_shipped_fallbacks():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    mod = _load_script("gemm_lt_tiles")
    table = json.loads((root / "src" / "cudaopt" / "gemm" / "tuned_h200.json").read_text())
    found = {r["shape"]: r for r in mod.rows(table, max_n=64)}
    assert found and all(int(s.split("x")[1]) <= 64 for s in found)
    assert (found["12288x64x8192"]["lt_tile"], found["12288x64x8192"]["lt_cluster"]) == ("96x64", "2x1")
    assert not mod.rows({"entries": [{"m": 1, "n": 1, "k": 1, "backend": "ours", "label": "x"}]})


def test_l2_promotion_setting_refuses_an_unknown_mode_before_touching_the_library():
    from cudaopt.gemm import _lib

    class NoLib:
        def __getattr__(self, name):
            raise AssertionError(f"library touched: {name}")

    with pytest.raises(_lib.GemmError, match="L2 promotion mode 7"):
        _lib.set_l2_promotion(7, NoLib())
    assert sorted(_lib.L2_PROMOTIONS.values()) == [0, 1, 2, 3] and _lib.L2_PROMOTIONS["256B"] == 0  # 0: the default


def test_l2_promotion_env_setting_is_checked(monkeypatch):
    from cudaopt.gemm import _lib

    monkeypatch.delenv("CUDAOPT_GEMM_L2_PROMOTION", raising=False)
    assert _lib.l2_promotion_name() == "256B"
    monkeypatch.setenv("CUDAOPT_GEMM_L2_PROMOTION", "64B")
    assert _lib.l2_promotion_name() == "64B"
    monkeypatch.setenv("CUDAOPT_GEMM_L2_PROMOTION", "32B")
    with pytest.raises(_lib.GemmError, match="CUDAOPT_GEMM_L2_PROMOTION='32B': use 256B"):
        _lib.l2_promotion_name()


def test_launch_under_sets_runs_and_restores_even_when_the_launch_raises():
    from cudaopt.gemm.bench import launch_under

    log = []
    launch_under(lambda i: log.append(("run", i)), lambda v: log.append(("set", v)), 5, 0)(3)
    assert log == [("set", 5), ("run", 3), ("set", 0)]

    def boom(i):
        raise RuntimeError("launch failed")

    with pytest.raises(RuntimeError, match="launch failed"):
        launch_under(boom, lambda v: log.append(("set", v)), 7, 1)(0)
    assert log[-2:] == [("set", 7), ("set", 1)]


# ---- table choices from whole-grid runs (session 38, gemm-table-from-grids; no GPU) ----


def _grid_csv(path, rows):
    """A bench-gemm shapes.csv (report.write_shape_csv, the real writer) from {shape: (ours, torch, dispatch us,
    dispatch label, ours label, correct)}."""
    from cudaopt.gemm.report import write_shape_csv

    times = {n: {s: r[i] for s, r in rows.items()} for i, n in enumerate(("ours", "torch", "dispatch"))}
    extra = {s: {"dispatch": r[3], "choice": r[4], "correct": r[5]} for s, r in rows.items()}
    write_shape_csv(path, times, extra)
    return path


def test_grid_choice_moves_only_what_every_grid_agrees_on(tmp_path):
    from cudaopt.gemm.configs import KERNEL_CONFIGS, Choice
    from cudaopt.gemm.dispatch import parse_table
    from cudaopt.gemm.grid_choice import GridError, load_grid, rechoose

    ours = Choice("ours", 20, 1).label()
    entries = [
        {"m": 64, "n": 64, "k": 64, "backend": "torch", "config": 20},  # ours faster in both grids: to ours
        {"m": 128, "n": 64, "k": 64, "backend": "cublaslt", "lt_algo": 3, "config": 20,
         "lt_fallback": {"checked": True}},  # faster in one grid only: stays
        {"m": 256, "n": 64, "k": 64, "backend": "ours", "config": 20},  # torch faster in both: to torch
        {"m": 512, "n": 64, "k": 64, "backend": "torch", "config": 20},  # a grid of another table: stays
        {"m": 1024, "n": 64, "k": 64, "backend": "torch", "config": 20},  # ours failed a check in one grid: stays
        {"m": 2048, "n": 64, "k": 64, "backend": "cublaslt", "lt_algo": 1, "config": 20,
         "lt_fallback": {"checked": True}},  # faster in both: to ours, its cuBLASLt records dropped
    ]
    g1 = {(64, 64, 64): (9.0, 10.0, 10.0, "fallback:torch", ours, True),
          (128, 64, 64): (9.0, 10.0, 10.0, "fallback:cublaslt_nn_algo3", ours, True),
          (256, 64, 64): (10.0, 9.0, 10.0, ours, ours, True),
          (512, 64, 64): (9.0, 10.0, 10.0, "fallback:torch", ours, True),
          (1024, 64, 64): (9.0, 10.0, 10.0, "fallback:torch", ours, True),
          (2048, 64, 64): (9.0, 10.0, 10.0, "fallback:cublaslt_nn_algo1", ours, True)}
    g2 = {**g1, (128, 64, 64): (10.0, 10.0, 10.05, "fallback:cublaslt_nn_algo3", ours, True),
          (512, 64, 64): (9.0, 10.0, 9.5, ours, ours, True),
          (1024, 64, 64): (9.0, 10.0, 10.0, "fallback:torch", ours, False)}
    grids = [load_grid(_grid_csv(tmp_path / "g1.csv", g1)), load_grid(_grid_csv(tmp_path / "g2.csv", g2))]
    new, moves = rechoose(entries, grids, margin=1.01)
    assert [(m.shape, m.was, m.to) for m in moves] == [
        ((64, 64, 64), "fallback:torch", "ours"), ((256, 64, 64), ours, "torch"),
        ((2048, 64, 64), "fallback:cublaslt_nn_algo1", "ours")]
    by = {(e["m"], e["n"], e["k"]): e for e in new}
    assert by[(64, 64, 64)]["backend"] == "ours" and by[(64, 64, 64)]["grid_choice"]["ratios"] == [1.1111, 1.1111]
    assert by[(256, 64, 64)]["backend"] == "torch" and by[(256, 64, 64)]["config"] == 20  # kernel of record kept
    assert "lt_algo" not in by[(2048, 64, 64)] and "lt_fallback" not in by[(2048, 64, 64)]
    assert by[(128, 64, 64)] == entries[1] and by[(512, 64, 64)] == entries[3] and by[(1024, 64, 64)] == entries[4]
    table = parse_table({"entries": new})  # what the dispatcher loads
    assert table[(2048, 64, 64)] == Choice("ours", 20, 1) and table[(256, 64, 64)].backend == "torch"
    assert KERNEL_CONFIGS[20].label in ours
    # (a margin the noise alone passes is refused; one grid still works, the CLI warns)
    with pytest.raises(GridError, match="margin"):
        rechoose(entries, grids, margin=0.99)
    assert len(rechoose(entries, grids[:1], margin=1.01)[1]) == 6  # (g1 alone agrees with every move)


def test_grid_choice_hands_a_shape_to_the_cublaslt_algorithm_every_grid_timed_faster(tmp_path):
    """(session 40) bench-gemm records which cuBLASLt algorithm "lt_auto_nn" was; a shape moves to that algorithm
    (the dispatcher's cuBLASLt fallback) where every grid reads it faster and the grids recording it name one."""
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.dispatch import parse_table
    from cudaopt.gemm.report import write_shape_csv
    from cudaopt.gemm.grid_choice import load_grid, rechoose

    ours = Choice("ours", 20, 1).label()

    def grid(path, rows):  # {shape: (ours, torch, lt_auto_nn, dispatch us, dispatch label, lt_auto_nn_algo or None)}
        times = {n: {s: r[i] for s, r in rows.items()} for i, n in enumerate(("ours", "torch", "lt_auto_nn", "dispatch"))}
        times["lt_auto_max"] = times["lt_auto_nn"]
        extra = {s: {"dispatch": r[4], "choice": ours, "correct": True,
                     **({} if r[5] is None else {"lt_auto_nn_algo": r[5]})} for s, r in rows.items()}
        write_shape_csv(path, times, extra)
        return load_grid(path)

    shapes = [(64, 64, 64 * i) for i in range(1, 7)]
    a, b, c, d, e, f = shapes
    entries = [{"m": 64, "n": 64, "k": 64, "backend": "ours", "config": 20},  # a: lt faster in both: to algo 4
               {"m": 64, "n": 64, "k": 128, "backend": "torch", "config": 20},  # b: ours and lt faster: lt, the larger
               {"m": 64, "n": 64, "k": 192, "backend": "ours", "config": 20},  # c: the grids name two algorithms
               {"m": 64, "n": 64, "k": 256, "backend": "cublaslt", "lt_algo": 2, "config": 20},  # d: already algo 2
               {"m": 64, "n": 64, "k": 320, "backend": "cublaslt", "lt_algo": 2, "config": 20},  # e: algo 5 faster
               {"m": 64, "n": 64, "k": 384, "backend": "ours", "config": 20}]  # f: faster in one grid only
    lt2 = "fallback:cublaslt_nn_algo2"
    g1 = {a: (10, 11, 9.0, 10, ours, 4), b: (9.5, 10, 9.0, 10, "fallback:torch", 1),
          c: (10, 11, 9.0, 10, ours, 3), d: (10, 11, 9.0, 10, lt2, 2), e: (10, 11, 9.0, 10, lt2, 5),
          f: (10, 11, 9.0, 10, ours, 0)}
    # (the second grid is one from before session 40 for shape a: no algorithm recorded, only its time)
    g2 = {**g1, a: (10, 11, 9.0, 10, ours, None), c: (10, 11, 9.0, 10, ours, 7), f: (10, 11, 10.0, 10, ours, 0)}
    grids = [grid(tmp_path / "g1.csv", g1), grid(tmp_path / "g2.csv", g2)]
    new, moves = rechoose(entries, grids, margin=1.01)
    assert [(m.shape, m.was, m.to, m.algo) for m in moves] == [
        (a, ours, "cublaslt", 4), (b, "fallback:torch", "cublaslt", 1), (e, lt2, "cublaslt", 5)]
    # (each grid left out: the other's moves read on it; c's move to the other grid's algorithm is one it did not time,
    # a's to algorithm 4 is read on the second grid's autotuned NN time, which names no algorithm: approximate)
    from cudaopt.gemm.grid_choice import held_out

    assert [(r.same, r.columns, r.approx, r.unread) for _, r in held_out(entries, grids)] == [(3, 2, 0, 1),
                                                                                           (1, 3, 1, 1)]
    table = parse_table({"entries": new})  # what the dispatcher loads
    assert table[a] == Choice("cublaslt", 20, 1, 4) and table[b] == Choice("cublaslt", 20, 1, 1)
    assert table[e] == Choice("cublaslt", 20, 1, 5) and table[c] == Choice("ours", 20, 1)
    assert table[d] == Choice("cublaslt", 20, 1, 2) and table[f] == Choice("ours", 20, 1)
    by = {(x["m"], x["n"], x["k"]): x for x in new}
    assert by[a]["grid_choice"] == {"from": ours, "to": "cublaslt", "grids": 2, "ratios": [1.1111, 1.1111],
                                    "margin": 1.01, "lt_algo": 4}
    # (with no algorithm recorded anywhere, no cuBLASLt move: session 38's grids give only ours <-> torch)
    g_old = {s: (*r[:5], None) for s, r in g1.items()}
    _, moves = rechoose(entries, [grid(tmp_path / "o1.csv", g_old), grid(tmp_path / "o2.csv", g_old)], margin=1.01)
    assert [(m.shape, m.to) for m in moves] == [(b, "ours")]


def test_grid_choice_paired_reads_the_within_round_ratios_where_a_grid_has_them(tmp_path):
    """(session 40) rechoose(paired=True): a grid's paired_* columns (bench-gemm's within-round ratios) decide a move
    instead of its two medians; a grid without them is read on its medians; off by default."""
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.grid_choice import load_grid, rechoose
    from cudaopt.gemm.report import write_shape_csv

    ours = Choice("ours", 20, 1).label()
    a, b, c = (64, 64, 64), (128, 64, 64), (256, 64, 64)
    entries = [{"m": s[0], "n": 64, "k": 64, "backend": bk, "config": 20}
               for s, bk in ((a, "torch"), (b, "torch"), (c, "ours"))]
    # medians: a's ours 5% faster, b's 0.5%, c's torch 3% faster; paired: a 1.004, b 1.03, c torch/dispatch 1.0
    times = {"ours": {a: 9.5, b: 9.95, c: 10.0}, "torch": {a: 10.0, b: 10.0, c: 9.7},
             "dispatch": {a: 10.0, b: 10.0, c: 10.0}}
    extra = {a: {"dispatch": "fallback:torch", "paired_ours_vs_dispatch": "1.0040"},
             b: {"dispatch": "fallback:torch", "paired_ours_vs_dispatch": "1.0300"},
             c: {"dispatch": ours, "paired_dispatch_vs_torch": "1.0000"}}
    for d in extra.values():
        d.update(choice=ours, correct=True)
    write_shape_csv(tmp_path / "g.csv", times, extra)
    write_shape_csv(tmp_path / "old.csv", times, {s: {k: v for k, v in d.items() if not k.startswith("paired")}
                                                  for s, d in extra.items()})
    g, old = load_grid(tmp_path / "g.csv"), load_grid(tmp_path / "old.csv")
    moved = lambda grids, **kw: [(m.shape, m.to) for m in rechoose(entries, grids, 1.01, **kw)[1]]  # noqa: E731
    assert moved([g]) == [(a, "ours"), (c, "torch")]  # the medians
    assert moved([g], paired=True) == [(b, "ours")]
    assert moved([old], paired=True) == moved([old])  # (no paired columns: the medians)
    new, _ = rechoose(entries, [g], 1.01, paired=True)
    assert new[1]["grid_choice"]["paired"] is True and new[1]["grid_choice"]["ratios"] == [1.03]


def test_grid_choice_bt_gives_a_shape_the_cublaslt_tn_algorithm_every_bt_grid_timed_faster(tmp_path):
    """(session 42) rechoose_bt: the B^T route (hgemm on a transposed B) moves to cuBLASLt's autotuned TN algorithm
    where every grid run with CUDAOPT_GEMM_BENCH_BT=1 reads it faster and names the same one; an entry that has one
    goes back to the default route (twin or torch.matmul) where the grids read that faster; the NN choice stays."""
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.dispatch import choose, parse_table
    from cudaopt.gemm.grid_choice import GridError, load_grid, rechoose_bt
    from cudaopt.gemm.report import write_shape_csv

    ours = Choice("ours", 20, 1).label()
    a, b, c, d, e = [(64, 64, 64 * i) for i in range(1, 6)]

    # {shape: (dispatch_bt us, ours_bt us or None, torch_bt us, lt_auto_tn us, lt_auto_tn_algo, dispatch_bt label,
    #          NN dispatch label)}
    def grid(path, rows):
        times = {"ours": {}, "torch": {}, "dispatch": {}, "dispatch_bt": {}, "ours_bt": {}, "torch_bt": {},
                 "lt_auto_tn": {}}
        extra = {}
        for sh, (dbt, obt, tbt, lt, algo, route, nn) in rows.items():
            for name, v in (("ours", 10.0), ("torch", 10.0), ("dispatch", 10.0), ("dispatch_bt", dbt),
                            ("torch_bt", tbt), ("lt_auto_tn", lt)) + ((("ours_bt", obt),) if obt else ()):
                times[name][sh] = v
            extra[sh] = {"dispatch": nn, "choice": ours, "correct": True, "lt_auto_tn_algo": algo,
                         "dispatch_bt": route}
        write_shape_csv(path, times, extra)
        return load_grid(path)

    lt3 = "fallback:cublaslt_tn_algo3"
    entries = [{"m": 64, "n": 64, "k": 64, "backend": "ours", "config": 20},  # a: lt TN 10% faster in both: algo 2
               {"m": 64, "n": 64, "k": 128, "backend": "torch", "config": 20},  # b: faster in one grid only: stays
               {"m": 64, "n": 64, "k": 192, "backend": "ours", "config": 20, "bt_lt_algo": 3},  # c: twin faster: back
               {"m": 64, "n": 64, "k": 256, "backend": "ours", "config": 20},  # d: the grids name two algorithms
               {"m": 64, "n": 64, "k": 320, "backend": "ours", "config": 20}]  # e: a grid of another B^T route
    g1 = {a: (10.0, 10.0, 11.0, 9.0, 2, ours + "_bt", ours), b: (10.0, None, 10.0, 9.0, 1, "fallback:torch",
                                                                     "fallback:torch"),
          c: (10.0, 9.0, 11.0, 10.0, 3, lt3, ours), d: (10.0, 10.0, 11.0, 9.0, 4, ours + "_bt", ours),
          e: (10.0, 10.0, 11.0, 9.0, 4, lt3, ours)}
    g2 = {**g1, b: (10.0, None, 10.0, 10.0, 1, "fallback:torch", "fallback:torch"),
          d: (10.0, 10.0, 11.0, 9.0, 5, ours + "_bt", ours)}
    grids = [grid(tmp_path / "g1.csv", g1), grid(tmp_path / "g2.csv", g2)]
    new, moves = rechoose_bt(entries, grids, margin=1.01)
    assert [(m.shape, m.was, m.to, m.algo) for m in moves] == [(a, "default", "cublaslt_tn", 2),
                                                               (c, lt3, "default", -1)]
    by = {(x["m"], x["n"], x["k"]): x for x in new}
    assert by[a]["bt_lt_algo"] == 2 and by[a]["bt_grid_choice"]["ratios"] == [1.1111, 1.1111]
    assert "bt_lt_algo" not in by[c] and by[b] == entries[1] and by[d] == entries[3] and by[e] == entries[4]
    table = parse_table({"entries": new})  # what the dispatcher loads: the NN choice as it was
    assert table[a] == Choice("ours", 20, 1, -1, 2) and table[a].label() == ours
    assert choose(64, 64, 96, table).bt_algo == -1  # a neighbour's TN index names another shape's list
    # read on a grid (read_table_bt): each entry's B^T route from what the grid timed, against cuBLASLt autotuned TN
    from cudaopt.gemm.grid_choice import bt_choice_time, held_out, read_table_bt

    assert bt_choice_time(table[a], grids[0][a]) == (9.0, "columns")  # the TN algorithm the grid named: its time
    assert bt_choice_time(table[c], grids[0][c]) == (9.0, "columns")  # back to the default route: the twin's time
    assert bt_choice_time(table[b], grids[0][b]) == (10.0, "same")  # the route the grid ran for the same NN choice
    assert bt_choice_time(Choice("ours", 20, 1, -1, 7), grids[0][a]) == (pytest.approx(math.nan, nan_ok=True),
                                                                         "unread")  # a TN algorithm not timed
    assert bt_choice_time(Choice("ours", 21, 1), grids[0][a])[1] == "unread"  # another kernel's twin
    r = read_table_bt(new, grids[0])
    assert (r.shapes, r.same, r.columns, r.unread) == (5, 2, 3, 0)  # b, d as run; a, c, e from the grid's columns
    assert (r.floor_grid, r.floor_table) == (4, 3)  # (lt_auto_tn 9 against 10: a, b, d, e; the table lifts a)
    # each grid left out: from g2 alone a, c and d (algorithm 5) move; from g1 alone a, b, c and d (algorithm 4)
    assert [n for n, _ in held_out(entries, grids, bt=True)] == [3, 4]
    # paired: the within-round column (lt_auto_tn / dispatch_bt, > 1 where the route is faster) decides instead
    times = {n: {a: v} for n, v in (("ours", 10.0), ("torch", 10.0), ("dispatch", 10.0), ("dispatch_bt", 10.0),
                                    ("torch_bt", 11.0), ("lt_auto_tn", 9.0))}  # medians: cuBLASLt TN 10% faster
    extra = {a: {"dispatch": ours, "choice": ours, "correct": True, "lt_auto_tn_algo": 2, "dispatch_bt": ours + "_bt",
                 "paired_dispatch_bt_vs_lt_auto_tn": "1.0300"}}  # within rounds the route 3% faster: no move
    write_shape_csv(tmp_path / "p.csv", times, extra)
    g = load_grid(tmp_path / "p.csv")
    assert [m.to for m in rechoose_bt(entries[:1], [g])[1]] == ["cublaslt_tn"]  # (the medians)
    assert rechoose_bt(entries[:1], [g], paired=True)[1] == []
    extra[a]["paired_dispatch_bt_vs_lt_auto_tn"] = "0.9000"  # within rounds cuBLASLt TN 11% faster: the move
    write_shape_csv(tmp_path / "p.csv", times, extra)
    assert [m.ratios for m in rechoose_bt(entries[:1], [load_grid(tmp_path / "p.csv")], paired=True)[1]] == [
        pytest.approx((1 / 0.9,))]
    # (session 45) an entry naming a TN algorithm is read where the grids ran that algorithm, whatever NN choice they
    # ran (the candidate moved the shape's NN entry since): f moves to the algorithm both grids name; g, our kernel,
    # does not go back to its twin where the grids timed another kernel's twin
    f, g_ = (64, 64, 384), (64, 64, 448)
    moved_nn = [{"m": 64, "n": 64, "k": 384, "backend": "torch", "config": 20, "bt_lt_algo": 3},
                {"m": 64, "n": 64, "k": 448, "backend": "ours", "config": 21, "bt_lt_algo": 3}]
    rows = {f: (10.0, None, 11.0, 9.0, 1, lt3, "fallback:cublaslt_nn_algo2"),
            g_: (10.0, 8.0, 11.0, 10.0, 3, lt3, ours)}  # (the grids' kernel of record: config 20)
    two = [grid(tmp_path / "m1.csv", rows), grid(tmp_path / "m2.csv", rows)]
    new2, moves2 = rechoose_bt(moved_nn, two, margin=1.01)
    assert [(m.shape, m.was, m.to, m.algo) for m in moves2] == [(f, lt3, "cublaslt_tn", 1)]
    assert new2[0]["bt_lt_algo"] == 1 and new2[0]["backend"] == "torch" and new2[1] == moved_nn[1]
    # the same entry without a TN algorithm (its default route) is not read from a grid of another NN choice
    assert rechoose_bt([{k: v for k, v in moved_nn[0].items() if k != "bt_lt_algo"}], two)[1] == []
    with pytest.raises(GridError, match="CUDAOPT_GEMM_BENCH_BT=1"):  # a grid run without the B^T candidates
        rechoose_bt(entries, [load_grid(_grid_csv(tmp_path / "nn.csv", {a: (9.0, 10.0, 10.0, ours, ours, True)}))])
    with pytest.raises(ValueError, match="bt_lt_algo"):
        parse_table({"entries": [{**entries[0], "bt_lt_algo": -2}]})


def test_leaving_each_grid_out_reads_the_other_grids_choice_on_it(tmp_path):
    """(session 40) held_out: rechoose from all grids but one, read the moves on that one against cuBLASLt autotuned
    max; a move only some grids support does not count for them."""
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.grid_choice import GridError, held_out, load_grid
    from cudaopt.gemm.report import write_shape_csv

    ours = Choice("ours", 20, 1).label()
    a, b = (64, 64, 64), (128, 64, 64)
    entries = [{"m": 64, "n": 64, "k": 64, "backend": "torch", "config": 20},  # ours faster in every grid
               {"m": 128, "n": 64, "k": 64, "backend": "ours", "config": 20}]  # torch faster in grid 0 only

    def grid(path, torch_b):  # columns: ours, torch, dispatch, lt_auto_max
        rows = {a: (9.5, 10.5, 10.5, 9.9), b: (10.0, torch_b, 10.0, 9.9)}
        times = {n: {s: r[i] for s, r in rows.items()} for i, n in enumerate(("ours", "torch", "dispatch", "lt_auto_max"))}
        write_shape_csv(path, times, {a: {"dispatch": "fallback:torch", "choice": ours, "correct": True},
                                      b: {"dispatch": ours, "choice": ours, "correct": True}})
        return load_grid(path)

    grids = [grid(tmp_path / f"g{i}.csv", tb) for i, tb in enumerate((9.0, 10.5, 10.5))]
    got = held_out(entries, grids, margin=1.01)
    assert [(n, r.grid, r.shapes, r.same, r.columns, r.floor_grid, r.floor_table) for n, r in got] == [
        (1, 0, 2, 1, 1, 1, 0), (1, 1, 2, 1, 1, 1, 0), (1, 2, 2, 1, 1, 1, 0)]
    before = ((9.9 / 10.5 - 1) + (9.9 / 10.0 - 1)) / 2
    after = ((9.9 / 9.5 - 1) + (9.9 / 10.0 - 1)) / 2
    assert got[0][1].mean_grid == pytest.approx(before) and got[0][1].mean_table == pytest.approx(after)
    with pytest.raises(GridError, match="two or more grids"):
        held_out(entries, grids[:1])


def test_a_candidate_table_is_read_on_a_grid_of_another_table_from_the_columns_it_timed(tmp_path):
    """(session 40) read_table / `cudaopt gemm-table-on-grids`: each choice read where the grid timed it (its
    dispatcher, our kernel of record, torch.matmul, the named cuBLASLt algorithm), approximately where the grid names no
    algorithm, and left out where the grid did not time it; beside the grid's own dispatcher on the same shapes."""
    import gzip
    import json
    import subprocess
    import sys

    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.grid_choice import load_grid, read_table
    from cudaopt.gemm.report import write_shape_csv

    ours = Choice("ours", 20, 1).label()
    shapes = [(64, 64, 64 * i) for i in range(1, 9)]
    # the grid: (ours, torch, lt_auto_nn, dispatch, lt_auto_max us, dispatch label, lt_auto_nn_algo or None)
    rows = {shapes[0]: (9.0, 10.0, 10.0, 10.0, 10.0, ours, 1),  # candidate: ours as run -> same
            shapes[1]: (9.0, 10.0, 10.0, 10.0, 9.9, "fallback:torch", 1),  # candidate: ours -> column (9.0)
            shapes[2]: (9.0, 10.0, 10.0, 10.0, 9.9, "fallback:torch", 1),  # candidate: config 21 -> unread
            shapes[3]: (10.0, 9.5, 10.0, 10.0, 9.5, ours, 1),  # candidate: torch -> column (9.5)
            shapes[4]: (10.0, 11.0, 9.0, 10.0, 9.0, ours, 3),  # candidate: cuBLASLt 3, named -> column (9.0)
            shapes[5]: (10.0, 11.0, 9.0, 10.0, 9.0, ours, None),  # candidate: cuBLASLt 3, unnamed -> approx (9.0)
            shapes[6]: (10.0, 11.0, 9.0, 10.0, 9.0, ours, 2)}  # candidate: cuBLASLt 3, 2 named -> unread
    # (shapes[7]: not in the grid)
    times = {c: {s: r[i] for s, r in rows.items()}
             for i, c in enumerate(("ours", "torch", "lt_auto_nn", "dispatch", "lt_auto_max"))}
    extra = {s: {"dispatch": r[5], "choice": ours, "correct": True,
                 **({} if r[6] is None else {"lt_auto_nn_algo": r[6]})} for s, r in rows.items()}
    write_shape_csv(tmp_path / "g.csv", times, extra)
    entries = [{"m": m, "n": n, "k": k, "backend": b, "config": c, **({"lt_algo": 3} if b == "cublaslt" else {})}
               for (m, n, k), (b, c) in zip(shapes, [("ours", 20), ("ours", 20), ("ours", 21), ("torch", 20),
                                                     ("cublaslt", 20), ("cublaslt", 20), ("cublaslt", 20), ("ours", 20)])]
    r = read_table(entries, load_grid(tmp_path / "g.csv"))
    assert (r.shapes, r.same, r.columns, r.approx, r.unread) == (5, 1, 3, 1, 2)
    assert (r.floor_grid, r.floor_table) == (3, 0)  # (9.5/10, 9.0/10 twice under 0.98x as the grid ran them)
    read = [(10.0, 10.0, 10.0), (9.9, 10.0, 9.0), (9.5, 10.0, 9.5), (9.0, 10.0, 9.0), (9.0, 10.0, 9.0)]
    assert r.mean_grid == pytest.approx(sum(b / g - 1 for b, g, _ in read) / 5)
    assert r.mean_table == pytest.approx(sum(b / t - 1 for b, _, t in read) / 5)

    table = tmp_path / "cand.json.gz"
    table.write_bytes(gzip.compress(json.dumps({"entries": entries}).encode()))
    run = lambda *a: subprocess.run([sys.executable, "-m", "cudaopt.cli", "gemm-table-on-grids", *map(str, a)],
                                    capture_output=True, text=True, timeout=120, check=False)
    p = run("--table", table, "--grid", tmp_path / "g.csv")
    said = " ".join(p.stdout.split())
    assert p.returncode == 0, p.stderr
    assert "5 shapes read (1 as the grid ran them, 3 from its other columns, 1 on cuBLASLt's autotuned NN" in said
    assert "2 not timed there, left out" in said and "under 0.98x 3 -> 0" in said
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "noshape.json").write_text('{"entries": [{"n": 1}]}')
    for args, want in ((("--table", tmp_path / "none.json", "--grid", tmp_path / "g.csv"), "no table at"),
                       (("--table", tmp_path / "noshape.json", "--grid", tmp_path / "g.csv"), "needs integer m, n, k"),
                       (("--table", tmp_path / "bad.json", "--grid", tmp_path / "g.csv"), "not a JSON table"),
                       (("--table", table, "--grid", tmp_path / "none.csv"), "no such file")):
        p = run(*args)
        assert p.returncode == 2 and p.stderr.startswith("error: ") and want in p.stderr, p.stderr


def test_gemm_table_from_grids_cli_writes_a_loadable_table_and_refuses_bad_input(tmp_path):
    import json
    import subprocess
    import sys

    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.dispatch import parse_table

    ours = Choice("ours", 20, 1).label()
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"device": "test", "entries": [{"m": 64, "n": 64, "k": 64, "backend": "torch",
                                                                "config": 20}]}))
    rows = {(64, 64, 64): (9.0, 10.0, 10.0, "fallback:torch", ours, True)}
    g1, g2 = _grid_csv(tmp_path / "g1.csv", rows), _grid_csv(tmp_path / "g2.csv", rows)
    run = lambda *a: subprocess.run([sys.executable, "-m", "cudaopt.cli", "gemm-table-from-grids", *map(str, a)],
                                    capture_output=True, text=True, timeout=120, check=False)
    p = run("--table", table, "--grid", g1, "--grid", g2, "--out", tmp_path / "new.json")
    assert p.returncode == 0, p.stderr
    assert "1 of 1 shapes moved" in " ".join(p.stdout.split())
    said = " ".join(p.stdout.split())
    assert "left out" in said and "no cuBLASLt autotuned times in this grid" in said  # (these grids: no lt_auto_max)
    data = json.loads((tmp_path / "new.json").read_text())
    assert data["device"] == "test" and parse_table(data)[(64, 64, 64)] == Choice("ours", 20, 1)
    for args, want in ((("--grid", tmp_path / "none.csv"), "no such file"),
                       (("--grid", table), "not a bench-gemm shapes.csv"),
                       (("--grid", g1, "--margin", "0.9"), "margin 0.9")):
        p = run("--table", table, *args, "--out", tmp_path / "bad.json")
        assert p.returncode == 2 and p.stderr.startswith("error: ") and want in p.stderr, p.stderr
        assert not (tmp_path / "bad.json").exists()
    (tmp_path / "notable.json").write_text('{"entries": [{"n": 1}]}')
    (tmp_path / "nojson.json").write_text("{")
    for bad, want in (("notable.json", "needs integer m, n, k"), ("nojson.json", "not JSON")):
        p = run("--table", tmp_path / bad, "--grid", g1, "--out", tmp_path / "bad.json")
        assert p.returncode == 2 and p.stderr.startswith("error: ") and want in p.stderr, p.stderr
        assert not (tmp_path / "bad.json").exists()
    p = run("--table", table, "--grid", g1, "--out", tmp_path / "one.json")
    assert p.returncode == 0 and "one grid" in p.stderr
    # (session 42) --bt on grids without the B^T candidates: one clear line, nothing written
    p = run("--table", table, "--grid", g1, "--out", tmp_path / "bad.json", "--bt")
    assert p.returncode == 2 and "CUDAOPT_GEMM_BENCH_BT=1" in p.stderr and not (tmp_path / "bad.json").exists()
    # (session 44) grids of another GPU: --device names it in the new table, which hgemm takes by that name
    p = run("--table", table, "--grid", g1, "--grid", g2, "--out", tmp_path / "h100.json", "--device", "NVIDIA H100 80GB HBM3")
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "h100.json").read_text())["device"] == "NVIDIA H100 80GB HBM3"
    p = run("--table", table, "--grid", g1, "--grid", g2, "--out", tmp_path / "bad.json", "--device", " ")
    assert p.returncode == 2 and "--device is empty" in p.stderr and not (tmp_path / "bad.json").exists()


def test_grids_of_mixed_timing_protocols_are_named(tmp_path):
    """(session 53) gemm-table-from-grids warns where its grids were timed with and without the L2 flush (read from
    each grid's shapes.jsonl, else its summary.md; a grid that says neither is left out of the comparison)."""
    import json
    import subprocess
    import sys

    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.grid_choice import grid_flush, mixed_protocols

    rows = {(64, 64, 64): (9.0, 10.0, 10.0, "fallback:torch", Choice("ours", 20, 1).label(), True)}
    grids = {}
    for name, line in (("flushed", "timing protocol: seed 3; L2 flushed before every timed replay"),
                       ("flushed2", "timing protocol: seed 4; L2 flushed before every timed replay"),
                       ("old", None), ("off", "timing protocol: seed 0; L2 not flushed (CUDAOPT_GEMM_L2_FLUSH=0)"),
                       ("bare", "")):
        (tmp_path / name).mkdir()
        grids[name] = _grid_csv(tmp_path / name / "shapes.csv", rows)
        if line != "":
            (tmp_path / name / "summary.md").write_text("## HGEMM offline / gpu timing\n\n" + (line + "\n" if line else ""))
    # a shapes.jsonl beside the grid is the run's own record: its protocol (none: seed 0 and no flush)
    (tmp_path / "logged").mkdir()
    grids["logged"] = _grid_csv(tmp_path / "logged" / "shapes.csv", rows)
    (tmp_path / "logged" / "shapes.jsonl").write_text('{"m": 64, "n": 64, "k": 64}\n')
    (tmp_path / "logged" / "summary.md").write_text("timing protocol: seed 0; L2 flushed before every timed replay\n")
    assert [grid_flush(grids[n]) for n in ("flushed", "old", "off", "bare", "logged")] == [True, None, False, None,
                                                                                           False]
    (tmp_path / "logged" / "shapes.jsonl").write_text('{"m": 64, "protocol": {"seed": 2, "l2_flush": true}}\n')
    assert grid_flush(grids["logged"]) is True
    assert mixed_protocols([grids["flushed"], grids["flushed2"], grids["bare"], grids["old"]]) == ""
    assert mixed_protocols([grids["old"], grids["off"]]) == ""
    warn = mixed_protocols([grids["flushed"], grids["off"]])
    assert warn.startswith("warning: ") and str(grids["off"]) in warn and str(grids["flushed"]) not in warn
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"device": "test", "entries": [{"m": 64, "n": 64, "k": 64, "backend": "torch",
                                                                "config": 20}]}))
    run = lambda *g: subprocess.run([sys.executable, "-m", "cudaopt.cli", "gemm-table-from-grids", "--table", str(table),
                                     *[a for x in g for a in ("--grid", str(x))], "--out", str(tmp_path / "new.json")],
                                    capture_output=True, text=True, timeout=120, check=False)
    p = run(grids["flushed"], grids["off"])
    assert p.returncode == 0 and "mix timing protocols" in " ".join(p.stderr.split()), p.stderr
    p = run(grids["flushed"], grids["flushed2"])
    assert p.returncode == 0 and "mix timing protocols" not in p.stderr, p.stderr


@pytest.fixture
def fresh_table_caches():
    """The shipped-table memos and the process's device choice reset before and after: a test that points the
    dispatcher at another table leaves no choice of it behind for the next test."""
    import cudaopt.gemm as gemm

    def reset():
        gemm._device_table_chosen = False
        dispatch._device_table = None
        dispatch.load_table.cache_clear()
        dispatch._choose_shipped.cache_clear()

    reset()
    yield
    reset()


def _fake_torch(name=None, error=None):
    """What _table_for_device asks of torch: the GPU's name (or the error of a machine without one)."""
    import types

    def get_device_name():
        if error:
            raise error
        return name

    return types.SimpleNamespace(cuda=types.SimpleNamespace(get_device_name=get_device_name))


def test_cudaopt_gemm_table_names_the_users_own_table(tmp_path, monkeypatch, fresh_table_caches):
    import cudaopt.gemm as gemm

    data = {"device": "NVIDIA H100 80GB HBM3",
            "entries": [{"m": 4096, "n": 4096, "k": 4096, "backend": "torch", "config": 0, "splits": 1}]}
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    shipped = dispatch.choose(4096, 4096, 4096)
    assert dispatch.table_device() == "NVIDIA H200" and shipped.backend == "ours"
    dispatch.load_table.cache_clear()
    dispatch._choose_shipped.cache_clear()
    monkeypatch.setenv(dispatch.TABLE_ENV, str(path))
    assert dispatch.table_path() == path and dispatch.table_device() == "NVIDIA H100 80GB HBM3"
    assert dispatch.choose(4096, 4096, 4096) == Choice("torch", 0, 1)
    assert dispatch.table_path(str(dispatch.DEFAULT_TABLE)) == dispatch.DEFAULT_TABLE  # an explicit path wins
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the user's table is this GPU's: no warning, and no shipped table over it
        gemm._table_for_device(_fake_torch("NVIDIA H100 80GB HBM3"))
    assert dispatch.table_path() == path


def test_cudaopt_gemm_table_that_does_not_exist_is_one_clear_error(tmp_path, monkeypatch, fresh_table_caches):
    monkeypatch.setenv(dispatch.TABLE_ENV, str(tmp_path / "nope.json"))
    with pytest.raises(FileNotFoundError, match="CUDAOPT_GEMM_TABLE=.*nope.json: no such table"):
        dispatch.choose(64, 64, 64)


def test_the_shipped_table_of_the_gpu_in_use_is_the_dispatchers(tmp_path, fresh_table_caches):
    entry = {"m": 4096, "n": 4096, "k": 4096, "config": 0, "splits": 1}
    (tmp_path / "tuned_h200.json").write_text(json.dumps({"device": "NVIDIA H200",
                                                          "entries": [{**entry, "backend": "ours"}]}))
    (tmp_path / "tuned_x1.json").write_text(json.dumps({"device": "GPU X1", "entries": [{**entry, "backend": "torch"}]}))
    (tmp_path / "tuned_broken.json").write_text("{not json")
    (tmp_path / "tuned_nodevice.json").write_text(json.dumps({"entries": []}))
    assert dispatch.shipped_tables(tmp_path) == {"NVIDIA H200": tmp_path / "tuned_h200.json",
                                                 "GPU X1": tmp_path / "tuned_x1.json"}
    assert dispatch.use_device("GPU X1", tmp_path) == tmp_path / "tuned_x1.json"
    assert dispatch.choose(4096, 4096, 4096) == Choice("torch", 0, 1) and dispatch.table_device() == "GPU X1"
    assert dispatch.use_device("GPU Y", tmp_path) is None  # no table of its own: the H200's, as before
    assert dispatch.table_path() == dispatch.DEFAULT_TABLE and dispatch.choose(4096, 4096, 4096).backend == "ours"
    assert set(dispatch.shipped_tables()) >= {"NVIDIA H200"}  # what the package ships names its GPUs


def test_a_gpu_other_than_the_tables_is_warned_once(monkeypatch, fresh_table_caches):
    import warnings

    import cudaopt.gemm as gemm

    assert dispatch.foreign_device_note("NVIDIA H200", "NVIDIA H200") is None
    assert dispatch.foreign_device_note("NVIDIA A100-SXM4-80GB", None) is None  # a table that does not say
    note = dispatch.foreign_device_note("NVIDIA A100-SXM4-80GB", "NVIDIA H200")
    assert "tuned on NVIDIA H200" in note and "NVIDIA A100-SXM4-80GB" in note and "CUDAOPT_GEMM_TABLE=T" in note
    with pytest.warns(RuntimeWarning, match="tuned on NVIDIA H200, this GPU is NVIDIA A100-SXM4-80GB"):
        gemm._table_for_device(_fake_torch("NVIDIA A100-SXM4-80GB"))
    assert dispatch.table_path() == dispatch.DEFAULT_TABLE
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gemm._table_for_device(_fake_torch("NVIDIA A100-SXM4-80GB"))  # once a process
        gemm._device_table_chosen = False
        gemm._table_for_device(_fake_torch("NVIDIA H200"))  # the table's own GPU: nothing
        gemm._device_table_chosen = False
        gemm._table_for_device(_fake_torch(error=RuntimeError("no CUDA GPUs are available")))  # the call says so


def _load_script(name: str):
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(name, root / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gemm_moves_ab_times_only_the_moved_shapes_and_reads_them(tmp_path, capsys):
    """scripts/gemm_moves_ab.py: the shapes two tables choose differently, and the report from bench-gemm's
    shapes.csv of each side (here written by hand: the GPU part is bench-gemm's own)."""
    import csv
    import gzip

    mod = _load_script("gemm_moves_ab")
    e = lambda m, backend, **kw: {"m": m, "n": 64, "k": 64, "backend": backend, "config": 20, "splits": 1, **kw}  # noqa: E731
    old = {"device": "X", "entries": [e(64, "ours"), e(128, "torch"), e(256, "ours")]}
    new = {"device": "X", "entries": [e(64, "ours"), e(128, "cublaslt", lt_algo=3), e(256, "torch")]}
    assert mod.moved_shapes(old, new) == [(128, 64, 64), (256, 64, 64)]
    (tmp_path / "old.json").write_text(json.dumps(old))
    with gzip.open(tmp_path / "new.json.gz", "wt") as f:
        json.dump(new, f)
    out = tmp_path / "runs"
    # (dispatch, lt_auto_nn, lt_auto_max) per shape and side; the second repeat 10% slower throughout
    times = {"old": {128: ("fallback:torch", 10.0, 9.0, 9.0), 256: ("ours", 20.0, 21.0, 21.0)},
             "new": {128: ("fallback:cublaslt_nn_algo3", 9.0, 9.0, 8.5), 256: ("fallback:torch", 22.0, 21.0, 21.0)}}
    for side, rows in times.items():
        for i, scale in enumerate((1.0, 1.1)):
            (out / f"{side}_{i}").mkdir(parents=True)
            with open(out / f"{side}_{i}" / "shapes.csv", "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["m", "n", "k", "ours_us", "torch_us", "dispatch_us", "lt_auto_nn_us", "lt_auto_max_us",
                            "dispatch", "choice", "correct"])  # (bench-gemm's columns the script reads, and load_grid's)
                for m, (label, d, nn, mx) in rows.items():
                    w.writerow([m, 64, 64, d * scale, d * scale, d * scale, nn * scale, mx * scale, label, "ours",
                                "True"])
    assert mod.main(["--old", str(tmp_path / "old.json"), "--new", str(tmp_path / "new.json.gz"), "--out", str(out),
                     "--report-only"]) == 0
    said = capsys.readouterr().out
    assert "| 128x64x64 | fallback:torch | fallback:cublaslt_nn_algo3 |" in said
    per, agg = mod.summarize(out, 2)
    ratios = {p["shape"]: round(p["old_over_new"], 4) for p in per}
    assert ratios == {"128x64x64": round(10 / 9, 4), "256x64x64": round(20 / 22, 4)}
    assert agg["new_faster"] == 1 and agg["old_under_098_lt_nn"] == 1 and agg["new_under_098_lt_nn"] == 1  # 128 out, 256 in
    assert agg["new_under_098_lt_max"] == 2 and agg["all_correct"]
    assert abs(agg["geomean_old_over_new"] - math.sqrt(10 / 9 * 20 / 22)) < 1e-9
    # --write: the candidate less the move read slower (256: 20 -> 22 us) goes back to the old entry
    assert mod.main(["--old", str(tmp_path / "old.json"), "--new", str(tmp_path / "new.json.gz"), "--out", str(out),
                     "--report-only", "--write", str(tmp_path / "kept.json")]) == 0
    assert "1 of 2 moves kept (sent back: 256x64x64)" in capsys.readouterr().out
    assert json.loads((tmp_path / "kept.json").read_text())["entries"] == [new["entries"][0], new["entries"][1],
                                                                          old["entries"][2]]
    # bad input: one line on stderr, exit 2
    assert mod.main(["--old", str(tmp_path / "old.json"), "--new", str(tmp_path / "old.json"), "--out", str(out),
                     "--report-only"]) == 2
    assert "nothing to time" in capsys.readouterr().err
    assert mod.main(["--old", str(tmp_path / "old.json"), "--new", str(tmp_path / "new.json.gz"),
                     "--out", str(tmp_path / "empty"), "--report-only"]) == 2
    assert "no old_*/shapes.csv" in capsys.readouterr().err
    assert mod.main(["--old", str(tmp_path / "nope.json"), "--new", str(tmp_path / "new.json.gz"), "--out", str(out),
                     "--report-only"]) == 2
    assert "cannot read a table" in capsys.readouterr().err
    # a run folder whose shapes.csv is not bench-gemm's: one line, exit 2
    (tmp_path / "odd" / "old_0").mkdir(parents=True)
    (tmp_path / "odd" / "new_0").mkdir()
    for side in ("old_0", "new_0"):
        (tmp_path / "odd" / side / "shapes.csv").write_text("m,n,k\n64,64,64\n")
    assert mod.main(["--old", str(tmp_path / "old.json"), "--new", str(tmp_path / "new.json.gz"),
                     "--out", str(tmp_path / "odd"), "--report-only"]) == 2
    assert "missing columns" in capsys.readouterr().err
    # --bt on runs timed without the B^T columns: said, exit 2
    assert mod.main(["--old", str(tmp_path / "old.json"), "--new", str(tmp_path / "new.json.gz"), "--out", str(out),
                     "--report-only", "--bt"]) == 2
    assert "no B^T columns" in capsys.readouterr().err


def test_gemm_moves_ab_reads_the_b_transposed_route(tmp_path, capsys):
    """scripts/gemm_moves_ab.py --bt: a move of bt_lt_algo alone is a moved shape, and the second report reads hgemm's
    B^T route (dispatch_bt) against cuBLASLt autotuned TN and torch.matmul on B^T."""
    import csv

    mod = _load_script("gemm_moves_ab")
    e = lambda m, **kw: {"m": m, "n": 64, "k": 64, "backend": "cublaslt", "config": 20, "splits": 1, "lt_algo": 1, **kw}  # noqa: E731
    old, new = {"entries": [e(64, bt_lt_algo=3)]}, {"entries": [e(64, bt_lt_algo=1)]}
    assert mod.moved_shapes(old, new) == [(64, 64, 64)]
    for name, t in (("old.json", old), ("new.json", new)):
        (tmp_path / name).write_text(json.dumps(t))
    out = tmp_path / "runs"
    # (dispatch_bt label, dispatch_bt, lt_auto_tn, torch_bt): the new TN algorithm is cuBLASLt's autotuned one
    bt = {"old": ("fallback:cublaslt_tn_algo3", 12.0, 10.0, 11.0), "new": ("fallback:cublaslt_tn_algo1", 10.0, 10.0, 11.0)}
    for side, (label, d, tn, tb) in bt.items():
        (out / f"{side}_0").mkdir(parents=True)
        with open(out / f"{side}_0" / "shapes.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["m", "n", "k", "ours_us", "torch_us", "dispatch_us", "lt_auto_nn_us", "lt_auto_max_us",
                        "dispatch", "choice", "correct", "dispatch_bt", "dispatch_bt_us", "lt_auto_tn_us", "torch_bt_us"])
            w.writerow([64, 64, 64, 5.0, 5.0, 5.0, 5.0, 5.0, "fallback:cublaslt_nn_algo1", "ours", "True", label, d, tn,
                        tb])
    assert mod.main(["--old", str(tmp_path / "old.json"), "--new", str(tmp_path / "new.json"), "--out", str(out),
                     "--repeats", "1", "--report-only", "--bt"]) == 0
    said = capsys.readouterr().out
    assert "hgemm's B^T route:" in said and "| 64x64x64 | fallback:cublaslt_tn_algo3 | fallback:cublaslt_tn_algo1 |" in said
    per, agg = mod.summarize(out, 1, "bt")
    assert round(per[0]["old_over_new"], 4) == 1.2 and per[0]["new_vs_lt_tn"] == 1.0
    assert agg["old_under_098_lt_tn"] == 1 and agg["new_under_098_lt_tn"] == 0 and agg["new_under_098_torch_bt"] == 0
    # the NN report of the same runs: the route did not move there
    per_nn, _ = mod.summarize(out, 1)
    assert per_nn[0]["old_over_new"] == 1.0


def test_a_table_for_this_gpu_from_its_own_grids(tmp_path):
    """cudaopt gemm-table-for-gpu's engine: the base table's grid run N times (bench-gemm stood in for: it writes the
    grid a real run would), the moves every grid agrees on, the table labelled with the GPU; a rerun keeps its base."""
    from pathlib import Path

    from cudaopt.gemm.cli import table_for_gpu
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.dispatch import parse_table

    ours = Choice("ours", 20, 1).label()
    base = tmp_path / "base_in.json"
    base.write_text(json.dumps({"device": "NVIDIA H200", "entries": [
        {"m": 64, "n": 64, "k": 64, "backend": "torch", "config": 20},  # ours 10% faster in every grid: to ours
        {"m": 256, "n": 64, "k": 64, "backend": "ours", "config": 20},  # torch 5% faster in every grid: to torch
        {"m": 512, "n": 64, "k": 64, "backend": "ours", "config": 20}]}))  # a tie: stays
    calls = []

    def fake_bench(shapes, out_dir, table, rounds, resume):
        calls.append((shapes, Path(out_dir).name, Path(table).name, rounds, resume))
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        _grid_csv(Path(out_dir) / "shapes.csv", {(64, 64, 64): (9.0, 10.0, 10.0, "fallback:torch", ours, True),
                                                 (256, 64, 64): (20.0, 19.0, 20.0, ours, ours, True),
                                                 (512, 64, 64): (30.0, 30.0, 30.0, ours, ours, True)})

    said = []
    table, moved, bt_moved, _, back = table_for_gpu(tmp_path / "out", "GPU X", base, grids=2, rounds=7, bt=False,
                                                 bench=fake_bench, log=said.append)
    assert calls[:2] == [("grid", "grid1", "base.json", 7, True), ("grid", "grid2", "base.json", 7, True)]
    # then the two moved shapes alone, base table then proposal, twice (--verify 2): a tie keeps a move
    ab = [(sh, f"{side}_{i}", f"{side}_table.json", 7, True) for i in (0, 1) for side in ("old", "new")
          for sh in ["64x64x64,256x64x64"]]
    assert calls[2:] == ab and (tmp_path / "out" / "proposed.json").is_file()
    assert moved == 2 and bt_moved == 0 and back == 0 and table == tmp_path / "out" / "tuned.json"
    data = json.loads(table.read_text())
    got = parse_table(data)
    assert data["device"] == "GPU X" and got[(64, 64, 64)].backend == "ours" and got[(256, 64, 64)].backend == "torch"
    assert got[(512, 64, 64)].backend == "ours" and any("tuned on NVIDIA H200" in s for s in said)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"device": "Y", "entries": []}))
    table_for_gpu(tmp_path / "out", "GPU X", other, grids=2, bt=False, bench=fake_bench, log=said.append)
    assert json.loads((tmp_path / "out" / "base.json").read_text())["device"] == "NVIDIA H200"  # the grids' table kept
    with pytest.raises(ValueError, match="without the B.T route: rerun with --no-bt"):  # (grids of the other mode)
        table_for_gpu(tmp_path / "out", "GPU X", base, grids=2, bench=fake_bench, log=said.append)
    with pytest.raises(ValueError, match="--bt-margin 0.5"):
        table_for_gpu(tmp_path / "o4", "GPU X", base, bt_margin=0.5, bench=fake_bench)
    with pytest.raises(ValueError, match="at least 1"):
        table_for_gpu(tmp_path / "o2", "GPU X", base, grids=0, bench=fake_bench)
    with pytest.raises(ValueError, match="not a tuned table"):
        table_for_gpu(tmp_path / "o3", "GPU X", _write(tmp_path / "bad.json", "[1, 2]"), bench=fake_bench)


def _write(path, text):
    path.write_text(text)
    return path


def test_a_table_for_this_gpu_rechooses_its_b_transposed_route_too(tmp_path):
    """gemm-table-for-gpu (default --bt): the grids run with CUDAOPT_GEMM_BENCH_BT=1 (and the variable restored), the
    base table's cuBLASLt TN algorithm moved to the one every grid's autotuning named and timed faster within rounds."""
    import os
    from pathlib import Path

    from cudaopt.gemm.bench import BT_BENCH_ENV
    from cudaopt.gemm.cli import table_for_gpu
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.dispatch import parse_table
    from cudaopt.gemm.report import write_shape_csv

    ours = Choice("ours", 20, 1).label()
    base = _write(tmp_path / "base.json", json.dumps({"device": "NVIDIA H200", "entries": [
        {"m": 64, "n": 64, "k": 64, "backend": "ours", "config": 20, "bt_lt_algo": 3}]}))
    seen = []

    def fake_bench(shapes, out_dir, table, rounds, resume):
        seen.append(os.environ.get(BT_BENCH_ENV))
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        sh = (64, 64, 64)  # our kernel as fast as torch; its B^T route (TN algorithm 3) 10% behind algorithm 1
        times = {n: {sh: v} for n, v in (("ours", 10.0), ("torch", 10.0), ("dispatch", 10.0), ("dispatch_bt", 11.0),
                                         ("ours_bt", 11.5), ("torch_bt", 12.0), ("lt_auto_tn", 10.0))}
        extra = {sh: {"dispatch": ours, "choice": ours, "correct": True, "lt_auto_tn_algo": 1,
                      "dispatch_bt": "fallback:cublaslt_tn_algo3", "paired_dispatch_bt_vs_lt_auto_tn": "0.9100"}}
        write_shape_csv(Path(out_dir) / "shapes.csv", times, extra)

    os.environ.pop(BT_BENCH_ENV, None)
    table, moved, bt_moved, both_moved, back = table_for_gpu(tmp_path / "out", "GPU X", base, grids=2,
                                                             bench=fake_bench, log=lambda s: None, verify=0)
    assert seen == ["1", "1"] and BT_BENCH_ENV not in os.environ
    assert (moved, bt_moved, both_moved, back) == (0, 1, 0, 0)  # (algorithm 1 ties the NN choice: no layout move)
    got = parse_table(json.loads(table.read_text()))[(64, 64, 64)]
    assert got.backend == "ours" and got.bt_algo == 1


def test_a_table_for_this_gpu_sends_back_the_moves_its_own_shapes_read_slower(tmp_path):
    """gemm-table-for-gpu --verify (session 48): the grids' proposal timed shape by shape against the base table
    (bench-gemm stood in for by one that times a shape by the table it is given); the NN move that reads slower there
    and the B^T move that does go back, the others stay; each route judged on its own columns; a bad --verify is
    refused before any GPU work."""
    import os
    from pathlib import Path

    from cudaopt.gemm.bench import BT_BENCH_ENV
    from cudaopt.gemm.cli import table_for_gpu
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.dispatch import parse_table
    from cudaopt.gemm.moves import moved_routes
    from cudaopt.gemm.report import write_shape_csv

    base = _write(tmp_path / "base.json", json.dumps({"device": "NVIDIA H200", "entries": [
        {"m": m, "n": 64, "k": 64, "backend": "torch", "config": 20, "bt_lt_algo": 3} for m in (64, 128, 256, 512)]}))
    # grids: ours 10% faster than torch on 64 and 128 (both move to ours); 256 and 512: the B^T route's TN
    # algorithm 1 faster than 3 (both move it); in the A/B, ours is slower than torch on 128 after all, and
    # algorithm 1 slower on 512
    grid_ours = {64: 9.0, 128: 9.0, 256: 10.0, 512: 10.0}
    ab_ours = {64: 9.0, 128: 11.0, 256: 10.0, 512: 10.0}
    ab_tn = {1: {256: 8.0, 512: 12.0}, 3: {256: 10.0, 512: 10.0}}
    ours_label = Choice("ours", 20, 1).label()  # (the config "ours" times: the grids' choice column)
    calls = []

    def fake_bench(shapes, out_dir, table, rounds, resume):
        calls.append(Path(out_dir).name)
        assert os.environ.get(BT_BENCH_ENV) == "1"
        choices = parse_table(json.loads(Path(table).read_text()))
        ms = [64, 128, 256, 512] if shapes == "grid" else [int(s.split("x")[0]) for s in shapes.split(",")]
        names = ("ours", "torch", "dispatch", "dispatch_bt", "lt_auto_tn", "torch_bt", "lt_auto_nn", "lt_auto_max",
                 "dispatch_both")
        times, extra = {n: {} for n in names}, {}
        for m in ms:
            sh, c = (m, 64, 64), choices[(m, 64, 64)]
            ours_t = (grid_ours if shapes == "grid" else ab_ours)[m]
            d = ours_t if c.backend == "ours" else 10.0
            bt_t = 8.0 if m < 256 else ({1: 8.0, 3: 10.0}[c.bt_algo] if shapes == "grid" else ab_tn[c.bt_algo][m])
            for n, v in zip(names, (ours_t, 10.0, d, bt_t, 8.0, 12.0, 10.0, 10.0, bt_t if c.both_bt else d)):
                times[n][sh] = v
            extra[sh] = {"dispatch": c.label(), "choice": ours_label, "correct": True, "dispatch_both": "x",
                         "lt_auto_tn_algo": 3 if m < 256 else 1,  # (64, 128: the base's algorithm already)
                         "dispatch_bt": f"fallback:cublaslt_tn_algo{c.bt_algo}",
                         "paired_dispatch_bt_vs_lt_auto_tn": f"{8.0 / bt_t:.4f}"}
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        write_shape_csv(Path(out_dir) / "shapes.csv", times, extra)

    said = []
    table, moved, bt_moved, both_moved, back = table_for_gpu(tmp_path / "out", "GPU X", base, grids=2, rounds=5,
                                                             bench=fake_bench, log=said.append, verify=1)
    proposed = json.loads((tmp_path / "out" / "proposed.json").read_text())["entries"]
    # (session 49) every B^T route reads faster than its NN choice in the grids (8 against 9-10 us): each shape also
    # reads the copy when handed both; a move goes back whole where any route it changes reads slower
    assert [moved_routes(b, e) for b, e in zip(json.loads(base.read_text())["entries"], proposed)] == [
        {"nn", "both"}, {"nn", "both"}, {"bt", "both"}, {"bt", "both"}]
    assert calls == ["grid1", "grid2", "old_0", "new_0"]
    got = parse_table(json.loads(table.read_text()))
    assert [got[(m, 64, 64)].backend for m in (64, 128)] == ["ours", "torch"]  # 128 sent back
    assert [got[(m, 64, 64)].bt_algo for m in (256, 512)] == [1, 3]  # 512 sent back
    assert (moved, bt_moved, both_moved, back) == (1, 1, 2, 2)
    assert parse_table(json.loads(table.read_text()))[(64, 64, 64)].both_bt
    assert any(line.startswith("moved shapes 4 (hgemm's B^T route)") for line in said)
    with pytest.raises(ValueError, match="--verify -1"):
        table_for_gpu(tmp_path / "o2", "GPU X", base, bench=fake_bench, verify=-1)


def test_gemm_table_for_gpu_cli_refuses_bad_input_in_one_line(tmp_path):
    import subprocess
    import sys

    run = lambda *a: subprocess.run([sys.executable, "-m", "cudaopt.cli", "gemm-table-for-gpu", *map(str, a)],  # noqa: E731
                                    capture_output=True, text=True, timeout=120, check=False)
    for args, want in ((("--grids", "0"), "at least 1"), (("--margin", "0.9"), "--margin 0.9"),
                       (("--bt-margin", "0.9"), "--bt-margin 0.9"), (("--verify", "-1"), "--verify -1")):
        p = run("--out", tmp_path / "x", *args)
        assert p.returncode == 2 and p.stderr.startswith("error: ") and want in p.stderr, p.stderr
    import torch

    if not torch.cuda.is_available():
        p = run("--out", tmp_path / "x")
        assert p.returncode == 2 and "needs a CUDA GPU" in p.stderr and not (tmp_path / "x").exists()


def test_table_entries_name_the_stream_k_twin_only_where_one_exists():
    """(session 47) "streamk": true runs our config through its stream-K tail twin: parsed into Choice.streamk,
    labelled _sktail; refused (one clear line) for a fallback, split-K, a config without a twin or a non-boolean."""
    twin = next(c for c in KERNEL_CONFIGS if c.label == "wgmma128x256x64_c2_s3_tma")
    none = next(c for c in KERNEL_CONFIGS if c.label == "wgmma128x192x64_pp_s4_e1")  # a ping-pong: no twin
    assert twin.has_streamk_twin and not none.has_streamk_twin
    assert sorted(c.label for c in KERNEL_CONFIGS if c.has_streamk_twin) == sorted(
        ["wgmma128x256x64_c2_s3_tma", "wgmma128x256x64_c2_s4_tma_e2", "wgmma256x128x64_c2_s4_tma_e1",
         "wgmma128x192x64_c2_s5_tma_e1", "wgmma128x256x64_c2_s4_tma_e2_cs", "wgmma128x192x64_c2_s5_tma_e1_cs"])
    base = {"m": 3200, "n": 8192, "k": 4096, "backend": "ours", "config": twin.id, "splits": 1}
    table = dispatch.parse_table({"entries": [{**base, "streamk": True}, {**base, "m": 3328}]})
    assert table[(3200, 8192, 4096)] == Choice("ours", twin.id, 1, streamk=True)
    assert table[(3200, 8192, 4096)].label() == "wgmma128x256x64_c2_s3_tma_sktail"
    assert table[(3328, 8192, 4096)].streamk is False
    for bad in [{"streamk": True, "splits": 2}, {"streamk": True, "config": none.id},
                {"streamk": True, "backend": "torch"}, {"streamk": "yes"}]:
        with pytest.raises(ValueError, match="streamk"):
            dispatch.parse_table({"entries": [{**base, **bad}]})
    # a fallback's "ours" (what the benchmarks time as ours) keeps the twin
    assert Choice("torch", twin.id, 1, streamk=True).as_ours() == Choice("ours", twin.id, 1, streamk=True)


def test_gemm_floor_across_keeps_the_shapes_under_in_every_grid(tmp_path, capsys):
    """scripts/gemm_floor_across.py (session 48): a shape under 0.98x in one grid only is that grid's; the report
    lists those under in all, by medians, paired, and beyond noise, with the TN-only flag; bad input: one line, 2."""
    mod = _load_script("gemm_floor_across")
    head = "m,n,k,dispatch,ratio,best_nn,tn_gain,tn_only,paired_ratio,paired_hi95\n"
    a = _write(tmp_path / "a.csv", head + "64,64,64,ours,0.95,ours,1.0,0,0.96,0.97\n"
                                          "128,64,64,torch,0.97,ours,1.0,1,0.975,0.99\n"
                                          "256,64,64,torch,0.97,ours,1.0,0,0.99,1.0\n")
    b = _write(tmp_path / "b.csv", head + "64,64,64,ours,0.96,ours,1.0,0,0.965,0.975\n"
                                          "128,64,64,torch,0.96,ours,1.0,1,0.97,0.985\n")
    got = mod.across([mod.read_floor(str(a)), mod.read_floor(str(b))])
    assert got == {"ratio": [(64, 64, 64), (128, 64, 64)], "paired": [(64, 64, 64), (128, 64, 64)],
                   "hi95": [(64, 64, 64)]}
    assert mod.main([str(a), str(b)]) == 0
    said = capsys.readouterr().out
    assert "2 by medians, 2 paired, 1 beyond noise (grids alone: 3, 2)" in said
    assert "| 128x64x64 | torch | 0.975 / 0.970 | True | False |" in said and "TN-only (in the last grid) 1" in said
    assert mod.main([str(a)]) == 2 and "two or more" in capsys.readouterr().err
    odd = _write(tmp_path / "odd.csv", "m,n,k\n64,64,64\n")
    assert mod.main([str(a), str(odd)]) == 2 and "not a bench-gemm floor.csv" in capsys.readouterr().err


def test_gemm_floor_across_reads_handed_both_from_the_grids_shapes_csv(tmp_path, capsys):
    """(session 52) given shapes.csv (bench-gemm's writer), gemm_floor_across reads any paired candidate and baseline:
    --who dispatch_both against lt_auto_max (the seed's protocol); a shape untimed in one grid is judged in none; a
    choice that differs between grids shows both; the TN-only flag only where B is read as given; a pairing the grid
    lacks, or a floor.csv asked for another reading: one line, 2."""
    from cudaopt.gemm.report import write_shape_csv

    mod = _load_script("gemm_floor_across")
    a_, b_, c_, d_ = (256, 4096, 4096), (512, 512, 512), (1024, 1024, 1024), (64, 64, 64)

    def grid(path, rows):  # {shape: (dispatch_both us, lt_auto_nn us, lt_auto_tn us, paired, hi95, label)}
        times = {n: {} for n in ("dispatch", "dispatch_both", "lt_auto_nn", "lt_auto_tn", "lt_auto_max")}
        extra = {}
        for sh, (both, nn, tn, paired, hi, label) in rows.items():
            for name, v in (("dispatch", both), ("dispatch_both", both), ("lt_auto_nn", nn), ("lt_auto_tn", tn),
                            ("lt_auto_max", min(nn, tn))):
                times[name][sh] = v
            extra[sh] = {"dispatch_both": label, "paired_dispatch_both_vs_lt_auto_max": f"{paired:.4f}",
                         "paired_hi95_dispatch_both_vs_lt_auto_max": f"{hi:.4f}",
                         "paired_dispatch_vs_lt_auto_max": f"{paired:.4f}"}
        write_shape_csv(path, times, extra)
        return str(path)

    g1 = grid(tmp_path / "g1.csv", {a_: (16.5, 16.1, 16.2, 0.974, 0.99, "nn:ours"),
                                    b_: (10.0, 9.6, 9.0, 0.95, 0.97, "nn:ours"),  # TN 10% faster: TN-only as given
                                    c_: (10.0, 9.7, 9.8, 0.97, 0.975, "nn:ours"),
                                    d_: (2.0, 1.9, 1.9, 0.95, 0.96, "nn:ours")})
    g2 = grid(tmp_path / "g2.csv", {a_: (16.6, 16.0, 16.1, 0.967, 0.99, "nn:ours"),
                                    b_: (10.0, 9.6, 9.0, 0.96, 0.975, "bt:ours_bt"),
                                    c_: (10.0, 10.0, 10.1, 0.99, 1.01, "nn:ours")})  # d_ not timed here
    got = mod.across([mod.read_any(g, "dispatch_both") for g in (g1, g2)])
    assert got == {"ratio": [a_, b_], "paired": [a_, b_], "hi95": [b_]}
    assert mod.main([g1, g2, "--who", "dispatch_both"]) == 0
    said = capsys.readouterr().out
    assert ("dispatch_both under 0.98x of cuBLASLt autotuned max in every one of 2 grids: 2 by medians, 2 paired, "
            "1 beyond noise (grids alone: 4, 2 paired, 3 shapes timed in all)") in said
    assert "| 256x4096x4096 | nn:ours | 0.974 / 0.967 | - | False |" in said
    assert "| 512x512x512 | nn:ours / bt:ours_bt | 0.950 / 0.960 | - | True |" in said
    assert "TN-only" not in said
    assert mod.main([g1, g2]) == 0 and "| 512x512x512 | dispatch | 0.950 / 0.960 | True | False |" in \
        capsys.readouterr().out  # (B as given; no hi95 of it written: never beyond noise)
    assert mod.main([g1, g2, "--who", "dispatch_both", "--vs", "torch"]) == 2
    assert "did not pair dispatch_both with torch" in capsys.readouterr().err
    floor = _write(tmp_path / "f.csv", "m,n,k,dispatch,ratio,best_nn,tn_gain,tn_only,paired_ratio,paired_hi95\n")
    assert mod.main([str(floor), g2, "--who", "dispatch_both"]) == 2
    assert "give the grid's shapes.csv" in capsys.readouterr().err


def test_gemm_aa_slots_reads_one_kernel_in_two_slots_by_l2_class(tmp_path, capsys):
    """scripts/gemm_aa_slots.py (session 52): the A/A pairs a grid row holds (dispatch / dispatch_both on an entry
    reading b, dispatch_bt / dispatch_both on one reading the copy, ours / dispatch on an entry of ours), grouped by
    how the shape's rotated inputs sit in L2, and their offsets correlated between grids; bad input: one line, 2."""
    from cudaopt.gemm.report import write_shape_csv

    mod = _load_script("gemm_aa_slots")
    assert mod.l2_class((64, 64, 64)) == "all fit"  # 8 sets of a few KB
    assert mod.l2_class((64, 16384, 64)) == "one layout fits"  # 8 sets: B + C 32 MB, with B's copy 48 MB
    assert mod.l2_class((4096, 4096, 4096)) == "neither fits"
    lines = mod.main(["shapes", "one layout fits"]) or capsys.readouterr().out.splitlines()
    assert "64 16384 64" in lines and "64 64 64" not in lines
    small, mid, big = (64, 64, 64), (64, 16384, 64), (4096, 4096, 4096)

    def grid(path, offsets):  # {shape: (t_dispatch, t_dispatch_both, label)}
        times = {n: {} for n in ("ours", "dispatch", "dispatch_bt", "dispatch_both")}
        extra = {}
        for sh, (d, both, label) in offsets.items():
            for name, v in (("ours", d), ("dispatch", d), ("dispatch_bt", d), ("dispatch_both", both)):
                times[name][sh] = v
            extra[sh] = {"dispatch_both": label, "dispatch": "wgmma", "choice": "wgmma"}
        write_shape_csv(path, times, extra)
        return str(path)

    g1 = grid(tmp_path / "g1.csv", {small: (2.0, 2.0, "nn:wgmma"), mid: (3.0, 2.7, "nn:wgmma"),
                                    big: (100.0, 101.0, "bt:wgmma_bt")})
    rows = mod.read_grid(g1)
    assert set(rows[mid]) == {"dispatch/dispatch_both", "ours/dispatch"}
    assert set(rows[big]) == {"dispatch_bt/dispatch_both", "ours/dispatch"}
    assert abs(rows[mid]["dispatch/dispatch_both"] - math.log(3.0 / 2.7)) < 1e-9
    got = mod.summarize(rows, 50e6)
    assert got["one layout fits"][0] == 2 and got["one layout fits"][3] == 1  # one pair beyond 4% (11%)
    assert got["all fit"][1] == 0.0
    many = {(64, 16384, 64 * i): (3.0, 3.0 - 0.1 * i, "nn:wgmma") for i in (1, 2, 3)}
    g2 = grid(tmp_path / "g2.csv", many)
    g3 = grid(tmp_path / "g3.csv", {s: (t + 0.05, b + 0.05, lab) for s, (t, b, lab) in many.items()})
    corr = mod.correlation(mod.read_grid(g2), mod.read_grid(g3), 1e12)  # (an L2 that holds them all: one class)
    assert corr["all fit"][0] == 6 and corr["all fit"][1] > 0.99  # the same slot lucky in both grids
    assert math.isnan(mod.correlation(mod.read_grid(g2), mod.read_grid(g1), 1e12)["all fit"][1])  # (2 pairs in both: too few)
    assert mod.main(["read", g2, g3]) == 0 and "correlation" in capsys.readouterr().out
    assert mod.main(["read", str(_write(tmp_path / "x.csv", "a,b\n1,2\n"))]) == 2
    assert "not a bench-gemm shapes.csv" in capsys.readouterr().err


# --- B handed in both layouts (session 49: the seed's protocol) -----------------------------------------------------

def _both_grid(path, rows):
    """A B^T grid's shapes.csv from {shape: (dispatch us, dispatch_bt us, NN label, B^T route label, paired
    t_dispatch / t_dispatch_bt or None)}, through the real writer."""
    from cudaopt.gemm.grid_choice import load_grid
    from cudaopt.gemm.report import write_shape_csv

    times = {n: {} for n in ("ours", "torch", "dispatch", "dispatch_bt", "torch_bt", "lt_auto_tn")}
    extra = {}
    for sh, (d, dbt, nn, route, paired) in rows.items():
        for name, v in (("ours", d), ("torch", 20.0), ("dispatch", d), ("dispatch_bt", dbt), ("torch_bt", 20.0),
                        ("lt_auto_tn", 8.0)):  # (cuBLASLt autotuned TN: algorithm 4, faster than every route)
            times[name][sh] = v
        extra[sh] = {"dispatch": nn, "choice": nn, "correct": True, "dispatch_bt": route, "lt_auto_tn_algo": 4,
                     **({"paired_dispatch_bt_vs_dispatch": f"{paired:.4f}"} if paired else {})}
    write_shape_csv(path, times, extra)
    return load_grid(path)


def test_both_layouts_route_moves_where_every_grid_reads_the_bt_route_faster(tmp_path):
    from cudaopt.gemm.configs import Choice
    from cudaopt.gemm.dispatch import choose, parse_table
    from cudaopt.gemm.grid_choice import GridError, rechoose_both

    ours = Choice("ours", 20, 1).label()
    a, b, c, d, e = [(64, 64, 64 * i) for i in range(1, 6)]
    entries = [{"m": 64, "n": 64, "k": 64 * i, "backend": "ours", "config": 20} for i in range(1, 6)]
    entries[2]["both_layouts"] = "bt"  # c: the NN route faster in both grids: back to "nn"
    g1 = {a: (10.0, 9.0, ours, ours + "_bt", None),  # a: B^T 11% faster in both: to "bt"
          b: (10.0, 9.0, ours, ours + "_bt", None),  # b: faster in one grid only: stays
          c: (9.0, 10.0, ours, ours + "_bt", None),
          d: (10.0, 9.0, "fallback:torch", "fallback:torch", None),  # d: a grid of another NN choice: not read
          e: (10.0, 9.0, ours, "fallback:cublaslt_tn_algo2", None)}  # e: a grid of another B^T route: not read
    g2 = {**g1, b: (10.0, 10.5, ours, ours + "_bt", None)}
    grids = [_both_grid(tmp_path / "g1.csv", g1), _both_grid(tmp_path / "g2.csv", g2)]
    new, moves = rechoose_both(entries, grids, margin=1.01)
    assert [(m.shape, m.was, m.to) for m in moves] == [(a, "nn", "bt"), (c, "bt", "nn")]
    by = {(x["m"], x["n"], x["k"]): x for x in new}
    assert by[a]["both_layouts"] == "bt" and by[a]["both_grid_choice"]["ratios"] == [1.1111, 1.1111]
    assert "both_layouts" not in by[c] and by[c]["both_grid_choice"]["to"] == "nn"
    assert by[b] == entries[1] and by[d] == entries[3] and by[e] == entries[4]
    table = parse_table({"entries": new})
    assert table[a].both_bt and not table[b].both_bt and table[a].label() == ours  # the NN choice as it was
    assert not choose(64, 64, 96, table).both_bt  # measured on its own shape only: a neighbour does not lend it
    # an entry whose B^T route moved to the TN algorithm the grids timed (--bt first, from the same grids): that
    # route is read from the grids' cuBLASLt TN column (8 us against the NN choice's 10), so it reads the copy
    e_moved = {**entries[4], "bt_lt_algo": 4}
    assert [(m.shape, m.to, m.ratios) for m in rechoose_both([e_moved], grids, margin=1.01)[1]] == [(e, "bt", (1.25, 1.25))]
    assert rechoose_both([{**entries[4], "bt_lt_algo": 5}], grids, margin=1.01)[1] == []  # an algorithm not timed
    # each grid left out: a (both grids agree) moves from either; b (one grid) from g1 only: read on the other
    from cudaopt.gemm.grid_choice import held_out

    assert [n for n, _ in held_out(entries, grids, 1.01, both=True)] == [2, 3]
    # paired: the within-round column decides where the grid has it (the medians say 11%, the rounds 0.5%)
    g = {a: (10.0, 9.0, ours, ours + "_bt", 1.005)}
    one = [_both_grid(tmp_path / "p.csv", g)]
    assert rechoose_both(entries[:1], one, margin=1.01)[1] != [] and rechoose_both(entries[:1], one, 1.01, True)[1] == []
    with pytest.raises(GridError, match="CUDAOPT_GEMM_BENCH_BT=1"):  # a grid without the B^T route
        rechoose_both(entries, [load_grid_nn(tmp_path, ours)])
    with pytest.raises(GridError, match="margin"):
        rechoose_both(entries, grids, margin=0.99)
    with pytest.raises(ValueError, match="both_layouts"):
        parse_table({"entries": [{**entries[0], "both_layouts": "tn"}]})


def load_grid_nn(tmp_path, label):
    from cudaopt.gemm.grid_choice import load_grid

    return load_grid(_grid_csv(tmp_path / "nn.csv", {(64, 64, 64): (9.0, 10.0, 10.0, label, label, True)}))


def test_table_from_grids_both_writes_the_routes_and_refuses_bt_with_it(tmp_path):
    import json

    from typer.testing import CliRunner

    from cudaopt.cli import app
    from cudaopt.gemm.configs import Choice

    ours = Choice("ours", 20, 1).label()
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"device": "NVIDIA H200", "entries": [
        {"m": 64, "n": 64, "k": 64, "backend": "ours", "config": 20}]}))
    grids = [_both_grid(tmp_path / f"g{i}.csv", {(64, 64, 64): (10.0, 9.0, ours, ours + "_bt", None)}) and
             str(tmp_path / f"g{i}.csv") for i in (1, 2)]
    out = tmp_path / "new.json"
    args = ["gemm-table-from-grids", "--table", str(table), "--grid", grids[0], "--grid", grids[1], "--out", str(out)]
    r = CliRunner().invoke(app, args + ["--both"])
    assert r.exit_code == 0, r.output
    assert "1 to the B^T route" in " ".join(r.output.split())
    assert json.loads(out.read_text())["entries"][0]["both_layouts"] == "bt"
    r = CliRunner().invoke(app, args + ["--both", "--bt"])
    assert r.exit_code == 2 and "--bt and --both" in r.output


def test_hgemm_checks_the_column_major_copy_is_the_same_b():
    import torch

    from cudaopt.gemm import _check_both

    b = torch.zeros(64, 32, dtype=torch.float16)
    _check_both(b, b.t().contiguous().t())  # the same matrix stored column-major: fine
    with pytest.raises(ValueError, match="b_col_major must be the same K x N matrix"):
        _check_both(b, b.t().contiguous())  # N x K: the transpose itself, not a view of it
    with pytest.raises(ValueError, match="float32"):
        _check_both(b, b.float())


def test_bench_reads_both_layouts_and_new_comparisons_from_logged_rounds(tmp_path, no_gpu):
    """(session 49) dispatch_both is summarised against the baselines and gets its own floor table; a log written
    before a comparison existed yields it from the per-round times it keeps."""
    def fake(index, shape, env):
        t = {"ours": 2.0, "torch": 2.5, "dispatch": 2.0, "dispatch_bt": 1.9, "dispatch_both": 1.9,
             "lt_auto_nn": 2.0, "lt_auto_tn": 1.9}
        per_round = {name: [v] * 5 for name, v in t.items()}
        return t, {"correct": True, "dispatch_both": "bt:x", "both_correct": index != 0}, per_round

    no_gpu.setattr(bench, "_bench_shape", fake)
    res = bench.run_bench(SHAPES5[:2], out_dir=tmp_path, log=lambda s: None)
    assert any(s.baseline == "dispatch_both vs lt_auto_max" for s in res.summaries)
    assert res.paired["dispatch_bt vs dispatch"] == {s: pytest.approx(2.0 / 1.9) for s in SHAPES5[:2]}
    # a log line without the newer comparisons: read again from its rounds
    log = tmp_path / bench.SHAPE_LOG
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    for rec in recs:
        rec["paired"] = {k: v for k, v in rec["paired"].items() if "both" not in k and k != "dispatch_bt vs dispatch"}
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    again = bench.result_from_records(bench.load_log(log))
    assert again.paired["dispatch_both vs lt_auto_max"] == {s: pytest.approx(1.0) for s in SHAPES5[:2]}
    bench.write_outputs(again, tmp_path, "t")
    md = (tmp_path / "summary.md").read_text()
    assert "### B handed in both layouts (the seed's protocol)" in md
    assert "| lt_auto_max | 2 | 0 | 0 |" in md  # (1.9 against 1.9: no shape under the floor)
    assert "handed both layouts, reading the column-major copy: 1/2 correct" in md


def test_bt_switch_is_read_per_call_like_os_environ(monkeypatch):
    """(session 51) _bt_on reads CUDAOPT_GEMM_BT through os.environ's own dict (one lookup, not os.environ.get's
    1.6 us): every way of setting, changing and removing it through os.environ is seen on the next call, as before."""
    import os

    import cudaopt.gemm as g

    monkeypatch.delenv("CUDAOPT_GEMM_BT", raising=False)
    assert g._bt_on()
    monkeypatch.setenv("CUDAOPT_GEMM_BT", "0")
    assert not g._bt_on()
    os.environ.update({"CUDAOPT_GEMM_BT": "1"})
    assert g._bt_on()
    os.environ["CUDAOPT_GEMM_BT"] = "0"
    assert not g._bt_on()
    assert os.environ.pop("CUDAOPT_GEMM_BT") == "0" and g._bt_on()
    os.environ.setdefault("CUDAOPT_GEMM_BT", "0")
    assert not g._bt_on() and (os.environ.get("CUDAOPT_GEMM_BT", "1") != "0") == g._bt_on()
