"""The ablation runner end to end on CPU tasks (replay model, stand-in evaluator) and its table by hand."""

import json
import sys
from pathlib import Path

import pytest

from cudaopt.ablation import ablation_markdown, ablation_rows, run_ablation
from cudaopt.ablation.table import TableRow
from cudaopt.db import ExemplarDB
from cudaopt.report.stats import summarize_scores

FIX = Path(__file__).parent / "fixtures" / "llm"
sys.path.insert(0, str(FIX))
from stub_eval import stub_evaluate


def _answer(mark: str | None) -> str:
    if mark is None:
        return "No code this time."
    return ("## Performance Analysis\nx\n\n## Algorithm Design\n1. y\n\n## Code Implementation\n```python\n"
            f"# fake-speedup: {mark}\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
            "    def __init__(self, features):\n        super().__init__()\n        self.linear = nn.Linear(features, features)\n\n"
            "    def forward(self, x):\n        return torch.relu(self.linear(x))\n```\n")


@pytest.fixture
def setup(tmp_path):
    tasks = []
    for name, level in (("t_a", 1), ("t_b", 1), ("t_c", 2)):
        src = (FIX / "tiny_linear_relu.py").read_text().replace("LEVEL = 1", f"LEVEL = {level}")
        path = tmp_path / "tasks" / f"{name}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(src)
        tasks.append(path)
    replay = tmp_path / "answers.jsonl"
    # One wildcard list answers every task in turn: t_a gets 1.30 then nothing, t_b 0.90 then a wrong one,
    # t_c starts over at 1.30. A fresh backend per variant starts the list again.
    replay.write_text("".join(json.dumps({"task": "*", "response": _answer(m)}) + "\n" for m in ("1.30", None, "0.90", "wrong")))
    return tasks, replay


def test_ablation_end_to_end_with_holdout(tmp_path, setup):
    tasks, replay = setup
    res = run_ablation(tasks, budget=2, rounds=2, per_round=1, llm=f"replay:{replay}", device="cpu", out_dir=tmp_path / "abl",
                       holdout=["t_c"], evaluate_fn=stub_evaluate, quiet=True)
    assert res.split.train == ("t_a", "t_b") and res.split.held_out == ("t_c",)
    ran = {o.variant.name: o.best for o in res.outcomes}
    for name in ("random", "bucket", "island", "no-contrastive"):
        assert ran[name] == {"t_a": 1.30, "t_b": 0.90, "t_c": 1.30}, name
    assert ran["no-smoothing"] == {}

    # Each variant has its own database; no-contrastive prompts never carry exemplars, bucket ones do.
    with ExemplarDB(tmp_path / "abl" / "no-contrastive" / "cudaopt.db") as db:
        assert {r.origin for r in db.candidates()} == {"oneshot"}
    with ExemplarDB(tmp_path / "abl" / "bucket" / "cudaopt.db") as db:
        recs = db.candidates()
        assert {r.origin for r in recs if r.round == 2} == {"llm"} and len({r.task_id for r in recs}) == 3

    md = res.report_path.read_text()
    # Training tasks [1.30, 0.90]: mean 1.10, median 1.10, p25 1.00, p75 1.20, all correct, half above 1.01x.
    assert "| bucket | 2 | 1.10x | 1.10x | 1.00x | 1.20x | 100.0% | 50.0% | 4 |" in md
    # Held-out [1.30] separately.
    held = md.split("## Held-out tasks")[1]
    assert "| random | 1 | 1.30x | 1.30x | 1.30x | 1.30x | 100.0% | 100.0% | 2 |" in held
    assert "| no-smoothing | - | n/a |" in md and "not applicable: reward smoothing is part of training" in md
    assert json.loads(res.summary_path.read_text())["split"]["held_out"] == ["t_c"]


def test_table_numbers_by_hand():
    s = summarize_scores([None, 2.0, 1.005, 3.0])  # a failed task scores 0: [0, 1.005, 2, 3]
    rows = [TableRow("bucket", "train", s, candidates=9), TableRow("no-smoothing", "train", None, note="n/a here")]
    got = ablation_rows(rows, "train")
    # mean 6.005/4 = 1.50; median (1.005+2)/2 = 1.5025; p25 = 0.75*1.005 = 0.754; p75 = 2 + 0.25 = 2.25
    assert got[0] == ["bucket", "4", "1.50x", "1.50x", "0.75x", "2.25x", "75.0%", "50.0%", "9", ""]
    assert got[1][:3] == ["no-smoothing", "-", "n/a"] and got[1][-1] == "n/a here"
    assert "## Held-out tasks" not in ablation_markdown(rows, budget=4)


def test_unknown_variant_and_missing_model(setup, tmp_path):
    tasks, replay = setup
    with pytest.raises(ValueError, match="unknown ablation variant"):
        run_ablation(tasks, variants=("greedy",), llm=f"replay:{replay}", device="cpu", out_dir=tmp_path, quiet=True)
    with pytest.raises(ValueError, match="needs a model"):
        run_ablation(tasks, llm=None, device="cpu", out_dir=tmp_path, quiet=True)
