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
