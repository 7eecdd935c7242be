"""Multi-model collection end to end: two replay models behind real local HTTP servers, the real evaluator."""

import json
from pathlib import Path

import pytest

from cudaopt.collect import CollectCell, collect, collect_markdown, summarize_collection
from cudaopt.db import ExemplarDB
from cudaopt.evaluate.result import EvalOptions
from cudaopt.llm.replay_server import ReplayServer
from cudaopt.train.data import export_sft, read_jsonl

pytest.importorskip("openai", reason="the HTTP backend needs the openai client (pip install 'cudaopt[llm]')")

FIX = Path(__file__).parent / "fixtures"
TASK = FIX / "tasks" / "scaled_tanh.py"
GOOD = (FIX / "candidates" / "scaled_tanh_torch.py").read_text()


def _answer(code: str) -> str:
    return f"## Performance Analysis\nOne pass.\n\n## Algorithm Design\n1. Fuse.\n\n## Code Implementation\n```python\n{code}```\n"


def _replay(path: Path, answers: list[str]) -> Path:
    path.write_text("".join(json.dumps({"task": "scaled_tanh", "response": a}) + "\n" for a in answers))
    return path


@pytest.fixture
def replays(tmp_path):
    good = _replay(tmp_path / "good.jsonl", [_answer(GOOD), _answer(GOOD.replace("torch.mul(x, self.w)", "x * self.w"))])
    wrong = GOOD.replace("+ self.b", "- self.b").replace("self.b, torch.ones_like(x)", "-self.b, torch.ones_like(x)")
    bad = _replay(tmp_path / "bad.jsonl", [_answer(wrong), "Shared memory would help; no code today."])
    return good, bad


def test_collect_two_models_real_evaluator_then_resume_and_export(tmp_path, replays):
    good, bad = replays
    opts = EvalOptions(device="cpu", size="small", trials=2, timing=False)
    with ReplayServer(good) as g, ReplayServer(bad) as b:
        llms = [g.base_url + "#good-model", b.base_url + "#bad-model"]
        res = collect([TASK], llms, attempts=3, successes=2, device="cpu", options=opts, out_dir=tmp_path / "out", quiet=True)
    cells = {c.model: c for c in res.cells}
    assert cells["good-model"].successes == 2 and cells["good-model"].attempts == 2  # stopped at the success target
    assert cells["bad-model"].successes == 0 and cells["bad-model"].attempts == 3  # stopped at the attempt limit
    with ExemplarDB(res.db_url) as db:
        recs = db.candidates(run_id=res.run_id)
    # The HTTP backend sends a batch concurrently, so the order within a batch is the server's.
    by_model = {m: sorted(r.status for r in recs if r.model == m) for m in ("good-model", "bad-model")}
    assert by_model == {"good-model": ["ok", "ok"], "bad-model": ["duplicate", "incorrect", "parse_error"]}
    assert all(r.origin == "collect" and "no earlier implementations" in r.prompt for r in recs)
    assert recs[0].result["device"] == "cpu" and recs[0].result["correct"] is True

    report = res.report_path.read_text()
    assert "| good-model | level 0 | 1 | 1 | 2 | 2 | 100.0% |" in report
    assert "| bad-model | all | 1 | 0 | 3 | 0 | 0.0% |" in report
    assert "| all models | all | 2 | 1 | 5 | 2 | 40.0% |" in report
    assert json.loads(res.summary_path.read_text())["models"] == ["good-model", "bad-model"]

    # Resume with a larger limit: the pair at its target asks nothing; the other continues from 3 attempts.
    with ReplayServer(good) as g, ReplayServer(bad) as b:
        llms = [g.base_url + "#good-model", b.base_url + "#bad-model"]
        again = collect([TASK], llms, attempts=4, successes=2, device="cpu", options=opts, out_dir=tmp_path / "out",
                        resume=True, quiet=True)
        assert g.requests == 0 and b.requests == 1
    assert again.run_id == res.run_id
    assert {c.model: (c.attempts, c.successes) for c in again.cells} == {"good-model": (2, 2), "bad-model": (4, 0)}

    # The SFT export reads what was collected: the two distinct successes.
    rows = read_jsonl(export_sft(res.db_url, tmp_path / "sft.jsonl"))
    assert len(rows) == 2 and all(r["task"] == "scaled_tanh" and "class ModelNew" in r["completion"] for r in rows)


def test_duplicate_model_names_are_refused(replays):
    good, _ = replays
    with pytest.raises(ValueError, match="NAME=SPEC"):
        collect([TASK], [f"replay:{good}", f"replay:{good}"], device="cpu", quiet=True)


def test_named_specs_and_summary_counts(tmp_path, replays):
    good, bad = replays

    def stub(task, source, options):  # the evaluator is exercised above; here only the bookkeeping
        from cudaopt.evaluate.result import EvalResult

        ok = "- self.b" not in source and "-self.b" not in source
        return EvalResult(status="ok" if ok else "incorrect", stage_reached="correct", correct=ok, device="cpu")

    res = collect([TASK, TASK], [f"a=replay:{good}", f"b=replay:{bad}"], attempts=5, successes=1, device="cpu",
                  evaluate_fn=stub, out_dir=tmp_path, quiet=True)
    # The same task given twice is collected once; the replay backend answers in order, one at a time.
    assert [(c.model, c.attempts, c.successes) for c in res.cells] == [("a", 1, 1), ("b", 5, 0)]
    with ExemplarDB(res.db_url) as db:
        assert [r.status for r in db.candidates(run_id=res.run_id) if r.model == "b"] == [
            "incorrect", "parse_error", "duplicate", "parse_error", "duplicate"]


def test_markdown_counts_by_hand():
    cells = [CollectCell("t1", 1, "m1", 20, 0), CollectCell("t2", 2, "m1", 3, 2), CollectCell("t1", 1, "m2", 2, 2)]
    s = summarize_collection(cells)
    assert s[("m1", "all")] == {"tasks": 2, "tasks_with_success": 1, "attempts": 23, "successes": 2}
    assert s[("all models", "level 1")] == {"tasks": 2, "tasks_with_success": 1, "attempts": 22, "successes": 2}
    md = collect_markdown(cells)
    assert "| m1 | level 1 | 1 | 0 | 20 | 0 | 0.0% |" in md and "| all models | all | 3 | 2 | 25 | 4 | 16.0% |" in md
