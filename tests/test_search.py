"""The search loop end to end on a CPU task: replay answers behind a real local HTTP server."""

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from cudaopt.db import ExemplarDB
from cudaopt.llm import ReplayLLM
from cudaopt.llm.replay_server import ReplayServer
from cudaopt.search import optimize, optimize_suite, propose
from cudaopt.tasks.loader import import_source, load_task

FIX = Path(__file__).parent / "fixtures" / "llm"
TASK = FIX / "tiny_linear_relu.py"
REPLAY = FIX / "tiny_linear_relu.jsonl"
sys.path.insert(0, str(FIX))
from stub_eval import stub_evaluate  # noqa: E402

pytest.importorskip("openai", reason="the HTTP backend needs the openai client (pip install 'cudaopt[llm]')")
from cudaopt.llm.openai_chat import OpenAIChatLLM  # noqa: E402


def test_loop_end_to_end_over_http(tmp_path):
    with ReplayServer(REPLAY) as srv:
        llm = OpenAIChatLLM("m", srv.base_url, concurrency=1)  # one at a time: answers arrive in replay order
        res = optimize(TASK, llm=llm, budget=12, rounds=3, per_round=2, device="cpu",
                       out_dir=tmp_path, evaluate_fn=stub_evaluate, quiet=True)
    assert res.best_speedup == 2.10 and res.stopped == "all 3 rounds done"
    with ExemplarDB(res.db_url) as db:
        recs = db.candidates(run_id=res.run_id)
    # Round 0: the two CPU proposers; rounds 1-3: two answers each, in replay order.
    assert [r.origin for r in recs[:2]] == ["proposer:compile", "proposer:compile-max-autotune"]
    assert [r.status for r in recs[2:]] == ["ok", "parse_error", "ok", "incorrect", "ok", "ok"]
    assert [r.speedup for r in recs if r.status == "ok"] == [1.05, 1.0, 1.30, 1.60, 2.10, 1.90]
    llm_recs = [r for r in recs if r.round > 0]
    assert all(r.origin == "llm" and len(r.parent_ids) == 2 and "## Earlier implementations" in r.prompt for r in llm_recs)
    assert "the answer has no python code block" in recs[3].note
    assert sum(r.prompt_tokens for r in recs) == sum(500 + i for i in range(6))
    assert res.llm_tokens == sum(600 + 2 * i for i in range(6)) and res.gpu_seconds == pytest.approx(0.5 * 7)
    assert "F.linear" not in res.best_path.read_text() and "functional.linear" in res.best_path.read_text()
    report = res.report_path.read_text()
    assert "Best speedup: 2.10x" in report and "## Cost" in report and "parse_error" in report
    assert res.plot_path is not None and res.plot_path.stat().st_size > 0
    assert res.failures == {"parse_error": 1, "incorrect@correct": 1}


def test_oneshot_prompts_without_exemplars_and_patience(tmp_path):
    llm = ReplayLLM(REPLAY)
    res = optimize(TASK, llm=llm, budget=20, rounds=10, per_round=1, patience=2, proposers=(), device="cpu",
                   out_dir=tmp_path, evaluate_fn=stub_evaluate, quiet=True)
    with ExemplarDB(res.db_url) as db:
        recs = db.candidates(run_id=res.run_id)
    assert recs[0].origin == "oneshot" and "no earlier implementations" in recs[0].prompt and recs[0].parent_ids == ()
    assert recs[2].origin == "llm"  # the first success became an exemplar
    # Gains in rounds 1, 3, 5; rounds 6 (1.90 < 2.10) and 7 (the replay wraps: a duplicate) do not gain.
    assert res.stopped == "no improvement in 2 rounds" and [r.status for r in recs][-1] == "duplicate"
    assert len(recs) == 7


def test_no_llm_uses_builtin_proposers_only(tmp_path):
    res = optimize(TASK, device="cpu", out_dir=tmp_path, evaluate_fn=stub_evaluate, quiet=True)
    assert res.candidates == 2 and res.best_speedup == 1.05 and res.stopped.startswith("no LLM")
    assert "built-in proposer: compile" in res.best_path.read_text()


def _count(db_path: Path) -> int:
    if not db_path.exists():
        return 0
    try:
        with ExemplarDB(db_path) as db:
            return db.count()
    except Exception:  # noqa: BLE001 - the child may be creating the schema right now
        return 0


def test_resume_after_kill_loses_nothing_and_repeats_nothing(tmp_path):
    env = {**os.environ, "CUDAOPT_STUB_EVAL_DELAY": "0.4", "PYTHONPATH": os.pathsep.join(sys.path)}
    with ReplayServer(REPLAY) as srv:
        child = subprocess.Popen([sys.executable, str(FIX / "run_search.py"), str(tmp_path), srv.base_url], env=env)
        deadline = time.time() + 120
        while _count(tmp_path / "cudaopt.db") < 1 and child.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        with ExemplarDB(tmp_path / "cudaopt.db") as db:
            before = db.candidates()
        assert 1 <= len(before) < 8, "the child must be killed midway"
        res = optimize(TASK, llm=srv.base_url + "#m", budget=8, rounds=4, per_round=2, patience=10, device="cpu",
                       out_dir=tmp_path, evaluate_fn=stub_evaluate, quiet=True, resume=True)
    with ExemplarDB(res.db_url) as db:
        after = db.candidates()
    assert {r.run_id for r in after} == {res.run_id}  # the same run continued
    assert [(r.id, r.source_hash, r.status) for r in after[: len(before)]] == [(r.id, r.source_hash, r.status) for r in before]
    evaluated = [r.source_hash for r in after if r.result]
    assert len(evaluated) == len(set(evaluated)), "a source was evaluated twice"
    assert len(after) == 8 and res.best_speedup is not None and res.report_path.exists()
    assert sum(r.origin.startswith("proposer:") for r in after) == 2  # proposers not redone on resume


def test_suite_report_per_level(tmp_path):
    for level in (1, 2):
        d = tmp_path / "tasks" / f"level{level}"
        d.mkdir(parents=True)
        (d / f"tiny_{level}.py").write_text(TASK.read_text())
    res = optimize_suite(tmp_path / "tasks", device="cpu", out_dir=tmp_path / "out", evaluate_fn=stub_evaluate, quiet=True)
    assert [t.task for t in res.tasks] == ["tiny_1", "tiny_2"] and res.summary.success_rate == 1.0
    assert res.summary.fast_p[1.0] == 1.0 and res.summary.geomean == pytest.approx(1.05)
    report = res.report_path.read_text()
    for needle in ("| level 1 |", "| level 2 |", "| all |", "fast_1.5", "geomean", ">1.01x", "GPU-seconds", "per task"):
        assert needle in report
    assert (tmp_path / "out" / "level2" / "tiny_2" / "best_kernel.py").exists()


def _built(source: str, name: str, init):
    mod = import_source(source, name)
    torch.manual_seed(0)
    return mod.ModelNew(*init)


def test_proposers_build_the_reference_the_same_way():
    task = load_task(TASK)
    ref = import_source(task.source, "ref_for_proposers")
    torch.manual_seed(0)
    model = ref.Model(*ref.get_init_inputs())
    x = torch.randn(4, 16)
    for name in ("compile", "compile-max-autotune", "cuda-graph"):
        src = propose(task, name).source
        assert "get_inputs" not in src and "class Model(" not in src
        new = _built(src, f"cand_{name.replace('-', '_')}", ref.get_init_inputs())
        assert [k.removeprefix("inner.") for k in new.state_dict()] == list(model.state_dict())
        assert torch.equal(new.inner(x), model(x))  # same weights from the same seed
    graph = _built(propose(task, "cuda-graph").source, "cand_graph_fwd", ref.get_init_inputs())
    with torch.no_grad():
        assert torch.equal(graph(x), model(x))  # CPU tensors: the eager path


@pytest.mark.slow
def test_loop_with_the_real_evaluator_on_cpu(tmp_path):
    from cudaopt.evaluate.result import EvalOptions

    opts = EvalOptions(device="cpu", size="small", trials=3, budget_s=0.5, verify=False)
    res = optimize(TASK, llm=ReplayLLM(REPLAY), budget=4, rounds=2, per_round=2, proposers=(), device="cpu",
                   out_dir=tmp_path, options=opts, quiet=True)
    with ExemplarDB(res.db_url) as db:
        statuses = [r.status for r in db.candidates(run_id=res.run_id)]
    # Replay order: addmm (correct), no code, relu_ (correct), bias dropped (must be caught as incorrect).
    assert statuses == ["ok", "parse_error", "ok", "incorrect"] and res.best_speedup is not None


def test_rounds_evaluate_concurrently_through_the_pool(tmp_path):
    # Two devices: each round's candidates go to an EvaluatorPool; everything is stored, nothing twice.
    import threading

    seen_threads = set()

    def tracking_eval(task, source, options):
        seen_threads.add(threading.current_thread().name)
        return stub_evaluate(task, source, options)

    res = optimize(TASK, llm=ReplayLLM(REPLAY), budget=12, rounds=3, per_round=2, device="cpu", devices=["cpu", "cpu"],
                   out_dir=tmp_path, evaluate_fn=tracking_eval, quiet=True)
    with ExemplarDB(res.db_url) as db:
        recs = db.candidates(run_id=res.run_id)
    assert len(recs) == 8 and res.best_speedup == 2.10
    assert sorted(r.status for r in recs[2:]) == sorted(["ok", "parse_error", "ok", "incorrect", "ok", "ok"])
    assert len({r.source for r in recs if r.source}) == len([r for r in recs if r.source])
    assert {"cudaopt-call-0", "cudaopt-call-1"} <= seen_threads  # both pool slots did work


def test_a_custom_prompt_builder_is_used(tmp_path):
    from cudaopt.prompts.builder import PromptBuilder

    class Marked(PromptBuilder):
        def build(self, task, exemplars):
            return super().build(task, exemplars) + "\n<<custom builder>>"

    res = optimize(TASK, llm=ReplayLLM(REPLAY), budget=4, rounds=1, per_round=2, device="cpu", out_dir=tmp_path,
                   evaluate_fn=stub_evaluate, quiet=True, builder=Marked())
    with ExemplarDB(res.db_url) as db:
        prompts = [r.prompt for r in db.candidates(run_id=res.run_id) if r.origin in ("llm", "oneshot")]
    assert prompts and all("<<custom builder>>" in p for p in prompts)


def _suite_folder(tmp_path: Path, names: list[str]) -> tuple[Path, Path]:
    """A task folder with copies of the tiny task under new names, and a replay file answering each of them."""
    import json

    d = tmp_path / "tasks" / "level1"
    d.mkdir(parents=True)
    lines = [json.loads(x) for x in REPLAY.read_text().splitlines() if x.strip()]
    replay = tmp_path / "answers.jsonl"
    with replay.open("w") as f:
        for name in names:
            (d / f"{name}.py").write_text(TASK.read_text())
            for rec in lines[:2]:
                f.write(json.dumps({**rec, "task": name}) + "\n")
    return tmp_path / "tasks", replay


def _count_read_only(db_path: Path) -> int:
    """Candidates stored so far, read without creating anything (the child may be creating the schema)."""
    import sqlite3

    if not db_path.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=0.1)) as con:
            return con.execute("select count(*) from cudaopt_candidates").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_sigterm_stops_a_suite_run_cleanly_then_report_only_and_resume(tmp_path):
    """`timeout` ends a run with SIGTERM: what was evaluated stays, the report is written, exit 130; then
    --report-only writes the table again without evaluating, and --resume finishes the other tasks."""
    names = ["tiny_a", "tiny_b", "tiny_c"]
    tasks, replay = _suite_folder(tmp_path, names)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "cudaopt.cli", "optimize", str(tasks), "--suite", "--device", "cpu", "--llm",
           f"replay:{replay}", "--proposers", "none", "--budget", "2", "--rounds", "2", "--trials", "2",
           "--budget-s", "0.2", "--out", str(out)]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 240
    while _count_read_only(out / "cudaopt.db") < 1 and child.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert child.poll() is None, "the run ended before it could be stopped: " + (child.stdout.read() or "")[-2000:]
    child.send_signal(signal.SIGTERM)
    log, _ = child.communicate(timeout=120)
    assert child.returncode == 130, log[-2000:]
    assert "interrupted" in log and (out / "report.md").exists(), log[-3000:]
    with ExemplarDB(out / "cudaopt.db") as db:
        before = db.candidates()
    assert 1 <= len(before) < 6 and len({r.task_id for r in before}) < len(names)
    reached = [n for n in names if f"| {n} |" in (out / "report.md").read_text()]
    assert reached and len(reached) < len(names)

    def task_rows():
        with sqlite3.connect(out / "cudaopt.db") as con:
            return con.execute("select count(*) from cudaopt_tasks").fetchone()[0]

    rows_before = task_rows()
    again = subprocess.run(cmd + ["--report-only"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    report = (out / "report.md").read_text()
    assert "not reached" in report and all(f"| {n} |" in report for n in reached)
    with ExemplarDB(out / "cudaopt.db") as db:
        assert len(db.candidates()) == len(before)  # nothing evaluated
    assert task_rows() == rows_before < len(names)  # and nothing written: the unreached tasks stay unstored

    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with ExemplarDB(out / "cudaopt.db") as db:
        after = db.candidates()
    assert len({r.task_id for r in after}) == len(names) and {r.run_id for r in after} == {before[0].run_id}
    assert "not reached" not in (out / "report.md").read_text()


def test_report_only_needs_a_stored_run(tmp_path):
    tasks, replay = _suite_folder(tmp_path, ["tiny_a"])
    p = subprocess.run([sys.executable, "-m", "cudaopt.cli", "optimize", str(tasks), "--suite", "--device", "cpu",
                        "--report-only", "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "no stored run" in (p.stdout + p.stderr)
