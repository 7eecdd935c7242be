"""The pool's interface on Ray: one actor per GPU (or per CPU slot) anywhere in a Ray cluster.

Ray places the actors (`num_gpus=1` each, so every evaluation has a GPU to itself) and restarts one
that dies; the pool's queue feeds them exactly as it feeds local devices, so retries, verification on a
different worker and streaming behave the same. Ray is imported only when this pool is created.

    pool = RayEvaluatorPool(address="auto")                      # every GPU of a running cluster
    pool = RayEvaluatorPool(num_workers=2, use_gpu=False,        # CPU workers on a local instance
                            init_kwargs={"num_cpus": 2, "include_dashboard": False})
"""

from __future__ import annotations

import os
import socket
from typing import Any

from cudaopt.evaluate.result import EvalOptions, EvalResult
from cudaopt.pool.local import EvaluateFn, EvaluatorPool, default_evaluate

# How long actors may take to be placed before we say the cluster lacks the resources.
PLACEMENT_TIMEOUT_S = 180.0


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError("the Ray pool needs Ray: pip install 'cudaopt[ray]'") from None
    return ray


class _EvaluationActor:
    """Runs evaluations on the one device Ray gave this actor."""

    def __init__(self, evaluate_fn: EvaluateFn, use_gpu: bool) -> None:
        self.evaluate_fn = evaluate_fn
        # Ray narrows CUDA_VISIBLE_DEVICES to the actor's GPU, so inside it that GPU is always cuda:0.
        self.device = "cuda:0" if use_gpu else "cpu"

    def describe(self) -> str:
        gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        where = f"gpu{gpus}" if self.device.startswith("cuda") else "cpu"
        return f"{socket.gethostname()}/{where}/pid{os.getpid()}"

    def evaluate(self, reference: Any, candidate: Any, options: EvalOptions) -> EvalResult:
        from dataclasses import replace

        return self.evaluate_fn(reference, candidate, replace(options, device=self.device))


class RayEvaluatorPool(EvaluatorPool):
    """`EvaluatorPool` whose slots are Ray actors. `num_workers` defaults to every GPU of the cluster, or
    every CPU when it has none; `address` is passed to `ray.init` (None starts a local instance)."""

    def __init__(self, num_workers: int | None = None, *, use_gpu: bool | None = None, address: str | None = None,
                 evaluate_fn: EvaluateFn | None = None, init_kwargs: dict | None = None, retries: int = 1,
                 job_timeout_s: float | None = None, recent: int = 100) -> None:
        ray = self._ray = _import_ray()
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(address=address, **(init_kwargs or {}))
        resources = ray.cluster_resources()
        if use_gpu is None:
            use_gpu = resources.get("GPU", 0) >= 1
        if num_workers is None:
            num_workers = int(resources.get("GPU", 0)) if use_gpu else max(1, int(resources.get("CPU", 1)))
        if num_workers < 1:
            raise ValueError("the Ray cluster has no GPU; pass use_gpu=False for CPU workers")
        actor = ray.remote(_EvaluationActor).options(
            num_gpus=1 if use_gpu else 0, num_cpus=0 if use_gpu else 1, max_restarts=-1, max_task_retries=0)
        fn = evaluate_fn or default_evaluate
        self._actors = [actor.remote(fn, use_gpu) for _ in range(num_workers)]
        try:
            names = ray.get([a.describe.remote() for a in self._actors], timeout=PLACEMENT_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            self._release()
            kind = "GPU" if use_gpu else "CPU"
            raise RuntimeError(f"Ray could not place {num_workers} {kind} workers within {PLACEMENT_TIMEOUT_S:.0f} s; "
                               f"the cluster has {resources.get(kind, 0):g} {kind}s: ask for fewer workers") from None
        super().__init__(["cuda:0" if use_gpu else "cpu"] * num_workers, fn, retries=retries,
                         job_timeout_s=job_timeout_s, recent=recent, names=[f"ray:{n}" for n in names])

    def _make_slot_fn(self, index: int, device: str) -> EvaluateFn:
        actor, ray = self._actors[index], self._ray

        def evaluate_on_actor(reference: Any, candidate: Any, options: EvalOptions) -> EvalResult:
            # A dead actor raises RayActorError here: the pool retries on another worker while Ray
            # restarts this one.
            return ray.get(actor.evaluate.remote(reference, candidate, options))

        return evaluate_on_actor

    def close(self, wait: bool = True, cancel_pending: bool = False) -> None:
        super().close(wait=wait, cancel_pending=cancel_pending)
        if wait:
            self._release()

    def _release(self) -> None:
        for a in self._actors:
            try:
                self._ray.kill(a)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self._actors = []
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
