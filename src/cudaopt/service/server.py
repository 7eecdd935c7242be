"""Running the service: `serve(...)` for the CLI, `BackgroundServer` for tests and benchmarks."""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
import time
from collections.abc import Sequence

from cudaopt.pool.local import EvaluatorPool

API_KEY_ENV = "CUDAOPT_API_KEY"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_devices(devices: Sequence[str] | str | None) -> list[str]:
    """`None` or "cuda": every visible GPU (or one CPU slot where there is none); "cpu" or "cpu*4": CPU slots;
    "cuda:0,cuda:1" or a list: those devices."""
    if devices is None or devices == "auto":
        devices = "cuda" if _cuda_count() else "cpu"
    if isinstance(devices, str):
        devices = [d.strip() for d in devices.split(",") if d.strip()]
    out: list[str] = []
    for d in devices:
        name, _, times = d.partition("*")
        count = int(times) if times else 1
        if name == "cuda":
            n = _cuda_count()
            if not n:
                raise ValueError("no CUDA device is visible; serve CPU evaluations with --device cpu")
            out += [f"cuda:{i}" for i in range(n)] * count
        elif name == "cpu" or (name.startswith("cuda:") and name[5:].isdigit()):
            out += [name] * count
        else:
            raise ValueError(f"unknown device {d!r}; use cpu, cpu*N, cuda or cuda:N")
    if not out:
        raise ValueError("no devices given; use cpu, cpu*N, cuda or cuda:N")
    return out


def _cuda_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no usable torch means no GPU
        return 0


def make_pool(pool: str = "local", devices: Sequence[str] | str | None = None, ray_address: str | None = None,
              evaluate_fn=None) -> EvaluatorPool:
    if pool == "local":
        return EvaluatorPool(resolve_devices(devices), evaluate_fn)
    if pool == "ray":
        from cudaopt.pool.ray_pool import RayEvaluatorPool

        # On a cluster the devices say which kind of worker and, for CPU slots, how many; GPU workers
        # default to every GPU Ray knows of.
        names = [d.strip() for d in devices.split(",")] if isinstance(devices, str) else list(devices or [])
        use_gpu = None if not names else not all(n.startswith("cpu") for n in names)
        num = None
        if names and not use_gpu:
            num = sum(int(n.partition("*")[2] or 1) for n in names)
        return RayEvaluatorPool(num, use_gpu=use_gpu, address=ray_address, evaluate_fn=evaluate_fn)
    raise ValueError(f"unknown pool {pool!r}; use 'local' or 'ray'")


def serve(host: str = "127.0.0.1", port: int = 8000, devices: Sequence[str] | str | None = None,
          api_key: str | None = None, pool: str = "local", ray_address: str | None = None,
          log_level: str = "info") -> None:
    """Serve evaluations over HTTP until interrupted. Listening anywhere but loopback needs an API key
    (`api_key` or the CUDAOPT_API_KEY environment variable)."""
    import uvicorn

    from cudaopt.service.app import create_app

    api_key = api_key or os.environ.get(API_KEY_ENV) or None
    if not is_loopback(host) and not api_key:
        raise ValueError(f"listening on {host} needs an API key: pass --api-key or set {API_KEY_ENV}")
    evaluator_pool = make_pool(pool, devices, ray_address)
    try:
        uvicorn.run(create_app(evaluator_pool, api_key=api_key), host=host, port=port, log_level=log_level)
    finally:
        evaluator_pool.close(wait=True, cancel_pending=True)


class BackgroundServer:
    """uvicorn in a thread on a free loopback port: `with BackgroundServer(app) as url: ...`."""

    def __init__(self, app, host: str = "127.0.0.1", log_level: str = "warning") -> None:
        import uvicorn

        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit this; without it every keep-alive response waits ~40 ms for a
        # delayed ACK (uvicorn does not set it on sockets it is handed).
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.bind((host, 0))
        self.url = f"http://{host}:{self._socket.getsockname()[1]}"
        # backlog: a load test opens hundreds of connections at once
        config = uvicorn.Config(app, log_level=log_level, backlog=2048, timeout_keep_alive=30)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the background server did not start")
            time.sleep(0.05)
        return self.url

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)
        self._socket.close()
