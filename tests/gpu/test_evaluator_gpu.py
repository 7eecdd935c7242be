"""The evaluator's GPU-only paths, on a GPU: the compiled and graph-replay baselines, and the profiler
kernel check on honest candidates (own kernels seen, nothing flagged on another stream). Skipped,
visibly, where there is no GPU."""

from __future__ import annotations

from pathlib import Path

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


# The kernel check run by the helper process (EvalOptions.kernel_check_helper) must see what the worker's
# own check sees: the honest candidate's kernels and nothing flagged; a decoy's unused kernel and a side
# stream's work. Timing waits for the helper here, so the helper (not the fallback) is what is tested.
HELPER = dict(kernel_check="always", kernel_check_helper=True, kernel_check_helper_wait_s=120)
REDTEAM = Path(__file__).resolve().parents[1] / "redteam"


@pytest.mark.gpu
def test_helper_kernel_check_on_an_honest_candidate():
    cand = (CORPUS_DIR / "softmax_rows" / "fast_row_cached.py").read_text()
    r = evaluate(SOFTMAX, cand, EvalOptions(**OPTS, **HELPER))
    assert r.status == "ok", f"{r.message} {r.error[-2000:]}"
    assert any(n.startswith("kernel check helper: profiler started") for n in r.notes), r.notes
    assert r.kernels and not r.findings, (r.kernels, r.findings)
    assert "kernel_check_profiler" in r.guard_parts


@pytest.mark.gpu
@pytest.mark.parametrize("attack,category", [("no_custom_kernel_cuda_decoy.py", "no_custom_kernel"),
                                             ("side_stream_cuda_token_paste_stream.py", "side_stream")])
def test_helper_kernel_check_catches_what_the_worker_catches(attack, category):
    # dynamic-only attacks (the static layer does not flag them), options as the red-team suite's
    src = (REDTEAM / "attacks" / attack).read_text()
    task = src.splitlines()[0].split("task=")[1].split()[0]
    r = evaluate(REDTEAM / "tasks" / f"{task}.py", src, EvalOptions(device="cuda", size="small", trials=8, budget_s=2,
                                                                    min_rounds=14, verify=False, **HELPER))
    assert category in {f.category for f in r.findings}, (r.status, r.message, r.findings, r.notes)


@pytest.mark.gpu
def test_poisoning_stops_growing_the_cache_and_poisons_the_next_output():
    """Session 8 found each correctness trial's poisoning cudaMalloc'ing a new segment (small outputs):
    after the first calls the reserved memory must stay put, and a fresh output-sized tensor is NaN."""
    import torch

    from cudaopt.evaluate.child import _Worker

    w = object.__new__(_Worker)  # the poisoning state alone, without a candidate, pipe or process
    w.device, w.send, w.poison_note_sent, w.poison_memset = torch.device("cuda"), lambda *a: None, False, None
    keep = torch.ones(1000, device="cuda")  # a live small tensor in the pool, as parameters are
    out_bytes = 16 * 1024
    for _ in range(5):
        w.poison([out_bytes])
    reserved = torch.cuda.memory_reserved()
    for _ in range(50):
        w.poison([out_bytes])
        out = torch.empty(out_bytes // 4, device="cuda")
        assert torch.isnan(out).all(), "an output-sized allocation after poisoning was not poisoned"
        del out
    assert torch.cuda.memory_reserved() == reserved and keep.sum().item() == 1000


@pytest.mark.gpu
def test_context_settings_reader_sees_each_change():
    """The reader of the CUDA context's device-wide settings reads all three on this GPU, and sees each one a
    candidate's native code could change (set here through the driver, then put back)."""
    import ctypes

    import torch

    from cudaopt.evaluate.child import _context_settings, _cuda_driver

    dev = torch.device("cuda")
    before = _context_settings(dev)
    assert set(before) == {"cache_config", "sched_flags", "l2_fetch_granularity"}, before
    lib = _cuda_driver()
    word = ctypes.c_uint(0)
    assert lib.cuCtxGetFlags(ctypes.byref(word)) == 0
    others = word.value & ~0x07  # the flag bits that are not the scheduling mode, kept as they are
    setters = {
        "cache_config": (lambda v: lib.cuCtxSetCacheConfig(v), 1 if before["cache_config"] != 1 else 2),
        # cuCtxSetFlags takes the whole flag word; only its scheduling bits are changed here
        "sched_flags": (lambda v: lib.cuCtxSetFlags(ctypes.c_uint(others | v)), 4 if before["sched_flags"] != 4 else 1),
        "l2_fetch_granularity": (lambda v: lib.cuCtxSetLimit(5, ctypes.c_size_t(v)),
                                 32 if before["l2_fetch_granularity"] != 32 else 64),
    }
    for name, (set_to, value) in setters.items():
        assert set_to(value) == 0, f"the driver refused to set {name}"
        try:
            now = _context_settings(dev)
            assert now[name] == value and {k: v for k, v in now.items() if k != name} == {
                k: v for k, v in before.items() if k != name}, (name, before, now)
        finally:
            assert set_to(before[name]) == 0
    assert _context_settings(dev) == before


@pytest.mark.gpu
def test_allocator_counters_see_an_emptied_cache():
    """The allocator's counters read on this GPU (the nested layout of torch._C._cuda_memoryStats is what the
    reader expects), and emptying a cache that holds a freed block is seen as a release."""
    import torch

    from cudaopt.evaluate.child import _allocator_counters, allocator_release

    dev = torch.device("cuda")
    block = torch.empty(64 << 20, dtype=torch.uint8, device=dev)
    del block  # back to the cache, not to the driver
    before = _allocator_counters(dev)
    assert before is not None, "torch reports no allocator counters here: the timed-round check is off"
    assert allocator_release(before, _allocator_counters(dev)) is None
    torch.cuda.empty_cache()
    seen = allocator_release(before, _allocator_counters(dev))  # other tests' cached blocks may go back too
    assert seen is not None and seen.endswith(" bytes released to the driver") and int(seen.split()[0]) >= 64 << 20, seen
