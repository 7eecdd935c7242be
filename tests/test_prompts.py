"""Prompt building from templates (built-in and user-supplied) and answer parsing."""

import pytest

from cudaopt.db.sampling import Exemplar
from cudaopt.prompts import PromptBuilder, PromptTemplateError, parse_response
from cudaopt.tasks.loader import Task

TASK = Task(name="relu_task", level=1, source="import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n")
CODE = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp_min(0)\n"


def test_contrastive_prompt_has_everything():
    ex = [Exemplar(1, "class ModelNew: 'slow'", 0.91), Exemplar(2, "class ModelNew: 'fast'", 2.5)]
    p = PromptBuilder().contrastive(TASK, ex)
    assert "relu_task" in p and "torch.relu(x)" in p
    assert "0.91x" in p and "2.50x" in p and "'slow'" in p and "'fast'" in p
    for section in ("## Performance Analysis", "## Algorithm Design", "## Code Implementation"):
        assert section in p
    for rule in ("Same results as the reference", "No caching", "keep every size", "class ModelNew", "load_inline"):
        assert rule in p
    assert "$" not in p.replace("$$", "")  # every placeholder filled


def test_oneshot_when_nothing_to_contrast():
    b = PromptBuilder()
    assert b.build(TASK, []) == b.oneshot(TASK)
    assert "no earlier implementations" in b.oneshot(TASK)
    assert "## Code Implementation" in b.oneshot(TASK)


def test_user_templates_override_and_are_checked(tmp_path):
    (tmp_path / "oneshot.txt").write_text("Make $task_name fast.\n$reference\n$rules")
    (tmp_path / "rules.txt").write_text("Only rule: be honest on $device_hint.")
    b = PromptBuilder(tmp_path, device_hint="a test GPU")
    assert b.oneshot(TASK).startswith("Make relu_task fast.")
    assert b.oneshot(TASK).endswith("Only rule: be honest on a test GPU.")
    assert "## Earlier implementations" in b.contrastive(TASK, [Exemplar(1, "x", 1.0)])  # built-in fallback
    (tmp_path / "exemplar.txt").write_text("$source at $speed")
    with pytest.raises(PromptTemplateError, match=r"unknown placeholder\(s\) \$speed"):
        PromptBuilder(tmp_path)
    with pytest.raises(PromptTemplateError, match="no such folder"):
        PromptBuilder(tmp_path / "missing")


def test_parser_takes_the_code_implementation_block():
    answer = (
        "## Performance Analysis\nThe first one is slow.\n```python\nclass ModelNew: 'exemplar quote'\n```\n"
        "## Algorithm Design\n1. fuse\n"
        "## Code Implementation\nHere it is:\n```python\n" + CODE + "## not a heading, a comment\n```\nDone.\n"
    )
    r = parse_response(answer)
    assert r.ok and r.code.startswith("import torch") and "## not a heading" in r.code
    assert set(r.sections) >= {"performance analysis", "algorithm design", "code implementation"}


def test_parser_falls_back_to_last_block_defining_modelnew():
    answer = "Some thoughts.\n```python\nprint('helper')\n```\n```py\n" + CODE + "```\n```python\nx = 1\n```\n"
    assert parse_response(answer).code == CODE


@pytest.mark.parametrize(
    "answer, reason",
    [
        ("", "empty"),
        ("I would use shared memory.", "no python code block"),
        ("## Code Implementation\n```python\nx = 1\n```\n", "defines `class ModelNew`"),
        ("## Code Implementation\n```python\n" + CODE + "    return (", "not closed"),
        ("## Code Implementation\n```python\nclass ModelNew(:\n    pass\n```\n", "does not parse: line 1"),
        ("```cpp\nclass ModelNew {};\n```", "no python code block"),
    ],
)
def test_parser_says_why_there_is_no_code(answer, reason):
    r = parse_response(answer)
    assert r.code is None and reason in r.reason
