"""The worker's exact-equality check (`_same`), used for inputs the candidate must not write and outputs
that must not change after their call: NaN equals NaN, nothing else is loosened."""

import pytest
import torch

from cudaopt.evaluate.child import _same

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("a,b,want", [
    (torch.tensor([1.0, NAN, 3.0]), torch.tensor([1.0, NAN, 3.0]), True),
    (torch.tensor([1.0, NAN, 3.0]), torch.tensor([1.0, NAN, 4.0]), False),  # a write beside a NaN is a write
    (torch.tensor([1.0, NAN, 3.0]), torch.tensor([1.0, 2.0, 3.0]), False),
    (torch.tensor([INF, NAN]), torch.tensor([3.4028234663852886e38, NAN]), False),  # inf is not the largest float
    (torch.tensor([-INF]), torch.tensor([-INF]), True),
    (torch.tensor([-0.0]), torch.tensor([0.0]), True),
    (torch.tensor([1, 2]), torch.tensor([1, 2]), True),
    (torch.tensor([1, 2]), torch.tensor([1, 3]), False),
    (torch.zeros(2, 2), torch.zeros(4), False),
    (torch.zeros(3, dtype=torch.float16), torch.zeros(3, dtype=torch.float32), False),
    (torch.tensor([NAN], dtype=torch.bfloat16), torch.tensor([NAN], dtype=torch.bfloat16), True),
])
def test_same(a, b, want):
    assert _same(a, b) is want


# -- torch's shared settings (the reference is timed in the candidate's process) ----------------------------

def test_shared_settings_see_a_setter_call_and_name_it():
    from cudaopt.evaluate.sandbox import describe_settings, settings_changed, shared_settings

    before = shared_settings()
    assert {"num_threads", "grad_enabled", "cudnn.enabled", "sdp_backends"} <= set(before)
    n = torch.get_num_threads()
    other = 1 if n != 1 else 2
    torch.set_num_threads(other)
    try:
        diff = settings_changed(before, shared_settings())
    finally:
        torch.set_num_threads(n)
    assert diff == {"num_threads": (n, other)}
    assert describe_settings(diff) == f"num_threads {n} -> {other}"
    assert settings_changed(before, shared_settings()) == {}


def test_a_collector_callback_left_behind_is_a_change():
    import gc

    from cudaopt.evaluate.sandbox import settings_changed, shared_settings

    before = shared_settings()
    n = len(gc.callbacks)

    def callback(phase, info):
        return None

    gc.callbacks.append(callback)
    try:
        assert settings_changed(before, shared_settings()) == {"gc_callbacks": (n, n + 1)}
    finally:
        gc.callbacks.remove(callback)
    assert settings_changed(before, shared_settings()) == {}


def test_grad_mode_compares_only_within_one_context():
    from cudaopt.evaluate.sandbox import CONTEXT_SETTINGS, settings_changed, shared_settings

    outside = shared_settings()
    with torch.no_grad():
        inside = shared_settings()
        # the harness's own no_grad is not a change when compared with a reading taken outside it ...
        assert settings_changed(outside, inside, CONTEXT_SETTINGS) == {}
        torch.set_grad_enabled(True)  # ... but grad mode switched back on inside the block is one
        assert settings_changed(inside, shared_settings()) == {"grad_enabled": (False, True)}


def test_the_window_runs_with_automatic_collection_off_and_restores_it():
    """Inside a timing window Python's collector is off, whatever the candidate left pending; after it the
    collector is as it was before the window, also when the call raised or switched it back on itself."""
    import gc

    from cudaopt.evaluate.clock import HostClock

    clock = HostClock()
    seen = []
    assert gc.isenabled()
    out, t = clock.time(lambda: seen.append(gc.isenabled()) or 7, lambda out: None)
    assert (out, seen) == (7, [False]) and gc.isenabled() and t.event_us >= 0

    def enables_and_raises():
        gc.enable()
        raise RuntimeError("candidate failed")

    with pytest.raises(RuntimeError):
        clock.time(enables_and_raises, lambda out: None)
    assert gc.isenabled()
    gc.disable()  # a collector already off before the window stays off after it
    try:
        clock.time(gc.enable, lambda out: None)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_context_settings_are_none_without_a_gpu():
    from cudaopt.evaluate.child import _context_settings

    assert _context_settings(torch.device("cpu")) is None


@pytest.mark.parametrize("before, now, want", [
    (None, (10, 0), None),  # no reading (the CPU): nothing to judge
    ((10, 0), (10, 0), None),
    ((10, 0), (4106, 0), "4096 bytes released to the driver"),  # emptied by choice
    ((10, 0), (4106, 1), None),  # freed to retry a failed cudaMalloc: memory pressure
    ((10, 2), (0, 0), "the allocator's accumulated counters were reset"),  # a reset hides a release
])
def test_allocator_release_is_judged_from_the_counters(before, now, want):
    from cudaopt.evaluate.child import allocator_release

    assert allocator_release(before, now) == want


def test_allocator_counters_are_none_on_the_cpu():
    from cudaopt.evaluate.child import _allocator_counters

    assert _allocator_counters(torch.device("cpu")) is None
