"""The seed corpus: every candidate file is well formed, and the ones that can run here do what their
header says (kind=cpu matches the reference, kind=wrong does not).

CPU candidates compile C++ with load_inline (tens of seconds each on a small CPU, cached afterwards in
torch's extension folder). CUDA candidates are checked the same way by the `gpu`-marked test, on a GPU.
"""

from __future__ import annotations

import ast
import concurrent.futures
import multiprocessing
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from cudaopt.tasks.loader import CORPUS_DIR, apply_size, builtin_tasks, check_candidate, check_reference, import_source

HEADER = re.compile(r"^# cudaopt-corpus: kind=(fast|honest|slow|wrong|cpu) device=(cuda|cpu) note=(\S.*)$")
CORRECT_KINDS = {"fast", "honest", "slow", "cpu"}
# The tasks whose corpus this file vouches for in full (two correct CUDA candidates each).
SEEDED_TASKS = (
    "gelu_tanh_explicit", "softmax_rows", "rmsnorm_explicit", "l2_normalize_rows", "mse_loss", "sum_reduce_rows",
    "hardswish_explicit", "cumsum_rows", "scale_bias_gelu_clamp", "residual_add_relu_scale", "swish_scale_residual",
    "min_reduce_tanh_tanh", "layernorm_gelu", "softmax_mul_sum", "bias_sigmoid_mul", "log_softmax_nll",
)
# Input distributions a correct candidate must survive (the evaluator mixes similar ones): (scale, shift, sign).
TRIALS = ((1.0, 0.0, 1.0), (4.0, 0.0, 1.0), (0.25, 0.0, -1.0), (1.0, 2.0, 1.0), (2.0, -1.0, -1.0))
ATOL = RTOL = 1e-4


@dataclass(frozen=True)
class Candidate:
    path: Path
    task: str
    kind: str
    device: str
    note: str

    @property
    def id(self) -> str:
        return f"{self.task}/{self.path.stem}"

    @property
    def should_match(self) -> bool:
        return self.kind in CORRECT_KINDS


def _candidates() -> list[Candidate]:
    found = []
    for path in sorted(CORPUS_DIR.glob("*/*.py")):
        if path.name.startswith("_"):
            continue
        first = path.read_text().splitlines()[0] if path.read_text() else ""
        m = HEADER.match(first)
        kind, device, note = m.groups() if m else ("?", "?", "")
        found.append(Candidate(path, path.parent.name, kind, device, note))
    return found


CANDIDATES = _candidates()
TASKS = {t.name: t for t in builtin_tasks()}


def _init_params(tree: ast.Module, class_name: str) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return [a.arg for a in item.args.args[1:]]
            return []
    return None


def _extension_name(tree: ast.Module) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "load_inline":
            for kw in node.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                    return kw.value.value
    return None


# ---------------------------------------------------------------------------------------------------------
# Structure (fast: AST only, nothing is compiled)


@pytest.mark.parametrize("cand", CANDIDATES, ids=lambda c: c.id)
def test_candidate_is_well_formed(cand: Candidate):
    source = cand.path.read_text()
    assert HEADER.match(source.splitlines()[0]), f"{cand.id}: first line must be the cudaopt-corpus header"
    assert cand.kind != "cpu" or cand.device == "cpu", f"{cand.id}: kind=cpu needs device=cpu"
    assert cand.task in TASKS, f"{cand.id}: no built-in task named {cand.task!r}"
    tree = ast.parse(source)
    cand_params = _init_params(tree, "ModelNew")
    assert cand_params is not None, f"{cand.id}: defines no class ModelNew"
    ref_params = _init_params(ast.parse(TASKS[cand.task].source), "Model")
    assert cand_params == ref_params, f"{cand.id}: ModelNew({cand_params}) != Model({ref_params})"
    name = _extension_name(tree)
    assert name and name.startswith("co_"), f"{cand.id}: load_inline needs a literal name starting with co_"
    uses_cuda = "cuda_sources" in source
    assert uses_cuda == (cand.device == "cuda"), f"{cand.id}: device={cand.device} but cuda_sources present: {uses_cuda}"
    if cand.device == "cuda":
        for needed in ("getCurrentCUDAStream", "C10_CUDA_KERNEL_LAUNCH_CHECK", "TORCH_CHECK"):
            assert needed in source, f"{cand.id}: CUDA candidates must use {needed}"
        assert "--use_fast_math" not in source, f"{cand.id}: fast math changes results beyond the tolerance"


def test_extension_names_are_unique():
    names = [_extension_name(ast.parse(c.path.read_text())) for c in CANDIDATES]
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes, f"load_inline names used twice: {sorted(dupes)}"


def test_seeded_tasks_have_the_promised_candidates():
    by_task: dict[str, list[Candidate]] = {}
    for c in CANDIDATES:
        by_task.setdefault(c.task, []).append(c)
    for task in SEEDED_TASKS:
        kinds = [(c.kind, c.device) for c in by_task.get(task, [])]
        assert ("fast", "cuda") in kinds and ("honest", "cuda") in kinds, f"{task}: needs a fast and an honest CUDA candidate"
    count = lambda kind, device: sum(1 for t in SEEDED_TASKS if (kind, device) in [(c.kind, c.device) for c in by_task[t]])  # noqa: E731
    assert count("slow", "cuda") >= 6 and count("wrong", "cuda") >= 6
    assert count("cpu", "cpu") >= 6 and count("wrong", "cpu") >= 3


# ---------------------------------------------------------------------------------------------------------
# Behaviour: build, run against the reference on fresh inputs of several distributions


def _transform_inputs(inputs, domain: dict, scale: float, shift: float, sign: float):
    out = []
    for i, t in enumerate(inputs):
        kind = domain.get(i, "any")
        if not (isinstance(t, torch.Tensor) and t.is_floating_point()) or kind == "fixed":
            out.append(t)
        elif kind == "positive":
            out.append(t.abs() * scale + 1e-3)
        else:
            out.append(sign * (t * scale + shift))
    return out


def _mismatch(out, ref, tol: dict) -> str | None:
    """None when `out` matches `ref` within atol * rms(ref) + rtol * |ref|, else why not."""
    if not isinstance(out, torch.Tensor) or out.shape != ref.shape or out.dtype != ref.dtype:
        return f"got {type(out).__name__} {getattr(out, 'shape', None)}, expected {tuple(ref.shape)} {ref.dtype}"
    ref = ref.detach().double()
    out = out.detach().double()
    rms = ref.pow(2).mean().sqrt().item() if ref.numel() else 0.0
    allowed = tol.get("atol", ATOL) * max(rms, 1e-6) + tol.get("rtol", RTOL) * ref.abs()
    err = (out - ref).abs()
    bad = ~(err <= allowed)  # NaN counts as bad
    if bad.any():
        return f"max abs error {err.max().item():.3g} (rms of reference {rms:.3g}), {int(bad.sum())} bad elements"
    return None


_CANDIDATE_MODULES: dict[Path, object] = {}


def _candidate_module(cand: Candidate):
    # Import (and so build) each candidate once per process: loading one extension twice is not supported.
    if cand.path not in _CANDIDATE_MODULES:
        _CANDIDATE_MODULES[cand.path] = import_source(cand.path.read_text(), f"cand_{cand.task}_{cand.path.stem}", str(cand.path))
    return _CANDIDATE_MODULES[cand.path]


def _check_candidate(cand: Candidate, size: str, device: str) -> list[str]:
    """Run one candidate against its reference; returns one mismatch message per failed trial."""
    task = TASKS[cand.task]
    ref_mod = import_source(task.source, f"ref_{cand.task}_{size}", str(task.path))
    check_reference(ref_mod, str(task.path))
    if size == "small":
        apply_size(ref_mod, size)
    cand_mod = _candidate_module(cand)
    check_candidate(cand_mod, ref_mod, str(cand.path))
    init = ref_mod.get_init_inputs()
    torch.manual_seed(1234)
    model = ref_mod.Model(*init).to(device)
    torch.manual_seed(1234)
    model_new = cand_mod.ModelNew(*init).to(device)
    domain = getattr(ref_mod, "INPUT_DOMAIN", {})
    tol = getattr(ref_mod, "TOLERANCE", {})
    failures = []
    with torch.no_grad():
        for trial, (scale, shift, sign) in enumerate(TRIALS):
            torch.manual_seed(100 + trial)
            inputs = [t.to(device) if isinstance(t, torch.Tensor) else t for t in ref_mod.get_inputs()]
            inputs = _transform_inputs(inputs, domain, scale, shift, sign)
            ref = model(*inputs)
            out = model_new(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
            why = _mismatch(out, ref, tol)
            if why:
                failures.append(f"trial {trial} (x{scale:+g} shift {shift:+g} sign {sign:+g}): {why}")
    return failures


CPU_CANDIDATES = [c for c in CANDIDATES if c.device == "cpu"]


def _cxx_available() -> bool:
    from shutil import which

    return which("c++") is not None or which("g++") is not None


@pytest.mark.skipif(not _cxx_available(), reason="needs a C++ compiler for load_inline")
@pytest.mark.timeout(1800)
def test_cpu_candidates_behave_as_labelled():
    # One test builds every CPU candidate once; a failure lists them all rather than stopping at one.
    problems = []
    for cand in CPU_CANDIDATES:
        try:
            failures = _check_candidate(cand, "small", "cpu")
        except Exception as e:  # noqa: BLE001 - a build or run error is a finding about that candidate
            problems.append(f"{cand.id}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            continue
        if cand.should_match and failures:
            problems.append(f"{cand.id} (kind={cand.kind}) does not match the reference: {failures[0]}")
        if not cand.should_match and not failures:
            problems.append(f"{cand.id} (kind=wrong) matches the reference on every trial")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------------------
# GPU: every CUDA candidate at the small size (tails, odd lengths) and the full size


CUDA_CANDIDATES = [c for c in CANDIDATES if c.device == "cuda"]


def _build_one(path: str) -> tuple[str, str | None]:
    try:
        import_source(Path(path).read_text(), "prebuild_" + Path(path).parent.name + "_" + Path(path).stem, path)
        return path, None
    except Exception as e:  # noqa: BLE001
        return path, f"{type(e).__name__}: {e}"


@pytest.fixture(scope="module")
def prebuilt_cuda_candidates():
    """Compile all CUDA candidates in parallel once (load_inline caches the builds for the test itself)."""
    workers = max(1, min(len(CUDA_CANDIDATES), (os.cpu_count() or 2) // 2))
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        return dict(pool.map(_build_one, [str(c.path) for c in CUDA_CANDIDATES]))


def _time_forward(model, inputs, reps: int = 20) -> float:
    for _ in range(3):
        model(*inputs)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        model(*inputs)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps * 1e3  # microseconds


@pytest.mark.gpu
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("cand", CUDA_CANDIDATES, ids=lambda c: c.id)
def test_cuda_candidate_behaves_as_labelled(cand: Candidate, prebuilt_cuda_candidates):
    build_error = prebuilt_cuda_candidates.get(str(cand.path))
    assert build_error is None, f"{cand.id} failed to build: {build_error[:2000]}"
    failures = {size: _check_candidate(cand, size, "cuda") for size in ("small", "full")}
    if cand.should_match:
        assert not any(failures.values()), f"{cand.id} (kind={cand.kind}) does not match: {failures}"
    else:
        assert any(failures.values()), f"{cand.id} (kind=wrong) matches the reference on every trial and size"
    if os.environ.get("CUDAOPT_CORPUS_TIMINGS"):
        # Informational only (never asserted): a rough eager-vs-candidate ratio at the full size.
        task = TASKS[cand.task]
        ref_mod = import_source(task.source, f"time_ref_{cand.task}", str(task.path))
        cand_mod = _candidate_module(cand)
        init = ref_mod.get_init_inputs()
        torch.manual_seed(0)
        model = ref_mod.Model(*init).cuda()
        torch.manual_seed(0)
        model_new = cand_mod.ModelNew(*init).cuda()
        inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in ref_mod.get_inputs()]
        with torch.no_grad():
            t_ref, t_new = _time_forward(model, inputs), _time_forward(model_new, inputs)
        line = f"{cand.id} kind={cand.kind} eager_us={t_ref:.1f} cand_us={t_new:.1f} speedup={t_ref / t_new:.2f}\n"
        with open(os.environ["CUDAOPT_CORPUS_TIMINGS"], "a") as f:
            f.write(line)
