"""The developer's view of an evaluation's cost: profiles of all three processes, and a cheap reseed."""

from __future__ import annotations

import glob
import os
import pstats

import torch

from cudaopt.evaluate.inputs import seed_generators
from cudaopt.evaluate.profiling import ENV
from cudaopt.evaluate.result import EvalOptions
from cudaopt.evaluate.runner import evaluate
from cudaopt.tasks.loader import identity_candidate, resolve_task


def test_profile_dir_gets_a_profile_from_each_process(tmp_path, monkeypatch):
    task = resolve_task("softmax_rows")
    opts = EvalOptions(device="cpu", trials=4, size="small", budget_s=0.2)
    monkeypatch.delenv(ENV, raising=False)
    assert evaluate(task, identity_candidate(task), opts).status == "ok"  # the forkserver starts without it
    assert not list(tmp_path.iterdir())
    monkeypatch.setenv(ENV, str(tmp_path))
    r = evaluate(task, identity_candidate(task), opts)
    assert r.status == "ok", r.message
    for role in ("parent", "judge", "worker"):
        files = glob.glob(os.path.join(tmp_path, f"{role}-*.prof"))
        assert files, role
        names = {fn for _, _, fn in pstats.Stats(files[0]).stats}  # (file, line, function) keys
        assert names, role
    worker = pstats.Stats(glob.glob(os.path.join(tmp_path, "worker-*.prof"))[0])
    assert any(fn == "correctness" for _, _, fn in worker.stats)  # the worker's own stages are in it


def test_seed_generators_draws_what_manual_seed_draws():
    torch.manual_seed(1234)
    a = torch.randn(64)
    torch.randn(3)  # move the generator on
    seed_generators(1234, "cpu")
    assert torch.equal(torch.randn(64), a)
    assert torch.initial_seed() == 1234  # what a candidate could read: the reseed hides the draw's seed

