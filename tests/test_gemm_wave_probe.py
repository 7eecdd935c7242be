"""benchmarks/gemm_wave_probe.py's sweep and fit (the GPU timing itself runs on the device: gpu_check.sh gemm_wave_probe)."""
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gemm_wave_probe.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("gemm_wave_probe", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sweep_walks_whole_tile_rows_across_the_wave_boundaries(probe):
    n, ms = probe.sweep(128, 256, 8192, (6.5, 8.5), 132)
    assert n == 8192 and all(m % 128 == 0 for m in ms)
    tiles = [(m // 128) * 32 for m in ms]
    assert tiles == list(range(864, 1121, 32))  # 6.55 .. 8.48 waves, 1024 (7.76) and 1056 (8.00) among them
    n, ms = probe.sweep(128, 192, 8192, (6.5, 8.5), 132)
    assert n == 8256 and all(6.5 * 132 <= (m // 128) * 43 <= 8.5 * 132 for m in ms)


def test_quantized_share_reads_one_when_a_partial_wave_costs_a_whole_one(probe):
    tiles = list(range(760, 1130, 30))
    whole = [50.0 + 40.0 * math.ceil(t / 132) for t in tiles]  # time by the wave count alone
    fit = probe.quantized_share(tiles, whole, 132)
    assert fit["q"] == pytest.approx(1.0, abs=1e-6) and fit["rms"] < 1e-6
    prop = [50.0 + 0.3 * t for t in tiles]  # time by the tile count alone
    assert probe.quantized_share(tiles, prop, 132)["q"] == pytest.approx(0.0, abs=1e-6)
    half = [50.0 + 0.15 * t + 20.0 * math.ceil(t / 132) for t in tiles]  # b * slots = 19.8, c = 20
    assert probe.quantized_share(tiles, half, 132)["q"] == pytest.approx(20.0 / 39.8, abs=1e-6)


def test_quantized_share_says_none_when_the_sweep_cannot_tell(probe):
    # every point inside one wave count: the wave term is not separable from the intercept
    assert probe.quantized_share([900, 910, 920, 922], [1.0, 2.0, 3.0, 4.0], 132)["q"] is None
    assert probe.quantized_share([800, 1000], [1.0, 2.0], 132)["q"] is None  # too few points
    nan = float("nan")
    assert probe.quantized_share([700, 800, 900, 1000, 1100], [nan] * 5, 132)["q"] is None


@pytest.mark.parametrize("args, says", [(["--configs", "3"], "not one-CTA wgmma configs"),
                                        (["--waves", "5:2"], "want LO:HI"),
                                        (["--k", "100"], "multiples of 8")])
def test_bad_arguments_get_one_line_and_exit_2(args, says):
    p = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and says in p.stderr and len(p.stderr.strip().splitlines()) == 1
