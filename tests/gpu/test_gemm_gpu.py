"""GPU correctness of the HGEMM family: every config, with and without split-K, on awkward shapes;
the Hopper (wgmma) configs also on large shapes, many tiles per persistent block, and other streams."""

import os

import pytest

pytestmark = pytest.mark.gpu

SHAPES = [(64, 64, 64), (200, 136, 264), (1000, 520, 1032), (64, 4096, 2048)]


@pytest.mark.parametrize("shape", SHAPES)
def test_every_config_is_correct(shape):
    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.configs import MMA_CONFIGS
    from cudaopt.gemm.correctness import check_gemm

    m, n, k = shape
    failures = []
    for cfg in MMA_CONFIGS:  # the wgmma configs: test_every_wgmma_config_is_correct
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


# Awkward for the wgmma tiles (M, N, K not multiples of 64/128/256; K below one 64-wide slot; fewer
# rows than a TMA box) and large (many tiles per persistent block: the ring's phases wrap across tiles).
WGMMA_SHAPES = [(8, 8, 8), (72, 200, 40), (130, 264, 1000), (1000, 520, 1032), (2056, 1032, 520),
                (4096, 4096, 4096), (16384, 512, 1024), (256, 16384, 2048)]


@pytest.mark.parametrize("shape", WGMMA_SHAPES)
def test_every_wgmma_config_is_correct(shape):
    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.configs import WGMMA_CONFIGS
    from cudaopt.gemm.correctness import check_gemm

    m, n, k = shape
    failures = []
    for cfg in WGMMA_CONFIGS:
        choice = Choice("ours", cfg.id, 1)
        r = check_gemm(lambda a, b, out, c=choice: hgemm(a, b, out=out, choice=c), m, n, k, seed=m + n + k)
        if not r.ok:
            failures.append((choice.label(), r))
    assert not failures, failures[:4]


def test_wgmma_tensor_map_cache_is_keyed_by_pointer_and_shape():
    """Same pointer with another shape, and another pointer with the same shape, must not reuse a map."""
    import torch

    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    choice = Choice("ours", WGMMA_CONFIGS[0].id, 1)
    base_a = torch.randn(512, 256, device="cuda", dtype=torch.float16)
    base_b = torch.randn(256, 384, device="cuda", dtype=torch.float16)
    for m in (512, 192, 64):  # same data_ptr, fewer rows
        a = base_a[:m]
        out = hgemm(a, base_b, choice=choice)
        ref = a.float() @ base_b.float()
        assert (out.float() - ref).abs().max().item() < 0.25, m
    for _ in range(3):  # fresh tensors of one shape, some landing on reused addresses
        a = torch.randn(512, 256, device="cuda", dtype=torch.float16)
        out = hgemm(a, base_b, choice=choice)
        assert (out.float() - a.float() @ base_b.float()).abs().max().item() < 0.25


def test_wgmma_runs_on_the_callers_stream():
    """A is filled on a side stream after a GPU sleep; a launch on any other stream reads zeros."""
    import torch

    from cudaopt.gemm import Choice
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    a = torch.randn(2048, 1024, device="cuda", dtype=torch.float16)
    b = torch.randn(1024, 2048, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float()
    stream = torch.cuda.Stream()  # non-blocking: no implicit ordering with the legacy default stream
    for cfg in WGMMA_CONFIGS:
        assert _late_input_error(a, b, ref, stream, Choice("ours", cfg.id, 1)) < 0.5, cfg.label


def _late_input_error(a, b, ref, stream, choice) -> float:
    """hgemm on `stream` right after a GPU sleep and the copy that fills A there (a launch on any other
    stream reads A's zeros); the max abs error of the result against `ref`."""
    import torch

    from cudaopt.gemm import hgemm

    a_late = torch.zeros_like(a)
    out = torch.zeros((a.shape[0], b.shape[1]), device="cuda", dtype=torch.float16)
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)
        a_late.copy_(a)
        hgemm(a_late, b, out=out, choice=choice)
    stream.synchronize()
    return (out.float() - ref).abs().max().item()


def test_wgmma_rejects_split_k_and_unaligned_shapes():
    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    a = torch.randn(128, 128, device="cuda", dtype=torch.float16)
    out = torch.empty(128, 128, device="cuda", dtype=torch.float16)
    cfg = WGMMA_CONFIGS[0]
    stream = torch.cuda.current_stream().cuda_stream
    with pytest.raises(_lib.GemmError):
        _lib.launch_ours(a.data_ptr(), a.data_ptr(), out.data_ptr(), 128, 128, 128, cfg.id, 2, 0, 0, stream)
    with pytest.raises(_lib.GemmError):  # K not a multiple of 8: TMA strides must be 16-byte multiples
        _lib.launch_ours(a.data_ptr(), a.data_ptr(), out.data_ptr(), 128, 128, 124, cfg.id, 1, 0, 0, stream)


# Split-K (generation 2): the shapes where one block per tile left most SMs idle in session 6, and
# awkward tails: M and N not multiples of the tile, K not a multiple of 64 (the last k-block is
# zero-filled), k-block counts not divisible by the splits (items of unequal k-block counts), one
# k-block per split, a single tile.
SPLITK_SHAPES = [(512, 512, 4096), (64, 64, 2048), (512, 64, 2048), (64, 4096, 12288), (128, 4096, 16384),
                 (1024, 64, 2048), (72, 200, 1000), (200, 136, 264), (1000, 520, 1032), (8, 8, 136)]


def _gen2_split_choices(k):
    from cudaopt.gemm import Choice
    from cudaopt.gemm.configs import WGMMA_CONFIGS, wgmma_k_blocks

    out = []
    for cfg in WGMMA_CONFIGS:
        if cfg.schedule == 0 or cfg.max_splits == 1:  # generation 1 and the cluster configs
            continue
        for splits in (2, 3, 4, 6, 8, 16, 48, 64):
            if splits <= min(cfg.max_splits, wgmma_k_blocks(k)):
                out.append(Choice("ours", cfg.id, splits))
    return out


@pytest.mark.parametrize("shape", SPLITK_SHAPES)
def test_wgmma_splitk_matches_torch(shape):
    """Every generation-2 config with 2, 3, 4, 8, 16 splits (where K has that many k-blocks) against
    an fp32 reference, within 1.25x torch.matmul's own error (+ fp16 rounding slack); one of them per
    shape through every check of check_gemm (0/1 exact, normal bound, NaN rows, guard band)."""
    import torch

    from cudaopt.gemm import hgemm
    from cudaopt.gemm.correctness import check_gemm

    m, n, k = shape
    gen = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    a = torch.randn((m, k), generator=gen, device="cuda").half()
    b = torch.randn((k, n), generator=gen, device="cuda").half()
    ref = a.float() @ b.float()
    torch_err = ((torch.matmul(a, b).float() - ref).norm() / ref.norm()).item()
    choices = _gen2_split_choices(k)
    assert choices
    failures = []
    for choice in choices:
        out = hgemm(a, b, choice=choice)
        torch.cuda.synchronize()
        err = ((out.float() - ref).norm() / ref.norm()).item()
        if not err <= 1.25 * torch_err + 1e-4:
            failures.append((choice.label(), err, torch_err))
    assert not failures, failures[:4]
    full = choices[len(choices) // 2]
    r = check_gemm(lambda a_, b_, out, c=full: hgemm(a_, b_, out=out, choice=c), m, n, k, seed=m + n + k)
    assert r.ok, (full.label(), r)


@pytest.mark.parametrize("fixup", [0, 1, 2, 4])
def test_wgmma_splitk_writes_every_workspace_element_it_reads_and_is_deterministic(fixup):
    """A NaN-poisoned partials area gives a NaN-free result (every partial the fixup reads was
    written by some work item), the same workspace reused for another split count or shape too; two
    runs are bitwise equal (splits are summed in a fixed order, whichever item finishes a tile); the
    counter block is zero again after every call (the contract that lets a workspace be reused)."""
    import torch

    from cudaopt.gemm import _lib

    ws = torch.zeros(_lib.workspace_bytes(1000, 520, 16) // 4, device="cuda", dtype=torch.float32)
    lib = _lib.wgmma_kernels()
    lib.cudaopt_wgmma_set_splitk_fixup(fixup)
    try:
        _poisoned_partials_runs(ws)
    finally:
        lib.cudaopt_wgmma_set_splitk_fixup(0)


def _poisoned_partials_runs(ws):
    import torch

    from cudaopt.gemm import _lib, hgemm

    for m, n, k in [(1000, 520, 1032), (72, 200, 1000), (512, 64, 2048)]:
        a = torch.randn((m, k), device="cuda", dtype=torch.float16)
        b = torch.randn((k, n), device="cuda", dtype=torch.float16)
        counters = _lib.counter_bytes(m, n) // 4
        for choice in _gen2_split_choices(k):
            ws[counters:].fill_(float("nan"))
            out1 = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            hgemm(a, b, out=out1, workspace=ws, choice=choice)
            ws[counters:].fill_(float("nan"))
            out2 = hgemm(a, b, workspace=ws, choice=choice)
            torch.cuda.synchronize()
            assert not out1.isnan().any(), (m, n, k, choice.label())
            assert torch.equal(out1, out2), (m, n, k, choice.label())
            assert not ws[:counters].view(torch.int32).any(), (m, n, k, choice.label())


@pytest.mark.parametrize("mode", [1, 2, 3, 4])
def test_wgmma_splitk_fixup_agrees_with_the_reduce_kernel(mode):
    """The in-kernel fixups (1: ticket, 2: spread, on one-wave launches; 4: cluster split-K, up to 8
    splits; the reduce kernel elsewhere) and the serial reduce kernel all sum the partials in split
    order 0, 1, ..., so their results are
    bitwise equal; a fresh hgemm workspace (taken from the caching allocator, counters zeroed by
    new_workspace) gives the same again, and the counters are left at zero."""
    import torch

    from cudaopt.gemm import _lib, hgemm

    lib = _lib.wgmma_kernels()
    # (1000, 520, 1032): one wave for 128-row tiles at 3 splits, several at 16; (256, 128, 4096): one
    # wave up to 32 splits; (64, 64, 8192) one tile, 64 splits spread over 64 blocks.
    for m, n, k in [(1000, 520, 1032), (256, 128, 4096), (64, 64, 8192)]:
        a = torch.randn((m, k), device="cuda", dtype=torch.float16)
        b = torch.randn((k, n), device="cuda", dtype=torch.float16)
        for choice in _gen2_split_choices(k)[:: 1 if mode == 4 else 2]:  # every config's clusters
            ws = _lib.new_workspace(m, n, choice.splits)
            try:
                # the serial reduce: splits in order, as the fixups; also where mode 2 falls back to it
                _lib.set_reduce_chunked(False)
                reduced = hgemm(a, b, workspace=ws, choice=choice)
                lib.cudaopt_wgmma_set_splitk_fixup(mode)
                fixed = hgemm(a, b, workspace=ws, choice=choice)
                again = hgemm(a, b, workspace=ws, choice=choice)  # the counters were put back
                fresh = hgemm(a, b, choice=choice)
                torch.cuda.synchronize()
            finally:
                lib.cudaopt_wgmma_set_splitk_fixup(0)  # the defaults
                _lib.set_reduce_chunked(os.environ.get("CUDAOPT_GEMM_REDUCE_CHUNKED", "1") != "0")
            label = (mode, m, n, k, choice.label())
            assert torch.equal(reduced, fixed) and torch.equal(fixed, again) and torch.equal(fixed, fresh), label
            assert not ws[: _lib.counter_bytes(m, n) // 4].view(torch.int32).any(), label


@pytest.mark.parametrize("kind", ["wgmma", "mma"])
def test_chunked_split_k_reduce_agrees_with_the_serial_one(kind):
    """The chunked reduce (chunks of 8 splits, each in order, then the chunk sums in order) against the
    serial one (splits in order): bitwise equal up to 8 splits (the same order), equal to fp32 rounding
    of the sums above; deterministic; and correct against an fp32 reference, tails included."""
    import torch

    from cudaopt.gemm import Choice, _lib, hgemm
    from cudaopt.gemm.configs import MMA_CONFIGS

    lib = _lib.kernels()
    for m, n, k in [(64, 64, 16384), (200, 136, 8192), (1000, 520, 1032)]:
        a = torch.randn((m, k), device="cuda", dtype=torch.float16)
        b = torch.randn((k, n), device="cuda", dtype=torch.float16)
        ref = a.float() @ b.float()
        if kind == "wgmma":
            choices = _gen2_split_choices(k)[::3]
        else:
            cfg = next(c for c in MMA_CONFIGS if (c.bm, c.bn) == (64, 64))
            choices = [Choice("ours", cfg.id, s) for s in (2, 5, 8, 9, 16) if k // s >= 64]
        for choice in choices:
            ws = _lib.new_workspace(m, n, choice.splits)
            try:
                _lib.set_reduce_chunked(False, lib)  # whatever the environment chose
                serial = hgemm(a, b, workspace=ws, choice=choice)
                _lib.set_reduce_chunked(True, lib)
                if kind == "wgmma":
                    _lib.set_reduce_fixed(0, lib)  # the chunked kernel itself for 2..8 splits too
                chunked = hgemm(a, b, workspace=ws, choice=choice)
                again = hgemm(a, b, workspace=ws, choice=choice)
                torch.cuda.synchronize()
            finally:
                _lib.set_reduce_chunked(os.environ.get("CUDAOPT_GEMM_REDUCE_CHUNKED", "1") != "0", lib)
                if kind == "wgmma":
                    _lib.set_reduce_fixed(_lib.reduce_fixed_lanes(), lib)
            label = (m, n, k, choice.label())
            assert torch.equal(chunked, again), label
            if choice.splits <= 8:
                assert torch.equal(serial, chunked), label
            else:
                diff = (serial.float() - chunked.float()).abs().max().item()
                assert diff <= 2e-3 * serial.float().abs().max().item(), (*label, diff)
            err = ((chunked.float() - ref).norm() / ref.norm()).item()
            assert err < 2e-3, (*label, err)


def test_fixed_split_reduce_agrees_bitwise_with_the_chunked_one():
    """The fixed-split reduce (CUDAOPT_GEMM_REDUCE_FIXED, 2..8 splits, 1, 2 or 4 lanes a thread) sums in
    split order like the chunked kernel's one chunk: bitwise equal for every split count it takes, on
    shapes whose output is not a whole number of its threads' lanes (tails), and above 8 splits it
    leaves the chunked kernel in charge."""
    import torch

    from cudaopt.gemm import Choice, _lib, hgemm
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    lib = _lib.wgmma_kernels()
    cfg = next(c for c in WGMMA_CONFIGS if c.schedule == 2 and (c.bm, c.bn) == (64, 128) and not c.csplit)
    for m, n, k in [(1000, 520, 1032), (64, 64, 8192), (200, 136, 8192)]:
        a = torch.randn((m, k), device="cuda", dtype=torch.float16)
        b = torch.randn((k, n), device="cuda", dtype=torch.float16)
        for splits in (2, 3, 4, 5, 6, 7, 8, 16):
            choice = Choice("ours", cfg.id, splits)
            ws = _lib.new_workspace(m, n, splits)
            try:
                _lib.set_reduce_chunked(True, lib)
                _lib.set_reduce_fixed(0, lib)
                chunked = hgemm(a, b, workspace=ws, choice=choice)
                outs = []
                for lanes in (1, 2, 4):
                    _lib.set_reduce_fixed(lanes, lib)
                    outs.append(hgemm(a, b, workspace=ws, choice=choice))
                torch.cuda.synchronize()
            finally:
                _lib.set_reduce_chunked(os.environ.get("CUDAOPT_GEMM_REDUCE_CHUNKED", "1") != "0", lib)
                _lib.set_reduce_fixed(_lib.reduce_fixed_lanes(), lib)
            assert not chunked.isnan().any(), (m, n, k, splits)
            for lanes, out in zip((1, 2, 4), outs):
                assert torch.equal(chunked, out), (m, n, k, splits, lanes)
    # and the switch does pick the kernel (an equal result alone would not tell): by name, from CUPTI
    a = torch.randn((256, 4096), device="cuda", dtype=torch.float16)
    b = torch.randn((4096, 256), device="cuda", dtype=torch.float16)
    for splits, want in ((3, True), (16, False)):
        ws = _lib.new_workspace(256, 256, splits)
        try:
            _lib.set_reduce_chunked(True, lib)
            _lib.set_reduce_fixed(2, lib)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                hgemm(a, b, workspace=ws, choice=Choice("ours", cfg.id, splits))
                torch.cuda.synchronize()
        finally:
            _lib.set_reduce_chunked(os.environ.get("CUDAOPT_GEMM_REDUCE_CHUNKED", "1") != "0", lib)
            _lib.set_reduce_fixed(_lib.reduce_fixed_lanes(), lib)
        names = [e.name for e in prof.events()]
        assert any("splitk_reduce_fixed_kernel" in x for x in names) == want, (splits, names)
        assert any("splitk_reduce" in x for x in names), (splits, names)


def test_cpasync_producer_agrees_bitwise_with_tma():
    """The cp.async producer (CUDAOPT_GEMM_CPASYNC) writes the ring slots TMA would, swizzle and
    zero-filled tails included, so every generation-2 config without clusters, plain and split-K, gives
    bitwise TMA's output: on rows that are not 128-byte aligned (mode 1 takes it there), on a shape of
    many tiles a block (the ring wraps many times), and on aligned rows with mode 2."""
    import torch

    from cudaopt.gemm import Choice, _lib, hgemm
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    lib = _lib.wgmma_kernels()
    configs = [c for c in WGMMA_CONFIGS if c.cpasync]  # (not the 160-wide tiles: TMA only, session 26)
    assert configs
    failures = []
    try:
        for (m, n, k), mode in (((1000, 520, 1032), 1), ((2056, 1544, 776), 1), ((384, 512, 1024), 2)):
            a = torch.randn((m, k), device="cuda", dtype=torch.float16)
            b = torch.randn((k, n), device="cuda", dtype=torch.float16)
            ref = a.float() @ b.float()
            for c in configs:
                for splits in ((1,) if c.csplit else sorted({1, min(3, c.max_splits)})):  # (cluster split-K: TMA)
                    choice = Choice("ours", c.id, splits)
                    _lib.set_cpasync(0, lib)
                    assert not _lib.uses_cpasync(c.id, k, n)
                    tma = hgemm(a, b, choice=choice)
                    _lib.set_cpasync(mode, lib)
                    assert _lib.uses_cpasync(c.id, k, n), (c.label, mode)
                    cp = hgemm(a, b, choice=choice)
                    torch.cuda.synchronize()
                    err = ((cp.float() - ref).norm() / ref.norm()).item()
                    if not torch.equal(tma, cp) or not err < 2e-3:
                        failures.append((c.label, splits, (m, n, k), err))
    finally:
        _lib.set_cpasync(_lib.cpasync_mode(), lib)
    assert not failures, failures[:6]


def test_hgemm_runs_ours_on_row_padded_operands():
    """pad_rows views (row stride a multiple of 64, K and N not) go to our kernels with their row
    strides, plain and split-K, and match torch.matmul; unpadded, the same untuned shape is a torch
    fallback (misaligned_rows)."""
    import torch

    from cudaopt.gemm import Choice, hgemm, pad_rows
    from cudaopt.gemm.dispatch import misaligned_rows
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    m, n, k = 1000, 1544, 2056
    a = torch.randn((m, k), device="cuda", dtype=torch.float16)
    b = torch.randn((k, n), device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float()
    torch_err = ((torch.matmul(a, b).float() - ref).norm() / ref.norm()).item()
    pa, pb = pad_rows(a), pad_rows(b)
    out = pad_rows(torch.empty((m, n), device="cuda", dtype=torch.float16))
    assert misaligned_rows(m, n, k) and not misaligned_rows(m, n, k, (pa.stride(0), pb.stride(0), n))
    gen2 = [c for c in WGMMA_CONFIGS if c.schedule != 0 and c.cluster_m == 1 and not c.csplit]
    storage = out._base  # the padded buffer: its padding columns must stay untouched
    # (split-K only where the config has a split-K kernel: the plain-only ping-pongs take splits=1)
    for choice in [None] + [Choice("ours", c.id, s) for c in gen2[::3] for s in ((1, 4) if c.splitk else (1,))]:
        storage.fill_(7.0)
        got = hgemm(pa, pb, out=out, choice=choice)
        torch.cuda.synchronize()
        assert got.data_ptr() == out.data_ptr()
        err = ((got.float() - ref).norm() / ref.norm()).item()
        assert err <= 1.25 * torch_err + 1e-4, (choice, err, torch_err)
        assert (storage[:, n:] == 7.0).all(), choice


def test_wgmma_splitk_runs_on_the_callers_stream():
    """The split-K kernel and its reduce both run on the caller's (non-blocking) stream, after work
    queued there: A is filled on the side stream after a GPU sleep."""
    import torch

    a = torch.randn(512, 2048, device="cuda", dtype=torch.float16)
    b = torch.randn(2048, 512, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float()
    stream = torch.cuda.Stream()
    for choice in _gen2_split_choices(2048)[::3]:
        assert _late_input_error(a, b, ref, stream, choice) < 0.5, choice.label()


def test_wgmma_splitk_refuses_bad_splits_and_small_workspaces():
    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    a = torch.randn(128, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 128, device="cuda", dtype=torch.float16)
    out = torch.empty(128, 128, device="cuda", dtype=torch.float16)
    gen2 = next(c for c in WGMMA_CONFIGS if c.schedule != 0)
    stream = torch.cuda.current_stream().cuda_stream
    ws = torch.zeros(_lib.workspace_bytes(128, 128, 4) // 4, device="cuda", dtype=torch.float32)
    with pytest.raises(_lib.GemmError):  # 256 of K = 4 k-blocks: 8 splits refused
        _lib.launch_ours(a.data_ptr(), b.data_ptr(), out.data_ptr(), 128, 128, 256, gen2.id, 8, ws.data_ptr(),
                         ws.numel() * 4, stream)
    with pytest.raises(_lib.GemmError):  # workspace one float short
        _lib.launch_ours(a.data_ptr(), b.data_ptr(), out.data_ptr(), 128, 128, 256, gen2.id, 4, ws.data_ptr(),
                         ws.numel() * 4 - 4, stream)
    _lib.launch_ours(a.data_ptr(), b.data_ptr(), out.data_ptr(), 128, 128, 256, gen2.id, 4, ws.data_ptr(),
                     ws.numel() * 4, stream)
    torch.cuda.synchronize()
    assert (out.float() - a.float() @ b.float()).abs().max().item() < 0.25


# 2x1 cluster configs (ids 23-24, B multicast along M): large shapes (many pair units per cluster,
# the ring's phases wrap across units), odd tile-row counts (the last pair-row's rank-1 CTA idles
# through its units), M and N tails, K below one slot and below the ring.
CLUSTER_SHAPES = [(8192, 8192, 4096), (8200, 4096, 512), (4104, 1032, 136), (16384, 2048, 256), (128, 256, 64),
                  (200, 136, 264), (4224, 8200, 72), (12416, 4104, 1000),
                  (120, 6152, 1000), (6152, 120, 1000),  # (session 22: the skinny pairs along M and N, tails)
                  # session 24's quads: tile counts not a multiple of four (idle ranks in the last quad), tails, few tiles
                  (64, 12296, 776), (12296, 64, 520), (40, 1000, 100), (1000, 40, 100), (56, 520, 8200)]


def _operands(m, n, k, seed):
    """Random fp16 A and B, their fp32 product and torch.matmul's relative error against it."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn((m, k), generator=gen, device="cuda").half()
    b = torch.randn((k, n), generator=gen, device="cuda").half()
    ref = a.float() @ b.float()
    return a, b, ref, ((torch.matmul(a, b).float() - ref).norm() / ref.norm()).item()


def _assert_check_gemm_ok(cfg, m, n, k):
    """Our config cfg (one split) through every check of check_gemm on (m, n, k), seeded by the shape."""
    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.correctness import check_gemm

    choice = Choice("ours", cfg.id, 1)
    r = check_gemm(lambda a_, b_, out: hgemm(a_, b_, out=out, choice=choice), m, n, k, seed=m + n + k)
    assert r.ok, (cfg.label, r)


def _twin_mismatch(a, b, ref, torch_err, cfg, splits):
    """None where cfg (with `splits`) is within 1.25x torch.matmul's error and bitwise equal to its plain
    twin; otherwise what differs."""
    import torch

    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.configs import plain_twin

    out = hgemm(a, b, choice=Choice("ours", cfg.id, splits))
    want = hgemm(a, b, choice=Choice("ours", plain_twin(cfg).id, splits))
    torch.cuda.synchronize()
    err = ((out.float() - ref).norm() / ref.norm()).item()
    if err <= 1.25 * torch_err + 1e-4 and torch.equal(out, want):
        return None
    return cfg.label, splits, err, torch_err, torch.equal(out, want)


@pytest.mark.parametrize("shape", CLUSTER_SHAPES)
def test_wgmma_cluster_configs_match_torch(shape):
    """Every cluster config against an fp32 reference, within 1.25x torch.matmul's own error, and
    bitwise equal to its non-cluster twin (same tile, same k order per tile: same fp32 sums); the
    first one through every check of check_gemm."""
    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.configs import WGMMA_CONFIGS
    from cudaopt.gemm.correctness import check_gemm

    m, n, k = shape
    a, b, ref, torch_err = _operands(m, n, k, m + 3 * n + 7 * k)
    clusters = [c for c in WGMMA_CONFIGS if c.cluster_m > 1]
    assert clusters
    failures = [f for cfg in clusters if (f := _twin_mismatch(a, b, ref, torch_err, cfg, 1))]
    assert not failures, failures
    first = Choice("ours", clusters[0].id, 1)
    r = check_gemm(lambda a_, b_, out, c=first: hgemm(a_, b_, out=out, choice=c), m, n, k, seed=m + n + k)
    assert r.ok, (clusters[0].label, r)


# The 160-wide tiles (session 26): B and C in 32-column chunks through the 64-byte swizzle. N not a multiple of 32
# (the last chunk's box clipped: 200, 136, 1000, 8200), of 160 (partial last tile), a whole number of chunks past N
# (N = 8 + 160 j leaves four chunks wholly outside C), K tails and K below one slot, many tiles a block, pairs with
# an idle rank (odd tile rows for the pair along M, odd tile columns for the pair along N).
N160_SHAPES = [(8, 8, 8), (200, 136, 264), (130, 1000, 1032), (1000, 168, 40), (4104, 8200, 520), (8192, 8000, 4096),
               (16384, 16384, 512), (384, 4960, 2056)]


@pytest.mark.parametrize("shape", N160_SHAPES)
def test_160_wide_tiles_match_torch_and_each_other(shape):
    """Every 128 x 160 config against an fp32 reference (within 1.25x torch.matmul's own error); the ping-pong
    with two staging buffers and the two pairs bitwise equal to the one-buffer ping-pong (same tile, same k order);
    the first through every check of check_gemm."""
    import torch

    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.configs import WGMMA_CONFIGS, plain_twin

    m, n, k = shape
    a, b, ref, torch_err = _operands(m, n, k, m + 5 * n + 3 * k)
    wide = [c for c in WGMMA_CONFIGS if c.bn == 160]
    assert len(wide) == 5
    failures = []
    for cfg in wide:
        if cfg.cluster_m > 1:
            f = _twin_mismatch(a, b, ref, torch_err, cfg, 1)
        else:
            out = hgemm(a, b, choice=Choice("ours", cfg.id, 1))
            twin = hgemm(a, b, choice=Choice("ours", plain_twin(wide[-1]).id, 1))
            torch.cuda.synchronize()
            err = ((out.float() - ref).norm() / ref.norm()).item()
            same = torch.equal(out, twin) or cfg.schedule != 2  # (the cooperative one: within the bound)
            f = None if err <= 1.25 * torch_err + 1e-4 and same else (cfg.label, err, torch_err, same)
        if f:
            failures.append(f)
    assert not failures, failures
    _assert_check_gemm_ok(wide[0], m, n, k)


# The swapped-operand ping-pongs (session 26): M not a multiple of 160 (the last tile's rows clipped), N of 128 or 64
# (N = 8 + 128 j: the second chunk wholly past N), K tails and K below one slot, many tiles a block.
SWAP_SHAPES = [(8, 8, 8), (200, 136, 264), (161, 1000, 1032), (1000, 72, 40), (4104, 8200, 520), (8000, 8192, 4096),
               (16384, 16384, 512), (4960, 384, 2056)]


@pytest.mark.parametrize("shape", SWAP_SHAPES)
def test_160_wide_swapped_tiles_match_torch_and_each_other(shape):
    """The 160 x 128 ping-pongs with swapped operands and their pairs against an fp32 reference (within 1.25x
    torch.matmul's own error), bitwise equal to each other (same tile, same k order; other rings, staging, clusters);
    the first through every check of check_gemm."""
    import torch

    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    m, n, k = shape
    a, b, ref, torch_err = _operands(m, n, k, 3 * m + n + 5 * k)
    swapped = [c for c in WGMMA_CONFIGS if c.swap and c.bm == 160]
    assert len(swapped) == 4 and swapped[0].cluster_m == 1
    outs = [hgemm(a, b, choice=Choice("ours", c.id, 1)) for c in swapped]
    torch.cuda.synchronize()
    errs = [((o.float() - ref).norm() / ref.norm()).item() for o in outs]
    assert all(e <= 1.25 * torch_err + 1e-4 for e in errs), (errs, torch_err)
    assert [torch.equal(outs[0], o) for o in outs[1:]] == [True] * (len(outs) - 1)
    _assert_check_gemm_ok(swapped[0], m, n, k)


# Session 27's swapped tiles of other heights (192, 176, 168, 144 x 128): M around them (one row past a tile),
# N with a lone last column chunk and an odd tile count (the pair's rank 1 idle past N), K tails and K below one slot.
TALL_SWAP_SHAPES = [(8, 8, 8), (193, 136, 264), (177, 1000, 1032), (145, 8200, 136), (169, 200, 72), (4104, 8200, 520),
                    (8000, 8192, 4096), (16384, 4096, 512), (1000, 72, 40)]


@pytest.mark.parametrize("shape", TALL_SWAP_SHAPES)
def test_taller_swapped_tiles_match_torch_and_their_twins(shape):
    """106-112 against an fp32 reference (within 1.25x torch.matmul's own error); each pair along N bitwise equal to
    its one-CTA twin (same tile, same k order); the one-CTA kernels through every check of check_gemm."""
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    m, n, k = shape
    a, b, ref, torch_err = _operands(m, n, k, 7 * m + 3 * n + k)
    tall = [c for c in WGMMA_CONFIGS if c.swap and c.bm in (144, 168, 176, 192)]
    assert [c.id for c in tall] == [106, 107, 108, 109, 110, 111, 112]
    failures = [f for c in tall if (f := _twin_mismatch(a, b, ref, torch_err, c, 1))]  # (a one-CTA config is its own twin)
    assert not failures, failures
    for c in tall:
        if c.cluster_m == 1:
            _assert_check_gemm_ok(c, m, n, k)


# Session 28's narrow swapped tiles (32 x 64, 32 x 128, 64 x 64; session 29: 16 x 64): M one row past a tile, N with a
# lone last column chunk and past a 128-wide tile, K tails and K below one slot, one-wave and multi-tile grids.
NARROW_SWAP_SHAPES = [(8, 8, 8), (33, 72, 40), (65, 200, 264), (512, 512, 2048), (1000, 136, 1032), (4096, 64, 520),
                      (97, 4104, 136)]


@pytest.mark.parametrize("shape", NARROW_SWAP_SHAPES)
def test_narrow_swapped_tiles_match_torch(shape):
    """113-115 and 122 (session 29's 16 x 64) against an fp32 reference (within 1.25x torch.matmul's own error) and
    through every check of check_gemm; 113 and 114 bitwise equal (the same m64n32 chains over the same k order, one or
    two of them a tile). The pairs 116-119 (113's along M and N, the 64 x 64 ones at 128 B promotion) bitwise equal to
    their one-CTA twins, odd tile counts leaving a pair's second CTA idle."""
    import torch

    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    m, n, k = shape
    a, b, ref, torch_err = _operands(m, n, k, 5 * m + 7 * n + 3 * k)
    narrow = [c for c in WGMMA_CONFIGS if c.swap and c.bm in (16, 32, 64) and c.cluster_m == 1 and not c.ksplit]
    assert [c.id for c in narrow] == [113, 114, 115, 122]
    pairs = [c for c in WGMMA_CONFIGS if c.id >= 116 and c.cluster_m == 2 and c.bn == 64 and c.bm <= 64]
    assert [c.id for c in pairs] == [116, 117, 118, 119]
    failures = [f for c in pairs if (f := _twin_mismatch(a, b, ref, torch_err, c, 1))]
    assert not failures, failures
    outs = [hgemm(a, b, choice=Choice("ours", c.id, 1)) for c in narrow]
    torch.cuda.synchronize()
    errs = [((o.float() - ref).norm() / ref.norm()).item() for o in outs]
    assert all(e <= 1.25 * torch_err + 1e-4 for e in errs), (errs, torch_err)
    assert torch.equal(outs[0], outs[1])
    for c in narrow:
        _assert_check_gemm_ok(c, m, n, k)


# Session 33's k-split ping-pongs (123-125): K of one k-block (consumer 1 idle: its partial must not be added), two and
# three k-blocks (consumer 1 one fewer than consumer 0 at odd counts), K tails, one wave of 64 x 64 tiles at long K, and
# many tiles a block (the shared partial buffer handed back and forth, the ring's phases wrapping across tiles).
KSPLIT_SHAPES = [(8, 8, 8), (72, 200, 40), (130, 264, 128), (65, 136, 136), (512, 1024, 4096), (1000, 520, 1032),
                 (4096, 4096, 520), (97, 4104, 2056)]


@pytest.mark.parametrize("shape", KSPLIT_SHAPES)
def test_ksplit_twins_match_torch_and_are_deterministic(shape):
    """123-125 against an fp32 reference (within 1.25x torch.matmul's own error), through every check of check_gemm,
    bitwise equal from call to call, and bitwise equal to their twins (37, 115, 113) where K fits one k-block (the
    k-split then adds nothing: consumer 1 has no k-block)."""
    import torch

    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.configs import KERNEL_CONFIGS, WGMMA_CONFIGS, wgmma_k_blocks

    m, n, k = shape
    a, b, ref, torch_err = _operands(m, n, k, 13 * m + 5 * n + 7 * k)
    ks = [c for c in WGMMA_CONFIGS if c.ksplit]
    assert [c.id for c in ks] == [123, 124, 125]
    failures = []
    for c, twin in zip(ks, (37, 115, 113)):
        assert KERNEL_CONFIGS[twin].bm == c.bm and KERNEL_CONFIGS[twin].swap == c.swap
        out = hgemm(a, b, choice=Choice("ours", c.id, 1))
        again = hgemm(a, b, choice=Choice("ours", c.id, 1))
        want = hgemm(a, b, choice=Choice("ours", twin, 1))
        torch.cuda.synchronize()
        err = ((out.float() - ref).norm() / ref.norm()).item()
        if err > 1.25 * torch_err + 1e-4 or not torch.equal(out, again) or (
                wgmma_k_blocks(k) == 1 and not torch.equal(out, want)):
            failures.append((c.label, err, torch_err, torch.equal(out, again), torch.equal(out, want)))
    assert not failures, failures
    for c in ks:
        _assert_check_gemm_ok(c, m, n, k)


# Session 28's pairs with split-K (120-121): odd tile-row counts (a pair's second CTA idle), K tails, splits of unequal
# k-block counts, more items than clusters.
SPLITK_PAIR_SHAPES = [(512, 512, 4096), (200, 384, 1000), (136, 72, 4160), (1024, 256, 16384), (8, 8, 136)]


@pytest.mark.parametrize("shape", SPLITK_PAIR_SHAPES)
def test_split_k_pairs_equal_their_twins(shape):
    """120-121 with 1-6 splits: within 1.25x torch.matmul's error and bitwise their one-CTA twins' split-K (the same k
    ranges a split, the same partials, the same reduce)."""
    from cudaopt.gemm.configs import WGMMA_CONFIGS, wgmma_k_blocks

    m, n, k = shape
    a, b, ref, torch_err = _operands(m, n, k, 11 * m + 3 * n + k)
    pairs = [c for c in WGMMA_CONFIGS if c.cluster_splitk]
    assert [c.id for c in pairs] == [120, 121]
    splits = sorted({1, min(2, wgmma_k_blocks(k)), min(5, wgmma_k_blocks(k)), min(6, wgmma_k_blocks(k))})
    failures = [f for c in pairs for sp in splits if (f := _twin_mismatch(a, b, ref, torch_err, c, sp))]
    assert not failures, failures


# B3D configs (session 17): N multiples of 64 with partial last tiles (1024 on 192- and 256-wide tiles: the
# box's chunks past N are zero-filled), K tails and K below one slot; N = 136 runs the twin's own kernels.
B3D_SHAPES = [(1024, 1024, 8192), (200, 192, 1000), (8192, 768, 512), (4104, 1536, 72), (64, 4096, 2048),
              (200, 136, 264)]


@pytest.mark.parametrize("shape", B3D_SHAPES)
def test_wgmma_b3d_configs_equal_their_twins(shape):
    """Every B3D config, plain and split-K, bitwise equal to its twin (the 3-D box lands B's chunks where
    the twin's 2-D boxes do) and within 1.25x torch.matmul's error against fp32."""
    from cudaopt.gemm.configs import WGMMA_CONFIGS, wgmma_k_blocks

    m, n, k = shape
    a, b, ref, torch_err = _operands(m, n, k, m + 5 * n + 11 * k)
    b3d = [c for c in WGMMA_CONFIGS if c.b3d and c.cluster_m == 1]  # (the pair: test_wgmma_cluster_configs_match_torch)
    assert b3d
    splits = sorted({1, min(2, wgmma_k_blocks(k)), min(5, wgmma_k_blocks(k))})
    failures = [f for cfg in b3d for s in splits if (f := _twin_mismatch(a, b, ref, torch_err, cfg, s))]
    assert not failures, failures


# Cluster split-K configs (sessions 12 and 23): tails in M, N and K, and the 64-wide skinny shapes 77-80 are for.
CSPLIT_SHAPES = [(200, 136, 264), (64, 4104, 2056), (4104, 64, 1000), (12288, 64, 520), (64, 12296, 776)]


@pytest.mark.parametrize("shape", CSPLIT_SHAPES)
def test_wgmma_csplit_configs_equal_their_twins(shape):
    """Every cluster split-K config at 2, 3 and 8 splits (as far as K's k-blocks allow) bitwise equal to its
    one-CTA twin's split-K (fp32 partials, then the reduce kernel, splits summed in the same order) and within
    1.25x torch.matmul's error against fp32."""
    from cudaopt.gemm.configs import WGMMA_CONFIGS, wgmma_k_blocks

    m, n, k = shape
    a, b, ref, torch_err = _operands(m, n, k, 3 * m + n + 5 * k)
    csplit = [c for c in WGMMA_CONFIGS if c.csplit]
    assert csplit
    splits = sorted({min(s, wgmma_k_blocks(k)) for s in (2, 3, 8)} - {1})
    failures = [f for cfg in csplit for s in splits if (f := _twin_mismatch(a, b, ref, torch_err, cfg, s))]
    assert not failures, failures


def test_l2_promotion_settings_give_bitwise_equal_results():
    """The tensor maps' L2 promotion (session 23's measurement setting) is a cache hint: every setting gives the
    same bits, for a plain, a split-K, a cluster and a pair-along-N config, tails included; 256 B is restored."""
    import torch

    from cudaopt.gemm import Choice, _lib, hgemm
    from cudaopt.gemm.configs import WGMMA_CONFIGS

    lib = _lib.wgmma_kernels()
    picks = [next(c for c in WGMMA_CONFIGS if c.schedule == 2 and c.cluster_m == 1 and not c.csplit),
             next(c for c in WGMMA_CONFIGS if c.cluster_m > 1 and c.lean and not c.pair_along_n),
             next(c for c in WGMMA_CONFIGS if c.pair_along_n)]
    m, n, k = 1000, 136, 1032
    a, b, _, _ = _operands(m, n, k, 17)
    choices = [Choice("ours", picks[0].id, 1), Choice("ours", picks[0].id, 3), *(Choice("ours", c.id, 1) for c in picks[1:])]
    try:
        for choice in choices:
            _lib.set_l2_promotion(0, lib)
            want = hgemm(a, b, choice=choice)
            for mode in _lib.L2_PROMOTIONS.values():
                _lib.set_l2_promotion(mode, lib)
                got = hgemm(a, b, choice=choice)
                torch.cuda.synchronize()
                assert torch.equal(got, want), (choice.label(), mode)
    finally:
        _lib.set_l2_promotion(0, lib)


def _chain_choices():
    """One choice of every launch shape PDL touches: generation 1, generation 2 plain and split-K (its
    reduce kernel follows), a 2x1 cluster config, and mma.sync with and without split-K."""
    from cudaopt.gemm import Choice
    from cudaopt.gemm.configs import MMA_CONFIGS, WGMMA_CONFIGS

    gen1 = next(c for c in WGMMA_CONFIGS if c.schedule == 0)
    gen2 = next(c for c in WGMMA_CONFIGS if c.schedule != 0 and c.cluster_m == 1)
    cluster = [c for c in WGMMA_CONFIGS if c.cluster_m > 1][:1]
    return [Choice("ours", gen1.id, 1), Choice("ours", gen2.id, 1), Choice("ours", gen2.id, 4),
            *[Choice("ours", c.id, 1) for c in cluster], Choice("ours", MMA_CONFIGS[6].id, 1),
            Choice("ours", MMA_CONFIGS[6].id, 3)]


def _chain_errors(choices, graph: bool, seed: int, transposed: bool = False) -> list[tuple[str, float]]:
    """x <- x @ B_i, five calls, each reading its predecessor's output, per choice (eagerly, or captured in a CUDA
    graph and replayed), against the same chain in fp32 with fp16 rounding between steps: (label, relative error)
    of each choice whose error is not under 5e-3. transposed: every B_i stored transposed (the B^T twins; the caller
    sets CUDAOPT_GEMM_BT=1)."""
    import torch

    from cudaopt.gemm import _lib, hgemm

    _lib.set_pdl(True)
    n = 512
    g = torch.Generator(device="cuda").manual_seed(seed)
    bs = [torch.randn(n, n, device="cuda", dtype=torch.float16, generator=g) / n ** 0.5 for _ in range(5)]
    x0 = torch.randn(n, n, device="cuda", dtype=torch.float16, generator=g)
    if transposed:
        bs = [b.t().contiguous().t() for b in bs]
    ref = x0
    for b in bs:
        ref = (ref.float() @ b.float()).half()
    failures = []
    for choice in choices:
        outs = [torch.full((n, n), float("nan"), device="cuda", dtype=torch.float16) for _ in bs]
        ws = torch.zeros(_lib.workspace_bytes(n, n, choice.splits) // 4 + 1, device="cuda", dtype=torch.float32)

        def chain():
            x = x0
            for b, out in zip(bs, outs):
                x = hgemm(x, b, out=out, workspace=ws, choice=choice)
            return x

        chain()  # eagerly; before a capture, the library's set-up too
        if graph:
            for o in outs:
                o.fill_(float("nan"))
            torch.cuda.synchronize()
            cg = torch.cuda.CUDAGraph()
            with torch.cuda.graph(cg):
                chain()
            for o in outs:
                o.fill_(float("nan"))
            cg.replay()
        torch.cuda.synchronize()
        err = ((outs[-1].float() - ref.float()).norm() / ref.float().norm()).item()
        if not err < 5e-3:
            failures.append((choice.label(), err))
    return failures


@pytest.mark.parametrize("graph", [False, True])
def test_back_to_back_calls_read_their_predecessors_output(graph):
    """With programmatic dependent launch each call may be scheduled under the previous one, which
    writes its input: the chain of _chain_errors, eagerly and inside a CUDA graph, over one choice of each launch
    shape PDL touches. A missing griddepcontrol.wait reads a stale or NaN x."""
    assert not _chain_errors(_chain_choices(), graph, seed=0)


def _table_family_choices():
    """One (config, splits) of every kernel family the shipped table runs as ours (a fallback entry's tuned kernel
    too), with split-K where the table splits: the families the PDL code paths differ by (session 37: a variant of the
    wait's place, the late wait (session 38's default), moves it per body and role). Splits fitted to K = 512."""
    from cudaopt.gemm.configs import KERNEL_CONFIGS
    from cudaopt.gemm.dispatch import fit_splits, load_table

    picks = {}
    for choice in sorted(load_table().values(), key=lambda c: (c.config, c.splits)):
        ours = choice.as_ours()
        cfg = KERNEL_CONFIGS[ours.config]
        key = (cfg.kind, cfg.schedule, cfg.cluster_m > 1, cfg.swap, cfg.ksplit, cfg.csplit, cfg.cluster_splitk,
               cfg.b3d, cfg.lean, ours.splits > 1)
        picks.setdefault(key, fit_splits(ours, 512))
    return list(picks.values())


@pytest.mark.parametrize("graph", [False, True])
def test_back_to_back_calls_of_every_table_family_read_their_predecessors_output(graph):
    """The same chain for one choice of every kernel family the shipped table uses: swapped, k-split, cluster pairs
    and their split-K, in-kernel fixups, not only the few launch shapes of _chain_choices. Run it on a diagnostic
    build too (CUDAOPT_GEMM_DEFINES), since a variant that moves the PDL wait changes each body's code."""
    choices = _table_family_choices()
    assert len(choices) >= 6  # (the shipped table uses a dozen families or more)
    assert not _chain_errors(choices, graph, seed=1)


@pytest.mark.parametrize("graph", [False, True])
def test_back_to_back_b_transposed_calls_read_their_predecessors_output(graph, monkeypatch):
    """The same chain through the B^T twins (session 39): cooperative and ping-pong in our frame, split-K (its reduce
    kernel follows), and swapped; each ran its twin (not torch.matmul)."""
    from cudaopt.gemm import Choice, _lib

    monkeypatch.setenv("CUDAOPT_GEMM_BT", "1")
    ran = []
    real = _lib.launch_ours_bt
    monkeypatch.setattr(_lib, "launch_ours_bt", lambda *args, **kw: (ran.append(args[6]), real(*args, **kw)))
    choices = [Choice("ours", 18, 1), Choice("ours", 42, 1), Choice("ours", 22, 4), Choice("ours", 113, 1)]
    assert not _chain_errors(choices, graph, seed=2, transposed=True)
    assert set(ran) == {18, 42, 22, 113}


def test_cublaslt_fallback_runs_every_listed_algorithm_correctly(monkeypatch):
    """hgemm with a "cublaslt" choice: every algorithm index of the shape's list passes both checks, on
    the caller's stream; an index beyond the list and padded operands go to torch.matmul instead."""
    import torch

    from cudaopt import gemm
    from cudaopt.gemm import Choice, hgemm, lt_fallback, pad_rows
    from cudaopt.gemm.correctness import check_gemm
    from cudaopt.gemm.lt_fallback import clear_plans, plan_for

    ran = []
    real = lt_fallback.lt_matmul
    monkeypatch.setattr(lt_fallback, "lt_matmul", lambda *a, **kw: ran.append(real(*a, **kw)) or ran[-1])
    # hgemm keeps lt_matmul in its import cache (gemm._hot): empty it so the next call takes the wrapper
    monkeypatch.setattr(gemm, "_hot_modules", None)

    m, n, k = 512, 384, 1024
    count = plan_for(torch.cuda.current_device(), m, n, k).count
    assert count >= 1
    failures = []
    for j in range(min(count, 16)):
        choice = Choice("cublaslt", 0, 1, j)
        r = check_gemm(lambda a, b, out, c=choice: hgemm(a, b, out=out, choice=c), m, n, k)
        if not r.ok:
            failures.append((j, r))
    assert not failures, failures[:3]
    assert ran == [True] * (3 * min(count, 16))  # check_gemm's three calls each ran cuBLASLt, not torch
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    ref = torch.matmul(a, b)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        out = hgemm(a, b, choice=Choice("cublaslt", 0, 1, 0))
    s.synchronize()
    assert torch.allclose(out.float(), a.float() @ b.float(), atol=0.25, rtol=1e-2)
    beyond = hgemm(a, b, choice=Choice("cublaslt", 0, 1, 999))
    assert torch.equal(beyond, ref)  # torch.matmul, bit for bit
    padded = hgemm(pad_rows(a, 1088), b, choice=Choice("cublaslt", 0, 1, 0))
    assert torch.equal(padded, ref)
    clear_plans()


def test_lt_fallback_pass_on_two_shapes_writes_a_dispatchable_table(tmp_path):
    import json

    from cudaopt.gemm import dispatch, hgemm
    from cudaopt.gemm.correctness import check_gemm
    from cudaopt.gemm.tune import run_lt_fallbacks

    shapes = [(256, 256, 4096), (1024, 1024, 1024)]
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"device": "x", "entries": [
        {"m": 256, "n": 256, "k": 4096, "backend": "ours", "config": 6, "splits": 1},
        {"m": 1024, "n": 1024, "k": 1024, "backend": "torch", "config": 6, "splits": 1}]}))
    data = run_lt_fallbacks(table, tmp_path / "out.json", log=lambda s: None)
    parsed = dispatch.parse_table(data)
    for e in data["entries"]:
        assert e["lt_fallback"]["checked"]
        choice = parsed[(e["m"], e["n"], e["k"])]
        assert (choice.backend == "cublaslt") == ("replaced" in e["lt_fallback"])
        r = check_gemm(lambda a, b, out, c=choice: hgemm(a, b, out=out, choice=c), *shapes[0 if e["k"] == 4096 else 1])
        assert r.ok, (e, r)


def test_ours_back_pass_then_lt_pass_writes_a_dispatchable_table(tmp_path):
    """Session 34's ours-back pass on a torch and a cuBLASLt fallback: each is checked (ours timed against its
    fallback), the table still parses, and every resulting choice passes both checks; then the cuBLASLt pass runs on
    its output as `tune-gemm-fallbacks --ours-back` does."""
    import json

    import torch

    from cudaopt.gemm import dispatch, hgemm
    from cudaopt.gemm.correctness import check_gemm
    from cudaopt.gemm.lt_fallback import plan_for
    from cudaopt.gemm.tune import run_lt_fallbacks, run_ours_back

    assert plan_for(torch.cuda.current_device(), 1024, 1024, 1024).count >= 1
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"device": "x", "entries": [
        {"m": 256, "n": 256, "k": 4096, "backend": "torch", "config": 6, "splits": 1},
        {"m": 1024, "n": 1024, "k": 1024, "backend": "cublaslt", "lt_algo": 0, "config": 6, "splits": 1,
         "lt_fallback": {"checked": True, "replaced": "ours", "best_algo": 0}}]}))
    out = tmp_path / "out.json"
    data = run_ours_back(table, out, log=lambda s: None)
    assert all(e["ours_back"]["checked"] for e in data["entries"])
    for e in data["entries"]:
        assert (e["backend"] == "ours") == bool(e["ours_back"].get("taken_back")), e
    data = run_lt_fallbacks(out, out, log=lambda s: None)
    parsed = dispatch.parse_table(data)
    for e in data["entries"]:
        s = (e["m"], e["n"], e["k"])
        r = check_gemm(lambda a, b, out, c=parsed[s]: hgemm(a, b, out=out, choice=c), *s)
        assert r.ok, (e, r)


# B^T twins (session 39): B given transposed (b = w.t() of a row-major N x K w, the TN layout of nn.Linear's weight).
# Tails in M, N and K (N = 136 and 520: a partial last tile of B^T's rows; K = 72 and 264: a partial last k-block),
# K below one slot, and two of the large shapes only cuBLASLt's TN layout reached in session 38's grids.
BT_SHAPES = [(64, 64, 64), (200, 136, 264), (1000, 520, 1032), (4104, 1544, 72), (2048, 8192, 4096),
             (256, 12288, 512)]


@pytest.mark.parametrize("shape", BT_SHAPES)
def test_bt_twins_equal_their_kernels_on_b_as_given(shape, monkeypatch):
    """Every config with a B^T twin, plain and (where it has one) split-K, through hgemm with CUDAOPT_GEMM_BT=1 on b
    stored transposed: the twin ran (not
    torch.matmul), its result is bitwise the same config's on B as given (the same wgmmas on the same tiles in the same
    k order: only where the operand comes from differs) and within 1.25x torch.matmul's error against fp32; C's guard
    columns past N (a padded output) untouched."""
    import torch

    from cudaopt.gemm import Choice, _lib, col_stride, hgemm, pad_rows
    from cudaopt.gemm.configs import WGMMA_CONFIGS, wgmma_k_blocks

    monkeypatch.setenv("CUDAOPT_GEMM_BT", "1")
    ran = []
    real = _lib.launch_ours_bt
    monkeypatch.setattr(_lib, "launch_ours_bt", lambda *args, **kw: (ran.append(args[6]), real(*args, **kw)))
    m, n, k = shape
    a, b, ref, torch_err = _operands(m, n, k, 3 * m + 7 * n + k)
    bt = b.t().contiguous().t()  # the same values, stored N x K
    assert col_stride(bt) == k and not bt.is_contiguous()
    twins = [c for c in WGMMA_CONFIGS if _lib.has_bt(c.id)]
    assert len(twins) >= 13
    out = pad_rows(torch.empty((m, n), device="cuda", dtype=torch.float16))
    storage = out._base
    failures, runs = [], []
    # (split-K twins where the config has a split-K kernel: 3 splits, or fewer where K has fewer k-blocks)
    choices = [Choice("ours", c.id, 1) for c in twins] + [
        Choice("ours", c.id, min(3, wgmma_k_blocks(k))) for c in twins if _lib.has_bt(c.id, 2)]
    for choice in choices:
        storage.fill_(7.0)
        hgemm(a, bt, out=out, choice=choice)
        want = hgemm(a, b, choice=choice)
        torch.cuda.synchronize()
        runs.append(choice.config)
        err = ((out.float() - ref).norm() / ref.norm()).item()
        if not (torch.equal(out, want) and err <= 1.25 * torch_err + 1e-4 and (storage[:, n:] == 7.0).all()):
            failures.append((choice.label(), err, torch_err, torch.equal(out, want)))
    assert ran == runs and len(choices) > len(twins)
    assert not failures, failures


def test_bt_twin_passes_every_check_and_the_dispatcher_takes_transposed_b(monkeypatch):
    """One twin through every check of check_gemm (0/1 exact, random normal, guard bands, NaN propagation) with B
    handed over transposed; then hgemm without a choice on transposed B: with CUDAOPT_GEMM_BT=1 or unset the shape's
    choice (its twin, or torch.matmul where the choice has none), with 0 torch.matmul, all matching torch."""
    import torch

    from cudaopt.gemm import Choice, hgemm
    from cudaopt.gemm.correctness import check_gemm

    monkeypatch.setenv("CUDAOPT_GEMM_BT", "1")
    choice = Choice("ours", 42, 1)  # the 128 x 192 ping-pong, the table's most used large-shape config
    r = check_gemm(lambda a_, b_, out: hgemm(a_, b_.t().contiguous().t(), out=out, choice=choice), 1000, 520, 1032,
                   seed=5)
    assert r.ok, r
    for env in ("1", "0", None):  # (None: unset, the default since session 41, routes as "1")
        if env is None:
            monkeypatch.delenv("CUDAOPT_GEMM_BT", raising=False)
        else:
            monkeypatch.setenv("CUDAOPT_GEMM_BT", env)
        for m, n, k in ((2048, 8192, 4096), (1000, 520, 1032), (4096, 4096, 4096)):
            a, b, ref, torch_err = _operands(m, n, k, m + n + k)
            got = hgemm(a, b.t().contiguous().t())
            torch.cuda.synchronize()
            err = ((got.float() - ref).norm() / ref.norm()).item()
            assert err <= 1.25 * torch_err + 1e-4, (env, (m, n, k), err, torch_err)


def test_bt_cublaslt_tn_algorithm_runs_for_a_transposed_b_and_passes_every_check(monkeypatch):
    """(session 42) a choice naming a cuBLASLt TN algorithm (the table's bt_lt_algo): hgemm on B held transposed runs
    that algorithm (lt_matmul, layout 1) for every index of the shape's TN list and passes every check of check_gemm;
    an index beyond the list and a B^T with padded rows take the B^T twin instead; B as given ignores it."""
    import torch

    from cudaopt import gemm
    from cudaopt.gemm import Choice, hgemm, lt_fallback
    from cudaopt.gemm.correctness import check_gemm
    from cudaopt.gemm.lt_fallback import clear_plans, plan_for

    monkeypatch.delenv("CUDAOPT_GEMM_BT", raising=False)
    ran = []
    real = lt_fallback.lt_matmul
    monkeypatch.setattr(lt_fallback, "lt_matmul", lambda *a, **kw: ran.append((kw.get("layout", 0), real(*a, **kw)))
                        or ran[-1][1])
    monkeypatch.setattr(gemm, "_hot_modules", None)  # (hgemm's import cache: take the wrapper)
    m, n, k = 512, 384, 1024
    count = min(plan_for(torch.cuda.current_device(), m, n, k, layout=1).count, 16)
    assert count >= 1
    failures = []
    for j in range(count):
        choice = Choice("ours", 42, 1, -1, j)
        r = check_gemm(lambda a, b, out, c=choice: hgemm(a, b.t().contiguous().t(), out=out, choice=c), m, n, k,
                       seed=j)
        if not r.ok:
            failures.append((j, r))
    assert not failures, failures[:3]
    assert ran == [(1, True)] * (3 * count)  # check_gemm's three calls each ran cuBLASLt TN
    a, b, ref, torch_err = _operands(m, n, k, 7)
    ran.clear()
    for choice, b_op in ((Choice("ours", 42, 1, -1, 999), b.t().contiguous().t()),  # beyond the list: the twin
                         (Choice("ours", 42, 1, -1, 0), gemm.pad_rows(b.t().contiguous(), 1088).t()),  # padded
                         (Choice("ours", 42, 1, -1, 0), b)):  # B as given: the NN choice
        got = hgemm(a, b_op, choice=choice)
        torch.cuda.synchronize()
        err = ((got.float() - ref).norm() / ref.norm()).item()
        assert err <= 1.25 * torch_err + 1e-4, (choice, err, torch_err)
    assert ran == [(1, False)]  # only the index beyond the list asked cuBLASLt (and launched nothing)
    clear_plans()


def test_bench_times_and_checks_the_b_transposed_twins(tmp_path, monkeypatch):
    """bench-gemm with CUDAOPT_GEMM_BENCH_BT=1 (session 39) on two shapes whose table choice has a B^T twin: "ours_bt"
    timed beside the TN baselines and summarised against them, and the twin through every check ("bt_correct")."""
    from cudaopt.gemm import _lib, bench
    from cudaopt.gemm.dispatch import choose

    monkeypatch.setenv("CUDAOPT_GEMM_BENCH_BT", "1")
    shapes = [(2048, 8192, 4096), (1024, 1024, 1024)]
    assert all(_lib.has_bt(c.config, c.splits) for c in (choose(*s).as_ours() for s in shapes))
    res = bench.run_bench(shapes, rounds=3, out_dir=tmp_path, log=lambda s: None)
    assert set(res.times["ours_bt"]) == set(shapes)
    assert all(res.checks[s].get("bt_correct") is True for s in shapes), res.checks
    assert any(s.baseline == "ours_bt vs lt_auto_tn" for s in res.summaries)
    # (session 42) hgemm's B^T route and torch.matmul on the same B^T, timed on every shape, the route labelled
    assert set(res.times["dispatch_bt"]) == set(res.times["torch_bt"]) == set(shapes)
    # (the route the table names: its cuBLASLt TN algorithm where it has one, else the twin of our kernel, else
    # torch.matmul on B^T for a shape it hands to cuBLASLt NN)
    def route(c):
        return c.bt_label() or (c.label() + "_bt" if c.backend == "ours" else "fallback:torch")
    assert {s: res.checks[s]["dispatch_bt"] for s in shapes} == {s: route(choose(*s)) for s in shapes}
    assert any(s.baseline == "dispatch_bt vs torch_bt (paired)" for s in res.summaries)


def test_bench_records_the_cublaslt_algorithm_it_timed_and_the_dispatcher_runs_that_one(tmp_path):
    """(session 40) bench-gemm writes which algorithm "lt_auto_nn" / "lt_auto_tn" were (gemm-table-from-grids hands
    shapes to it); the index means the same algorithm to the dispatcher's cuBLASLt fallback: one product, bit for bit."""
    import csv

    import torch

    from cudaopt.gemm import _lib, bench, hgemm
    from cudaopt.gemm.configs import Choice

    shape = m, n, k = (512, 1024, 2048)
    res = bench.run_bench([shape], rounds=3, out_dir=tmp_path, log=lambda s: None)
    chk = res.checks[shape]
    algo = chk["lt_auto_nn_algo"]
    assert isinstance(algo, int) and algo >= 0 and isinstance(chk["lt_auto_tn_algo"], int), chk
    bench.write_outputs(res, tmp_path, "t")
    with open(tmp_path / "shapes.csv", newline="") as f:
        assert next(csv.DictReader(f))["lt_auto_nn_algo"] == str(algo)

    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    plan = _lib.LtPlan(m, n, k, 0, bench.LT_WORKSPACE)
    try:
        assert algo < plan.count
        ws = torch.empty(bench.LT_WORKSPACE, device="cuda", dtype=torch.uint8)
        c_bench = torch.empty(m, n, device="cuda", dtype=torch.float16)
        plan.run(algo, a.data_ptr(), b.data_ptr(), c_bench.data_ptr(), ws.data_ptr(), bench.LT_WORKSPACE,
                 torch.cuda.current_stream().cuda_stream)
    finally:
        plan.close()
    c_dispatch = hgemm(a, b, choice=Choice("cublaslt", 0, 1, algo))
    assert torch.equal(c_bench, c_dispatch)


# Stream-K twins (session 47): shapes with fewer tiles than SMs (no split: the plain kernel's work), one wave and a
# few tiles (nearly every tile cut in two), 6.06 waves of 128 x 256 tiles on 132 SMs, and ragged M, N, K.
STREAMK_SHAPES = [(1000, 520, 1032), (2176, 2048, 1000), (2100, 2056, 200), (3200, 8192, 1024), (4100, 1544, 3016)]


def _streamk_fn(cid, ws):
    import torch

    from cudaopt.gemm import _lib

    def run(a, b, out):
        m, k = a.shape
        _lib.launch_ours_streamk(a.data_ptr(), b.data_ptr(), out.data_ptr(), m, b.shape[1], k, cid, ws.data_ptr(),
                                 ws.numel() * 4, torch.cuda.current_stream().cuda_stream)
    return run


@pytest.mark.parametrize("shape", STREAMK_SHAPES)
def test_streamk_twins_pass_every_check_and_are_deterministic(shape):
    """Every stream-K twin passes all of check_gemm's checks; with its partial slots NaN-poisoned before each call the
    result is NaN-free (every partial a tile's second contributor reads was written by the first) and two calls are
    bitwise equal (two contributors: a + b == b + a, whichever comes first); the counters are zero after each call."""
    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm.configs import KERNEL_CONFIGS
    from cudaopt.gemm.correctness import check_gemm

    m, n, k = shape
    twins = [c for c in KERNEL_CONFIGS if c.kind == "wgmma" and _lib.has_streamk(c.id)]
    assert len(twins) >= 4
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    failures = []
    for cfg in twins:
        ws = _lib.new_streamk_workspace(cfg.id)
        counters = -(-sms * cfg.consumers * 4 // 256) * 256 // 4
        fn = _streamk_fn(cfg.id, ws)
        r = check_gemm(fn, m, n, k, seed=m + k)
        if not r.ok:
            failures.append((cfg.label, r))
            continue
        a = torch.randn((m, k), device="cuda", dtype=torch.float16)
        b = torch.randn((k, n), device="cuda", dtype=torch.float16)
        outs = []
        for _ in range(2):
            ws[counters:].fill_(float("nan"))
            out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            fn(a, b, out)
            torch.cuda.synchronize()
            outs.append(out)
            if out.isnan().any() or ws[:counters].view(torch.int32).any():
                failures.append((cfg.label, "NaN in C or counters left non-zero"))
        if not torch.equal(outs[0], outs[1]):
            failures.append((cfg.label, "two calls differ"))
    assert not failures, failures[:3]


def test_streamk_refuses_configs_without_a_twin_and_small_workspaces():
    import torch

    from cudaopt.gemm import _lib
    from cudaopt.gemm._lib import GemmError
    from cudaopt.gemm.configs import KERNEL_CONFIGS

    with_twin = next(c for c in KERNEL_CONFIGS if c.kind == "wgmma" and _lib.has_streamk(c.id))
    without = next(c for c in KERNEL_CONFIGS if c.kind == "wgmma" and not _lib.has_streamk(c.id))
    a = torch.randn((512, 512), device="cuda", dtype=torch.float16)
    out = torch.empty_like(a)
    ws = _lib.new_streamk_workspace(with_twin.id)
    stream = torch.cuda.current_stream().cuda_stream
    with pytest.raises(GemmError, match="no stream-K twin"):
        _lib.launch_ours_streamk(a.data_ptr(), a.data_ptr(), out.data_ptr(), 512, 512, 512, without.id, ws.data_ptr(),
                                 ws.numel() * 4, stream)
    with pytest.raises(GemmError):
        _lib.launch_ours_streamk(a.data_ptr(), a.data_ptr(), out.data_ptr(), 512, 512, 512, with_twin.id,
                                 ws.data_ptr(), ws.numel() * 4 - 16, stream)


def test_hgemm_runs_a_stream_k_choice_on_any_stream():
    """A table choice naming the stream-K twin (Choice.streamk) runs it through hgemm: every check passes, and calls on
    a second stream (its own workspace) give the same bits as on the first."""
    import torch

    from cudaopt.gemm import hgemm
    from cudaopt.gemm.configs import KERNEL_CONFIGS, Choice
    from cudaopt.gemm.correctness import check_gemm

    twin = next(c for c in KERNEL_CONFIGS if c.has_streamk_twin and not c.csplit)
    choice = Choice("ours", twin.id, 1, streamk=True)
    m, n, k = 2176, 2048, 1000  # 136 tiles of 128 x 256: 4 tail tiles, split 8 ways
    r = check_gemm(lambda a, b, out: hgemm(a, b, out=out, choice=choice), m, n, k)
    assert r.ok, r
    a = torch.randn((m, k), device="cuda", dtype=torch.float16)
    b = torch.randn((k, n), device="cuda", dtype=torch.float16)
    first = hgemm(a, b, choice=choice)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        second = hgemm(a, b, choice=choice)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    assert torch.equal(first, second)


def test_hgemm_handed_both_layouts_reads_the_one_its_choice_names(monkeypatch):
    """(session 49) hgemm(a, b, b_col_major=...) (the seed's protocol): a choice with both_bt reads the column-major
    copy through the B^T twin, one without reads b through the kernel itself, a "bt" choice with no twin reads the copy
    through torch.matmul; all pass every check of check_gemm; the shipped table's "bt" shapes agree with torch; a copy
    of another shape is refused in one line."""
    import dataclasses

    import torch

    from cudaopt.gemm import Choice, _lib, hgemm
    from cudaopt.gemm.correctness import check_gemm
    from cudaopt.gemm.dispatch import load_table

    monkeypatch.delenv("CUDAOPT_GEMM_BT", raising=False)
    ran = []
    for name in ("launch_ours", "launch_ours_bt"):
        real = getattr(_lib, name)
        monkeypatch.setattr(_lib, name, lambda *args, _n=name, _r=real, **kw: (ran.append(_n), _r(*args, **kw)))
    nn = Choice("ours", 42, 1)
    for choice, want in ((nn, "launch_ours"), (dataclasses.replace(nn, both_bt=True), "launch_ours_bt")):
        ran.clear()
        r = check_gemm(lambda a, b, out, c=choice: hgemm(a, b, out=out, choice=c, b_col_major=b.t().contiguous().t()),
                       1000, 520, 1032, seed=7)
        assert r.ok and set(ran) == {want}, (choice, r, set(ran))
    ran.clear()  # (session 52) a "bt" choice with no B^T kernel: torch.matmul on the copy, no launch of ours
    torch_both = Choice("torch", 42, 1, both_bt=True)
    r = check_gemm(lambda a, b, out: hgemm(a, b, out=out, choice=torch_both, b_col_major=b.t().contiguous().t()),
                   1000, 520, 1032, seed=7)
    assert r.ok and ran == [], (r, ran)
    shapes = [s for s, c in load_table().items() if c.both_bt][:6]
    for m, n, k in shapes:
        a, b, ref, torch_err = _operands(m, n, k, m + n + k)
        got = hgemm(a, b, b_col_major=b.t().contiguous().t())
        torch.cuda.synchronize()
        err = ((got.float() - ref).norm() / ref.norm()).item()
        assert err <= 1.25 * torch_err + 1e-4, ((m, n, k), err, torch_err)
    a, b, _, _ = _operands(256, 512, 128, 1)
    with pytest.raises(ValueError, match="b_col_major must be the same"):
        hgemm(a, b, b_col_major=b.t().contiguous())
