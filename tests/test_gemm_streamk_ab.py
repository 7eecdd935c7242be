"""benchmarks/gemm_streamk_ab.py's shape selection and shape files (the timing itself runs on the device:
gpu_check.sh gemm_streamk, gemm_streamk_floor)."""
import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def ab():
    sys.path.insert(0, str(BENCH))  # (the script imports gemm_wave_probe beside it)
    try:
        spec = importlib.util.spec_from_file_location("gemm_streamk_ab", BENCH / "gemm_streamk_ab.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.path.remove(str(BENCH))


def test_candidates_are_our_unsplit_twin_configs_with_a_tail_to_split(ab):
    from cudaopt.gemm.configs import KERNEL_CONFIGS
    from cudaopt.gemm.dispatch import Choice

    c18 = KERNEL_CONFIGS[18]  # 128 x 256
    table = {
        (3200, 8192, 4096): Choice("ours", 18, 1),  # 800 tiles: 8 tail tiles, split 8 ways
        (4096, 8192, 4096): Choice("ours", 18, 1),  # 1024 tiles: 100 tail tiles, not split
        (4224, 8192, 4096): Choice("ours", 18, 1),  # 1056 tiles: whole waves
        (3201, 8192, 4096): Choice("ours", 18, 2),  # split-K: not the twin's
        (3328, 8192, 4096): Choice("torch", None, 1),  # a fallback
        (128, 8192, 64): Choice("ours", 18, 1),  # under min_flop
    }
    assert c18.tiles(3200, 8192) == 800
    got = ab.candidates(table, 132, 1e9, lambda cid: cid == 18, 8)
    assert [shape for shape, _ in got] == [(3200, 8192, 4096)]
    assert ab.candidates(table, 132, 1e9, lambda cid: False, 8) == []


def test_shape_files_read_the_floor_csv_columns(ab, tmp_path):
    floor = Path(__file__).resolve().parents[1] / "docs/data/hgemm_session45/h200_grid/floor.csv"
    shapes = ab._read_shapes(str(floor))
    assert len(shapes) == 37 and shapes[0] == (8192, 4096, 4096)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(KeyError):
        ab._read_shapes(str(bad))
