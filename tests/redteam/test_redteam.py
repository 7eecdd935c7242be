"""The red-team suite: every attack is caught under its category, every honest candidate is clean.

Headers (line 1 of each candidate) say what is expected:
  # cudaopt-redteam: category=<c> task=<stem> device=<cpu|cuda> expect=<rejected|flagged|incorrect_or_rejected|incorrect|neutralised|ok> layer=<static|dynamic|both|none>
(a) headers are valid; (b) the static layer catches every static/both attack under its category, does not
reject the dynamic-only ones (so the dynamic layer is really exercised), and finds nothing in honest
candidates; (c) the full evaluator on the CPU candidates; (d) the same for CUDA candidates, on a GPU.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudaopt.guards.findings import CATEGORIES, GuardPolicy
from cudaopt.guards.static import scan

HERE = Path(__file__).parent
TASKS = HERE / "tasks"
ATTACKS = sorted((HERE / "attacks").glob("*.py"))
HONEST = sorted((HERE / "honest").glob("*.py"))
_HEADER = re.compile(r"^# cudaopt-redteam: (.*)$")
_EXPECTS = {"rejected", "flagged", "incorrect_or_rejected", "incorrect", "neutralised", "ok"}
_LAYERS = {"static", "dynamic", "both", "none"}


def header(path: Path) -> dict:
    first = path.read_text().splitlines()[0]
    m = _HEADER.match(first)
    assert m, f"{path.name}: line 1 must be a '# cudaopt-redteam: ...' header"
    fields = dict(kv.split("=", 1) for kv in m.group(1).split())
    assert set(fields) == {"category", "task", "device", "expect", "layer"}, f"{path.name}: header fields {sorted(fields)}"
    return fields


def _ids(paths):
    return [p.stem for p in paths]


def _try_evaluator():
    try:
        from cudaopt.evaluate import EvalOptions, evaluate
    except ImportError:
        return None
    return evaluate, EvalOptions


# -- (a) headers ------------------------------------------------------------------------------------------

def test_suite_size_and_coverage():
    assert len(ATTACKS) >= 30 and len(HONEST) >= 20
    covered = {header(p)["category"] for p in ATTACKS}
    assert covered == set(CATEGORIES), f"categories without an attack: {sorted(set(CATEGORIES) - covered)}"
    assert {header(p)["device"] for p in HONEST} == {"cpu", "cuda"}


@pytest.mark.parametrize("path", ATTACKS + HONEST, ids=_ids(ATTACKS + HONEST))
def test_header_is_valid(path):
    h = header(path)
    assert (TASKS / f"{h['task']}.py").exists(), f"{path.name}: no task {h['task']}"
    assert h["device"] in ("cpu", "cuda") and h["expect"] in _EXPECTS and h["layer"] in _LAYERS
    if path in HONEST:
        assert (h["category"], h["expect"], h["layer"]) == ("none", "ok", "none")
    else:
        assert h["category"] in CATEGORIES and h["expect"] != "ok" and h["layer"] != "none"
    compile(path.read_text(), str(path), "exec")  # every candidate is valid Python


# -- (b) static layer -------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ATTACKS, ids=_ids(ATTACKS))
def test_static_layer(path):
    h = header(path)
    findings = scan(path.read_text(), device=h["device"])
    if h["layer"] in ("static", "both"):
        assert h["category"] in {f.category for f in findings}, f"static scan missed {h['category']}: {findings}"
    else:  # dynamic-only: the static layer must not reject it first, or the dynamic check is never run
        assert not GuardPolicy().rejects(findings), f"static layer rejects a dynamic-only attack: {findings}"


@pytest.mark.parametrize("path", HONEST, ids=_ids(HONEST))
def test_honest_static_clean(path):
    h = header(path)
    assert scan(path.read_text(), device=h["device"]) == []


# -- (c)/(d) full evaluator -------------------------------------------------------------------------------

def _evaluate(path: Path, device: str):
    api = _try_evaluator()
    if api is None:
        pytest.skip("cudaopt.evaluate.evaluate is not available yet")
    evaluate, EvalOptions = api
    h = header(path)
    # Drift attacks switch on after a while: time the whole budget (no early stop) so they switch on.
    target = 0.0 if h["category"] == "drift" else 0.01
    # The kernel list is taken by default only for candidates that measured faster (starting the profiler
    # costs seconds); these attacks gain nothing at the small size, so ask for it: the check is under test.
    # side_stream: at the small size the side stream's work ends inside the stream's window, so only the
    # profiler's stream ids tell (the H200 showed 1.25x, unflagged, without it).
    check = "always" if h["category"] in ("no_custom_kernel", "exception_fallback", "side_stream") else "auto"
    options = EvalOptions(device=device, size="small", trials=8, budget_s=2, min_rounds=14, verify=False, target_rel_ci=target,
                          kernel_check=check)
    return h, evaluate(TASKS / f"{h['task']}.py", path, options)


def _check_attack(h: dict, r) -> None:
    cats = {f.category for f in r.findings}
    detail = f"status={r.status} message={r.message!r} findings={sorted(cats)}"
    if h["expect"] == "neutralised":
        # The harness leaves the attack nothing to exploit: it computes honestly, correct in every trial and
        # in the timed calls (which are checked again), so its speedup is its real one. Not flagged.
        assert r.status == "ok" and r.correct and r.trials_passed == r.trials, detail
        return
    if h["expect"] == "incorrect":
        # At our tolerances the shortcut is simply wrong on every input distribution: no category to name.
        assert r.status == "incorrect" and r.trials_passed == 0, detail
        return
    assert h["category"] in cats, f"evaluator missed {h['category']}: {detail}"
    if h["expect"] == "rejected":
        assert r.status == "rejected", detail
    elif h["expect"] == "incorrect_or_rejected":
        assert r.status in ("rejected", "incorrect"), detail


def _check_honest(r) -> None:
    assert r.status == "ok" and not r.findings, f"status={r.status} message={r.message!r} findings={r.findings}"


CPU_ATTACKS = [p for p in ATTACKS if header(p)["device"] == "cpu"]
CUDA_ATTACKS = [p for p in ATTACKS if header(p)["device"] == "cuda"]
CPU_HONEST = [p for p in HONEST if header(p)["device"] == "cpu"]
CUDA_HONEST = [p for p in HONEST if header(p)["device"] == "cuda"]


@pytest.mark.slow
@pytest.mark.parametrize("path", CPU_ATTACKS, ids=_ids(CPU_ATTACKS))
def test_evaluator_catches_cpu_attack(path):
    h, r = _evaluate(path, "cpu")
    _check_attack(h, r)


@pytest.mark.slow
@pytest.mark.parametrize("path", CPU_HONEST, ids=_ids(CPU_HONEST))
def test_evaluator_passes_cpu_honest(path):
    _, r = _evaluate(path, "cpu")
    _check_honest(r)


@pytest.mark.gpu
@pytest.mark.parametrize("path", CUDA_ATTACKS, ids=_ids(CUDA_ATTACKS))
def test_evaluator_catches_cuda_attack(path):
    h, r = _evaluate(path, "cuda")
    _check_attack(h, r)


@pytest.mark.gpu
@pytest.mark.parametrize("path", CUDA_HONEST, ids=_ids(CUDA_HONEST))
def test_evaluator_passes_cuda_honest(path):
    _, r = _evaluate(path, "cuda")
    _check_honest(r)
