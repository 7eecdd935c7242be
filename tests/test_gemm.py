"""CPU tests of the HGEMM package: shape grid, statistics, reports, dispatcher, checks."""

import json
import math

import numpy as np
import pytest

from cudaopt.gemm import dispatch
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


def test_parse_shapes(tmp_path):
    assert parse_shapes("64x128x256,8x8x8") == [(64, 128, 256), (8, 8, 8)]
    f = tmp_path / "s.txt"
    f.write_text("# comment\n64 64 64\n128,256,512\n")
    assert parse_shapes(str(f)) == [(64, 64, 64), (128, 256, 512)]
    assert len(parse_shapes("grid")) == 1000
    with pytest.raises(ValueError):
        parse_shapes("nonsense")


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
    far = dispatch.choose(16384, 64, 16384, table)
    assert far == dispatch.heuristic_choice(16384, 64, 16384) and far.backend == "ours"
    assert dispatch.load_table(str(tmp_path / "missing.json")) == {}


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


def test_shipped_table_parses():
    table = dispatch.load_table(None)
    for c in table.values():
        assert c.backend in ("ours", "torch") and 0 <= c.config < len(KERNEL_CONFIGS)


def test_python_mirror_matches_the_cuda_source():
    import re
    from pathlib import Path

    import cudaopt.gemm as g

    src = (Path(g.__file__).parent / "csrc" / "hgemm_mma.cu").read_text()
    rows = [tuple(int(v) for v in m) for m in re.findall(r"CUDAOPT_CFG\((\d+), (\d+), (\d+), (\d+), (\d+), (\d+)\)", src)]
    assert rows == [(c.bm, c.bn, c.bk, c.warps_m, c.warps_n, c.stages) for c in KERNEL_CONFIGS if c.kind == "mma"]
