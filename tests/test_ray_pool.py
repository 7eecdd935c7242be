"""The Ray pool on a local Ray instance with CPU workers: the service's load test, and an actor
that dies mid-evaluation. Ray takes ~10 s to start on a 2-core machine, so the instance is shared."""

from __future__ import annotations

import os
import time

import pytest

ray = pytest.importorskip("ray")

from conftest import run_load_test  # noqa: E402

from cudaopt.evaluate.result import EvalOptions  # noqa: E402
from cudaopt.pool.procs import stray_processes  # noqa: E402
from cudaopt.pool.ray_pool import RayEvaluatorPool  # noqa: E402
from cudaopt.pool.snippet import MISBEHAVING, snippet_evaluate  # noqa: E402

pytestmark = pytest.mark.slow
REFERENCE = "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n"


def make_evaluate(marker_dir: str):
    """snippet_evaluate, except that a candidate starting `#die` kills its Ray actor the first time it is seen.
    (A closure, so Ray ships it by value: the workers cannot import this test module.)"""

    def evaluate(reference, candidate, options):
        if candidate.startswith("#die"):
            marker = os.path.join(marker_dir, candidate.split()[1])
            if not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(1)  # the actor process itself dies, as on a poisoned GPU context
        return snippet_evaluate(reference, candidate, options)

    return evaluate


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    marker_dir = str(tmp_path_factory.mktemp("markers"))
    p = RayEvaluatorPool(2, use_gpu=False, evaluate_fn=make_evaluate(marker_dir),
                         init_kwargs={"num_cpus": 2, "include_dashboard": False, "log_to_driver": False})
    yield p
    p.close()
    deadline = time.monotonic() + 30  # Ray's own processes take a moment to go
    while stray_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert stray_processes() == [], "Ray processes left after the pool closed"


def test_one_worker_per_slot(pool):
    assert pool.size == 2 and len(set(pool.devices)) == 2
    assert all(d.startswith("ray:") for d in pool.devices)


def test_two_hundred_misbehaving_evaluations_at_once_over_http_on_ray(pool):
    """The process pool's load test (tests/test_service.py), unchanged, on Ray's actors."""
    run_load_test(pool, 200, {"exec_floor_s": 1.0}, REFERENCE)


def test_a_dead_actor_is_restarted_and_the_job_retried(pool):
    job = pool.submit(REFERENCE, "#die once\nprint('SPEEDUP=1.5')", EvalOptions(exec_floor_s=5.0))
    result = job.result(timeout=120)
    assert result.ok and result.speedup == 1.5
    assert job.attempts == 2 and pool.status()["retried"] >= 1
    # Both workers still answer afterwards.
    after = list(pool.map([(REFERENCE, MISBEHAVING["ok"])] * 4, EvalOptions(exec_floor_s=5.0)))
    assert all(r.ok for r in after)


def test_high_speedups_are_verified_on_the_other_actor(pool):
    result = pool.submit(REFERENCE, "print('SPEEDUP=4.0')", EvalOptions(exec_floor_s=5.0)).result(timeout=60)
    assert result.timing.verified is True and "re-measured on ray:" in result.message


def test_placement_failure_says_what_to_do(pool):
    # The shared instance has 2 CPUs, both held by the pool's actors: a third worker cannot be placed.
    with pytest.raises(RuntimeError, match="ask for fewer workers"):
        import cudaopt.pool.ray_pool as rp

        old, rp.PLACEMENT_TIMEOUT_S = rp.PLACEMENT_TIMEOUT_S, 2.0
        try:
            RayEvaluatorPool(1, use_gpu=False, evaluate_fn=snippet_evaluate)
        finally:
            rp.PLACEMENT_TIMEOUT_S = old
