"""`cudaopt tasks check` flags tasks on which a constant output would pass; the built-in suite has none."""

import json
import subprocess
import sys
from pathlib import Path

from cudaopt.tasks.check import check_tasks
from cudaopt.tasks.loader import builtin_tasks, load_task

FIX = Path(__file__).parent / "fixtures"


def test_offset_dominated_task_is_flagged_and_a_good_one_is_not():
    bad = check_tasks([load_task(FIX / "degenerate" / "offset_dominated.py")])[0]
    good = check_tasks([load_task(FIX / "tasks" / "scaled_tanh.py")])[0]
    assert not bad.ok and "constant output" in bad.detail
    assert good.ok


def test_cli_exit_code_and_json():
    p = subprocess.run([sys.executable, "-m", "cudaopt.cli", "tasks", "check", str(FIX / "degenerate"), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1
    assert json.loads(p.stdout)[0]["ok"] is False


def test_builtin_suite_has_no_degenerate_task():
    reports = check_tasks(builtin_tasks())
    flagged = [(r.name, r.detail) for r in reports if not r.ok]
    assert not flagged, flagged
