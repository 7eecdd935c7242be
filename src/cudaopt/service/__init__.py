"""The evaluator pool as an HTTP service (FastAPI + uvicorn): `serve(...)`, `create_app(pool)`."""

from cudaopt.service.server import BackgroundServer, resolve_devices, serve  # noqa: F401


def create_app(*args, **kwargs):
    from cudaopt.service.app import create_app as _create_app  # FastAPI only when an app is made

    return _create_app(*args, **kwargs)
