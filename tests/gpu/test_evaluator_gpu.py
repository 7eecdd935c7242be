"""The evaluator's GPU-only paths, on a GPU: the compiled and graph-replay baselines, and the profiler
kernel check on honest candidates (own kernels seen, nothing flagged on another stream). Skipped,
visibly, where there is no GPU."""

from __future__ import annotations

import pytest

from cudaopt.evaluate import EvalOptions, evaluate
from cudaopt.tasks.loader import CORPUS_DIR, SUITE_DIR, identity_candidate, load_task

SOFTMAX = SUITE_DIR / "level1" / "softmax_rows.py"
OPTS = dict(device="cuda", size="small", trials=5, budget_s=0.5, verify=False)


@pytest.mark.gpu
@pytest.mark.parametrize("baseline", ["eager", "compile", "compile-reduce-overhead", "cuda-graph"])
def test_every_baseline_times_an_a_a_candidate(baseline):
    r = evaluate(SOFTMAX, identity_candidate(load_task(SOFTMAX)), EvalOptions(**OPTS, baseline=baseline))
    assert r.status == "ok", f"{r.message} {r.error[-2000:]}"
    assert r.baseline == baseline and r.timing is not None and r.timing.speedup_raw > 0
    # the A/A candidate is plain PyTorch: the static no_custom_kernel note is expected, nothing else is
    assert [f.category for f in r.findings if f.category != "no_custom_kernel"] == [], r.findings


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fast_row_cached", "honest_block_per_row"])
def test_kernel_check_on_honest_candidates_finds_nothing(name):
    cand = (CORPUS_DIR / "softmax_rows" / f"{name}.py").read_text()
    r = evaluate(SOFTMAX, cand, EvalOptions(**OPTS, kernel_check="always"))
    assert r.status == "ok", f"{r.message} {r.error[-2000:]}"
    assert r.kernels, "the profiler saw no kernels"
    assert not r.findings, r.findings  # no side_stream, no_custom_kernel or exception_fallback


@pytest.mark.gpu
def test_head_start_option_times_on_the_gpu():
    r = evaluate(SOFTMAX, identity_candidate(load_task(SOFTMAX)), EvalOptions(**OPTS, head_start_us=200))
    assert r.status == "ok", f"{r.message} {r.error[-2000:]}"
    assert r.timing is not None and r.timing.ref_time_us > 0 and r.timing.cand_time_us > 0
