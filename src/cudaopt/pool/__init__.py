"""Many evaluations at once: a local pool with one slot per device, and the same interface on Ray."""

from cudaopt.pool.local import EvaluatorPool, Job  # noqa: F401


def __getattr__(name: str):
    # Ray is optional and slow to import: only `cudaopt.pool.RayEvaluatorPool` pulls it in.
    if name == "RayEvaluatorPool":
        from cudaopt.pool.ray_pool import RayEvaluatorPool

        return RayEvaluatorPool
    raise AttributeError(name)
