"""`cudaopt tasks check`: find tasks on which a zero or constant output would pass.

For each task the reference runs on a few trials of the harness's inputs; then zeros, the output's mean,
and the per-trial mean are compared with the reference under the task's tolerances. If any of them
passes, the task cannot tell a real kernel from a degenerate one (category `degenerate_output`). Each
task runs in its own subprocess: a task file is user code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass

from cudaopt.tasks.loader import Task

CHECK_TRIALS = 3


@dataclass(frozen=True)
class TaskCheck:
    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


def check_one(source: str, size: str = "small", device: str = "cpu", trials: int = CHECK_TRIALS) -> tuple[bool, str]:
    """Run in-process (call it from a subprocess for untrusted files)."""
    import torch

    from cudaopt.evaluate.compare import compare_outputs, flatten_outputs
    from cudaopt.evaluate.inputs import make_inputs, trial_plan
    from cudaopt.evaluate.runner import task_tolerance
    from cudaopt.tasks.loader import apply_size, check_reference, import_source, load_task

    mod = import_source(source, "cudaopt_check_task", "task.py")
    check_reference(mod, "task.py")
    apply_size(mod, size)
    tol = task_tolerance(load_task(source))
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs())
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
    problems = []
    with torch.no_grad():
        for i in range(trials):
            plan = trial_plan(i)
            out = model(*make_inputs(mod, plan.seed, plan.transform, device))
            outs = flatten_outputs(out)
            if not all(isinstance(o, torch.Tensor) for o in outs):
                return False, f"forward returns {type(out).__name__}, not tensors"
            fakes = {
                "zeros": [torch.zeros_like(o) for o in outs],
                "its mean": [torch.full_like(o, float(o.double().nan_to_num().mean())) if o.is_floating_point()
                             else torch.full_like(o, int(o.double().mean().round())) for o in outs],
            }
            for label, fake in fakes.items():
                if compare_outputs(outs, fake, tol.get("atol"), tol.get("rtol")).ok:
                    problems.append(f"trial {i}: a constant output ({label}) passes")
    return (not problems), ("; ".join(sorted(set(problems))) if problems else "zero and constant outputs fail")


def check_tasks(tasks: list[Task], size: str = "small", device: str = "cpu", jobs: int | None = None) -> list[TaskCheck]:
    """Each task in a subprocess of its own (task files are user code), `jobs` at a time."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=jobs or max(1, os.cpu_count() or 1)) as ex:
        return list(ex.map(lambda t: _check_in_subprocess(t, size, device), tasks))


def _check_in_subprocess(t: Task, size: str, device: str) -> TaskCheck:
    code = (
        "import json,sys\nfrom cudaopt.tasks.check import check_one\n"
        "src=sys.stdin.read()\n"
        f"ok,detail=check_one(src,{size!r},{device!r})\nprint(json.dumps([ok,detail]))\n"
    )
    try:
        p = subprocess.run([sys.executable, "-c", code], input=t.source, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return TaskCheck(t.name, False, "reference did not finish within 600 s")
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["failed"])[-1]
        return TaskCheck(t.name, False, f"reference failed to run: {last[:200]}")
    ok, detail = json.loads(p.stdout.strip().splitlines()[-1])
    return TaskCheck(t.name, ok, detail)
