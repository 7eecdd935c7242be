"""The seeds' summary numbers, cost accounting and the Markdown pages."""

from types import SimpleNamespace

import pytest

from cudaopt.report import CostSummary, SuiteTaskRow, cost_of, markdown_table, suite_report, summarize_scores
from cudaopt.report.plots import speedup_histogram


def test_summary_counts_failures_as_zero_and_fast_p():
    s = summarize_scores([None, 0.9, 1.005, 1.6, 3.0])
    assert s.n == 5 and s.success_rate == pytest.approx(0.8)
    assert s.mean == pytest.approx((0 + 0.9 + 1.005 + 1.6 + 3.0) / 5)
    assert s.median == pytest.approx(1.005) and s.p25 == pytest.approx(0.9) and s.p75 == pytest.approx(1.6)
    assert s.above_floor == pytest.approx(0.4)  # 1.005x is within noise, not "optimised"
    assert s.fast_p == pytest.approx({0.0: 0.8, 1.0: 0.6, 1.5: 0.4, 2.0: 0.2})
    assert s.geomean == pytest.approx((0.9 * 1.005 * 1.6 * 3.0) ** 0.25)
    assert summarize_scores([None]).geomean is None and summarize_scores([]).n == 0


def test_cost_per_candidate_and_task():
    recs = [SimpleNamespace(task_id=t, result={"seconds": 2.0} if ev else None, gpu_seconds=3.0 if ev else 0.0,
                            prompt_tokens=100, completion_tokens=50) for t, ev in [(1, True), (1, False), (2, True)]]
    c = cost_of(recs)
    assert (c.tasks, c.candidates, c.evaluated) == (2, 3, 2)
    assert c.gpu_seconds == 6.0 and c.eval_seconds == 4.0 and c.tokens == 450
    assert c.per_candidate(c.tokens) == 150 and c.per_task(c.gpu_seconds) == 3.0
    assert CostSummary(0, 0, 0, 0, 0, 0, 0).per_task(5) == 0.0


def test_suite_report_table(tmp_path):
    rows = [SuiteTaskRow("a", 1, 2.0, 4), SuiteTaskRow("b", 1, None, 4), SuiteTaskRow("c", 2, 1.2, 3)]
    text = suite_report(rows, CostSummary(3, 11, 9, 30.0, 40.0, 1000, 500), None, tmp_path, "demo")
    assert "| level 1 | 2 | 1.00x |" in text  # mean of 2.0 and a failure scored 0
    assert "| all | 3 |" in text and "50.0%" in text
    assert "matplotlib is not installed" in text  # plot None -> a note, not a crash
    assert "| LLM tokens (prompt + completion) | 1500 | 136 | 500 |" in text


def test_markdown_table_and_histogram(tmp_path):
    assert markdown_table(["a", "b"], [[1, 2]]) == "| a | b |\n|---|---|\n| 1 | 2 |"
    pytest.importorskip("matplotlib", reason="plots need matplotlib (pip install 'cudaopt[plot]')")
    p = speedup_histogram([0.9, 1.2, 1.3, 2.5], tmp_path / "h.png")
    assert p.read_bytes()[:4] == b"\x89PNG"
    assert speedup_histogram([], tmp_path / "empty.png").exists()
