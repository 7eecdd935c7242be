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


def test_propose_moves_each_shape_whose_best_config_beat_the_dispatcher(ab, tmp_path, capsys):
    """--propose (no GPU): a --shapes run read back into a candidate table: a shape whose best of ours read under
    --under of the dispatcher moves to that config (its stream-K twin where "s<id>" won), keeping the B^T route's
    algorithm; a shape at 0.99, or whose best was wrong, stays; bad input is one line and exit 2."""
    import json

    from cudaopt.gemm.dispatch import parse_table

    e = lambda m, **kw: {"m": m, "n": 8192, "k": 4096, "backend": "torch", "config": 0, "splits": 1, **kw}  # noqa: E731
    table = {"device": "X", "entries": [e(1024, bt_lt_algo=2), e(2048), e(3072), e(4096)]}
    rows = [{"m": 1024, "n": 8192, "k": 4096, "best": "p25", "best_vs_dispatch_paired": 0.95, "wrong": []},
            {"m": 2048, "n": 8192, "k": 4096, "best": "s18", "best_vs_dispatch_paired": 0.97, "wrong": []},
            {"m": 3072, "n": 8192, "k": 4096, "best": "p25", "best_vs_dispatch_paired": 0.99, "wrong": []},
            {"m": 4096, "n": 8192, "k": 4096, "best": "p26", "best_vs_dispatch_paired": 0.90, "wrong": ["p26"]}]
    entries, said = ab.propose(rows, table, 0.98)
    got = parse_table({"entries": entries})
    assert got[(1024, 8192, 4096)].label() == "wgmma128x256x64_c2_s4_tma_e2" and got[(1024, 8192, 4096)].bt_algo == 2
    assert got[(2048, 8192, 4096)].streamk and got[(2048, 8192, 4096)].config == 18
    assert entries[2:] == table["entries"][2:] and len(said) == 2 and said[0].startswith("1024x8192x4096: fallback:torch")
    (tmp_path / "t.json").write_text(json.dumps(table))
    (tmp_path / "run.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    args = ["--propose", str(tmp_path / "run.jsonl"), "--table", str(tmp_path / "t.json")]
    assert ab.main(args + ["--write", str(tmp_path / "cand.json")]) == 0
    assert "2 shapes moved" in capsys.readouterr().out
    assert parse_table(json.loads((tmp_path / "cand.json").read_text()))[(2048, 8192, 4096)].streamk
    assert ab.main(args) == 2 and "needs --table" in capsys.readouterr().err
    (tmp_path / "odd.jsonl").write_text("{not json\n")
    assert ab.main(["--propose", str(tmp_path / "odd.jsonl"), "--table", str(tmp_path / "t.json"), "--write",
                    str(tmp_path / "c2.json")]) == 2
    assert capsys.readouterr().err.startswith("gemm_streamk_ab: --propose:") and not (tmp_path / "c2.json").exists()
