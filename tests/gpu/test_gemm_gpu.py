"""GPU correctness of the HGEMM family: every config, with and without split-K, on awkward shapes."""

import pytest

pytestmark = pytest.mark.gpu

SHAPES = [(64, 64, 64), (200, 136, 264), (1000, 520, 1032), (64, 4096, 2048)]


@pytest.mark.parametrize("shape", SHAPES)
def test_every_config_is_correct(shape):
    from cudaopt.gemm import KERNEL_CONFIGS, Choice, hgemm
    from cudaopt.gemm.correctness import check_gemm

    m, n, k = shape
    failures = []
    for cfg in KERNEL_CONFIGS:
        for splits in (1, 3, 8):
            choice = Choice("ours", cfg.id, splits)
            r = check_gemm(lambda a, b, out, c=choice: hgemm(a, b, out=out, choice=c), m, n, k)
            if not r.ok:
                failures.append((choice.label(), r))
    assert not failures, failures[:3]


def test_dispatcher_matches_torch():
    import torch

    from cudaopt.gemm import hgemm

    a = torch.randn(384, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 640, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float()
    out = hgemm(a, b)
    assert (out.float() - ref).abs().max().item() < 0.1


def test_fp16_accumulate_fails_the_normal_bound():
    """The random-normal bound must catch an fp16-accumulate path (cuBLAS COMPUTE_16F) at K=4096."""
    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.correctness import check_gemm

    lib = _lib.blas()

    def fp16_acc(a, b, out):
        m, k = a.shape
        n = b.shape[1]
        assert lib.cudaopt_cublas_gemm(a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, 0, 1,
                                       torch.cuda.current_stream().cuda_stream) == 0

    r = check_gemm(fp16_acc, 256, 256, 4096)
    assert not r.normal_ok, r
