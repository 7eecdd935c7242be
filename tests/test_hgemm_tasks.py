"""HGEMM task family: generated references, CUDA-L2's eq. 3 reward (hand-computed), the curriculum."""

from __future__ import annotations

import math

import pytest
import torch

from cudaopt.evaluate.result import EvalResult, Timing
from cudaopt.tasks.hgemm import (
    HGEMM_SMALL,
    code_length,
    curriculum,
    hgemm_reward,
    hgemm_reward_from_result,
    hgemm_task,
    hgemm_tasks,
)
from cudaopt.tasks.loader import (
    Task,
    apply_size,
    check_reference,
    identity_candidate,
    import_source,
)


def test_task_imports_and_matches_fp32_within_tolerance():
    task = hgemm_task(256, 512, 128)
    assert task.name == "hgemm_256x512x128" and task.level == 1
    mod = import_source(task.source, "hgemm_ref_test", "<hgemm>")
    check_reference(mod, "<hgemm>")
    assert (mod.M, mod.N, mod.K) == (256, 512, 128)
    apply_size(mod, "small")
    torch.manual_seed(0)
    a, b = mod.get_inputs()
    assert a.dtype == b.dtype == torch.float16
    assert tuple(a.shape) == (HGEMM_SMALL["M"], HGEMM_SMALL["K"]) and tuple(b.shape) == (HGEMM_SMALL["K"], HGEMM_SMALL["N"])
    out = mod.Model(*mod.get_init_inputs())(a, b)
    assert out.dtype == torch.float16 and tuple(out.shape) == (HGEMM_SMALL["M"], HGEMM_SMALL["N"])
    ref = a.float() @ b.float()
    # The evaluator's rule: |c - r| <= atol * rms(r) + rtol * |r|.
    tol = mod.TOLERANCE
    bound = tol["atol"] * ref.pow(2).mean().sqrt() + tol["rtol"] * ref.abs()
    assert bool(((out.float() - ref).abs() <= bound).all())
    # An fp16 rounding of the output is all that separates it from fp32 (fp32 accumulation).
    assert float((out.float() - ref).abs().max()) <= float(ref.abs().max()) * 2 ** -11 + 1e-6


def test_identity_candidate_of_generated_task_is_the_reference():
    task = hgemm_task(64, 64, 64)
    cand = import_source(identity_candidate(task), "hgemm_aa_test", "<aa>")
    a = torch.ones(4, 3, dtype=torch.float16)
    b = torch.ones(3, 2, dtype=torch.float16)
    assert torch.equal(cand.ModelNew()(a, b), torch.full((4, 2), 3.0, dtype=torch.float16))


def test_tasks_from_list_grid_and_spec():
    tasks = hgemm_tasks([(64, 128, 256), (64, 128, 256), (128, 64, 64)])
    assert [t.name for t in tasks] == ["hgemm_64x128x256", "hgemm_128x64x64"]  # duplicates dropped
    assert len(hgemm_tasks("grid")) == 1000
    assert [t.name for t in hgemm_tasks("64x64x64,128x256x512")] == ["hgemm_64x64x64", "hgemm_128x256x512"]
    assert len({t.digest for t in hgemm_tasks("sample:12")}) == 12
    with pytest.raises(ValueError):
        hgemm_task(0, 64, 64)
    with pytest.raises(ValueError):
        hgemm_tasks([])


def test_reward_hand_computed():
    # Iteration 1: 10/5 - 2*0.01 = 1.98; iteration 2: 12/4 - 2*0.03 = 2.94; mean 2.46; minus 0.001*100.
    r = hgemm_reward(ref_times=[10.0, 12.0], custom_times=[5.0, 4.0], diffs=[0.01, 0.03], code_length=100, alpha=2.0, beta=0.001)
    assert r == pytest.approx(2.46 - 0.1)
    # Penalties off: the mean of the ratios (not the ratio of the means: 22/9).
    r0 = hgemm_reward(ref_times=[10.0, 12.0], custom_times=[5.0, 4.0], diffs=[0.5, 0.5], code_length=10, alpha=0.0, beta=0.0)
    assert r0 == pytest.approx(2.5)
    # A slower, exact kernel: 1/2 - 0 - 0.5*1.
    assert hgemm_reward(ref_times=[1.0], custom_times=[2.0], diffs=[0.0], code_length=1, alpha=1.0, beta=0.5) == pytest.approx(0.0)


@pytest.mark.parametrize("kw, msg", [
    ({"ref_times": [], "custom_times": [], "diffs": []}, "at least one"),
    ({"ref_times": [1.0], "custom_times": [1.0, 2.0], "diffs": [0.0]}, "one entry per iteration"),
    ({"ref_times": [1.0], "custom_times": [0.0], "diffs": [0.0]}, "positive"),
    ({"ref_times": [1.0], "custom_times": [1.0], "diffs": [math.nan]}, "failure reward"),
])
def test_reward_rejects_bad_input(kw, msg):
    with pytest.raises(ValueError, match=msg):
        hgemm_reward(code_length=1, alpha=1.0, beta=1.0, **kw)
    with pytest.raises(ValueError, match="penalty"):
        hgemm_reward(ref_times=[1.0], custom_times=[1.0], diffs=[0.0], code_length=1, alpha=-1.0, beta=1.0)


def test_code_length_units():
    src = "a = 1  \n\n   \nbb = 22\n"
    assert code_length(src) == 2
    assert code_length(src, unit="chars") == len("a = 1") + len("bb = 22")
    with pytest.raises(ValueError):
        code_length(src, unit="tokens")


def _timing(ref_us: float, cand_us: float) -> Timing:
    return Timing(speedup_raw=ref_us / cand_us, speedup=round(ref_us / cand_us, 2), ci_low=1.0, ci_high=1.0,
                  bucket_means=(1.0,) * 7, bucket_variance=0.0, stable=True, rounds=70, ref_time_us=ref_us,
                  cand_time_us=cand_us, seconds=1.0)


def test_reward_from_result_uses_median_times_and_max_error():
    src = "line one\nline two\n\nline three\n"
    ok = EvalResult(status="ok", stage_reached="timed", correct=True, max_abs_error=0.25, timing=_timing(300.0, 100.0))
    # 300/100 - 0.4*0.25 - 0.01*3 lines
    assert hgemm_reward_from_result(ok, source=src, alpha=0.4, beta=0.01) == pytest.approx(3.0 - 0.1 - 0.03)
    # Round trip through the stored JSON gives the same reward.
    again = EvalResult.from_dict(ok.to_dict())
    assert hgemm_reward_from_result(again, source=src, alpha=0.4, beta=0.01) == pytest.approx(2.87)
    bad = EvalResult(status="incorrect", stage_reached="correct", max_abs_error=3.0)
    assert hgemm_reward_from_result(bad, source=src, alpha=0.4, beta=0.01) is None


def test_curriculum_general_first_then_hgemm_only():
    general = [Task("softmax", 1, "x = 1\n"), Task("gelu", 1, "y = 2\n")]
    hg = hgemm_tasks([(64, 64, 64), (128, 128, 128)])
    cur = curriculum(general, hg, switch_after=3)
    assert [t.name for t in cur(0)] == ["softmax", "gelu"]
    assert cur(2) == general and cur.phase(2) == "general"
    assert cur(3) == hg and cur(1000) == hg and cur.phase(3) == "hgemm"
    assert curriculum([], hg, switch_after=0)(0) == hg
    with pytest.raises(ValueError):
        curriculum([], hg, switch_after=2)
    with pytest.raises(ValueError):
        curriculum(general, [], switch_after=2)
    with pytest.raises(ValueError):
        cur(-1)


def test_evaluator_accepts_the_reference_as_candidate():
    """End to end through the evaluator (CPU, SMALL size, correctness only): the A/A candidate is exact."""
    from cudaopt.evaluate import EvalOptions, evaluate

    task = hgemm_task(128, 64, 256)
    result = evaluate(task, identity_candidate(task), options=EvalOptions(size="small", trials=3, timing=False))
    assert result.status == "ok" and result.correct and result.max_abs_error == 0.0


def test_tolerance_rejects_a_five_percent_error():
    mod = import_source(hgemm_task(64, 64, 64).source, "hgemm_tol_test", "<hgemm>")
    apply_size(mod, "small")
    torch.manual_seed(1)
    a, b = mod.get_inputs()
    ref = a.float() @ b.float()
    bad = (ref * 1.05).half().float()
    bound = mod.TOLERANCE["atol"] * ref.pow(2).mean().sqrt() + mod.TOLERANCE["rtol"] * ref.abs()
    assert not bool(((bad - ref).abs() <= bound).all())
