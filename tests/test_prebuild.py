"""Building candidates' extensions ahead of their evaluations: side by side, sandboxed for a model's code,
and into the cache the evaluator then reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaopt.evaluate import EvalOptions, evaluate
from cudaopt.evaluate.prebuild import build_ahead, is_built, prebuild
from cudaopt.tasks.loader import load_task

REDTEAM = Path(__file__).parent / "redteam"
TASK = REDTEAM / "tasks" / "scale_shift.py"
CPP = (REDTEAM / "honest" / "scale_shift_cpu_cpp_extension.py").read_text()


def test_a_sandboxed_build_refuses_what_the_worker_refuses(tmp_path):
    # The source only names load_inline (so it counts as a build); importing it tries to write outside.
    outside = tmp_path / "outside.txt"
    src = f"# load_inline\nopen({str(outside)!r}, 'w').write('x')\n"
    [out] = prebuild([src], cache_dir=str(tmp_path / "cache"), sandboxed=True, timeout_s=120)
    assert not out.ok and "sandbox" in out.message and not outside.exists()
    # unsandboxed (the corpus' own, trusted sources) the same import runs
    [out] = prebuild([src], cache_dir=str(tmp_path / "cache"), timeout_s=120)
    assert out.ok and outside.exists()


def test_a_build_that_outlasts_its_timeout_is_ended(tmp_path):
    [out] = prebuild(["# load_inline\nimport time\ntime.sleep(60)\n"], cache_dir=str(tmp_path), timeout_s=2)
    assert not out.ok and "did not finish within 2 s" in out.message and out.seconds < 30


def test_build_ahead_leaves_rejected_single_and_plain_sources_to_the_evaluator(tmp_path):
    rejected = CPP + "\nimport subprocess\nsubprocess.run(['true'])\n"  # the static guards reject it
    plain = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    # left: one source that needs a build, which gains nothing from building ahead
    assert build_ahead([CPP, rejected, plain], device="cpu", cache_dir=str(tmp_path)) == []
    assert not is_built(CPP, str(tmp_path))


@pytest.mark.slow
def test_built_ahead_side_by_side_then_evaluated_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAOPT_CACHE", str(tmp_path / "cache"))  # the evaluator's processes read it too
    other = CPP.replace("redteam_honest_cpp_scale_shift", "prebuild_test_scale_shift").replace('"-O3"', '"-O2"')
    outcomes = build_ahead([CPP, other], device="cpu")
    assert len(outcomes) == 2 and all(o.ok for o in outcomes), outcomes
    task = load_task(TASK)
    for source in (CPP, other):
        assert is_built(source)
        r = evaluate(task, source, EvalOptions(device="cpu", size="small", trials=3, timing=False, verify=False))
        assert r.correct and r.compile_cached, (r.status, r.message)
    # built already: nothing to do the second time
    assert build_ahead([CPP, other], device="cpu") == []
