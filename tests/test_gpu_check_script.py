"""scripts/gpu_check.sh's phases: bash runs the first `case` label that matches, so a label written twice silently
leaves its second body dead (session 57 found two `gemm_s56)` phases)."""
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.sh"
# A phase label: two spaces of indent, names joined by |, a closing parenthesis, nothing after it on the line.
LABEL = re.compile(r"^  ([A-Za-z0-9_|*-]+)\)\s*$", re.M)


def phase_labels(text: str) -> list[str]:
    return [name for group in LABEL.findall(text) for name in group.split("|")]


def test_label_parser_sees_a_repeat():
    text = "case $1 in\n  a)\n    x\n    ;;\n  b|a)\n    y\n    ;;\nesac\n"
    assert Counter(phase_labels(text))["a"] == 2


def test_every_phase_label_is_unique():
    labels = phase_labels(SCRIPT.read_text())
    assert len(labels) > 50, "the label pattern no longer matches the script's phases"
    repeated = sorted(name for name, n in Counter(labels).items() if n > 1)
    assert not repeated, f"phases written twice (only the first runs): {repeated}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_script_parses():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
