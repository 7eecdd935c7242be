import shutil

import pytest


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


HAS_CUDA = _has_cuda()
HAS_CXX = shutil.which("c++") is not None or shutil.which("g++") is not None


def pytest_collection_modifyitems(config, items):
    # GPU tests are skipped visibly (reported by -ra) where there is no CUDA device.
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (run scripts/gpu_check.sh on an H200)")
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_gpu)


def run_load_test(pool, total: int, options: dict, reference: str) -> None:
    """`total` evaluations of misbehaving candidates at once through a real server (the process pool's
    and the Ray pool's load tests); every one answered as its kind should be, the server up throughout."""
    import httpx

    from cudaopt.pool.snippet import EXPECTED_STATUS, MISBEHAVING, load_mix
    from cudaopt.service import BackgroundServer, create_app
    from cudaopt.service.load import send_all

    kinds = load_mix(total)
    requests = [{"reference": reference, "candidate": MISBEHAVING[k], "options": options} for k in kinds]
    with BackgroundServer(create_app(pool)) as url:
        results, health_codes = send_all(url, requests)
        assert health_codes == [200] * 3  # answers while the queue is full
        assert len(results) == len(kinds)
        for kind, result in zip(kinds, results):
            assert result["status"] in EXPECTED_STATUS[kind], (kind, result["status"], result["message"])
        status = httpx.get(f"{url}/queue").json()
        assert status["finished"] == len(kinds) and status["queued"] == 0 and status["busy"] == 0
        assert httpx.get(f"{url}/health").json()["status"] == "ok"
