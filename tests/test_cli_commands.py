"""The CLI's wiring of the parts: each command reaches its part and answers bad input with exit 2."""

import json
import subprocess
import sys

from cudaopt.db import CandidateRecord, ExemplarDB
from cudaopt.tasks.loader import find_builtin, identity_candidate


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "cudaopt.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_train_export_writes_pairs(tmp_path):
    task = find_builtin("softmax_rows")
    db = ExemplarDB(tmp_path / "db.sqlite")
    with db:
        run = db.start_run("cli-test")
        tid = db.ensure_task(task)
        db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source=identity_candidate(task), status="ok", speedup=1.0))
    out = tmp_path / "sft.jsonl"
    p = cli("train", "export", str(tmp_path / "db.sqlite"), str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1 and "ModelNew" in json.dumps(rows[0])


def test_usage_errors_exit_2(tmp_path):
    assert cli("optimize", "no_such_task", "--device", "cpu").returncode == 2
    p = cli("optimize", "no_such_task")  # the default --device cuda: the task is what is wrong, on any machine
    assert p.returncode == 2 and "no built-in task named" in " ".join(p.stderr.split())
    assert cli("optimize", "--device", "cpu").returncode == 2  # neither a task nor --suite
    assert cli("serve", "--host", "0.0.0.0", "--device", "cpu").returncode == 2  # off loopback without a key
    assert cli("tasks", "list", str(tmp_path / "nothing")).returncode == 2
    p = cli("optimize", "softmax_rows", "--device", "cpu", "--proposers", "compile,fastest")
    assert p.returncode == 2 and "unknown proposer 'fastest'" in " ".join(p.stderr.split())
    assert cli("optimize", "softmax_rows", "--device", "cpu", "--level", "1").returncode == 2  # --level needs --suite


def test_optimize_suite_picks_tasks_by_level_and_name(tmp_path):
    out = tmp_path / "suite"
    p = cli("optimize", "--suite", "--device", "cpu", "--size", "small", "--level", "1", "--filter", "softmax_rows",
            "--proposers", "none", "--budget", "1", "--rounds", "0", "--out", str(out), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    report = (out / "report.md").read_text()
    assert "softmax_rows" in report and "layernorm" not in report


def test_techniques_and_profile_commands(tmp_path):
    task = find_builtin("softmax_rows")
    from cudaopt.tasks.seed_corpus import corpus_entries

    with ExemplarDB(tmp_path / "db.sqlite") as db:
        run = db.start_run("cli-test")
        tid = db.ensure_task(task)
        for i, e in enumerate(e for e in corpus_entries() if e.task == "softmax_rows"):
            db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source=e.source, status="ok", speedup=1.0 + 0.3 * i))
    p = cli("techniques", str(tmp_path / "db.sqlite"), "--out", str(tmp_path / "tech"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "tech" / "techniques.md").exists()
    assert cli("techniques", str(tmp_path / "missing.sqlite")).returncode == 2
    fix = "tests/fixtures"
    p = cli("profile", f"{fix}/tasks/scaled_tanh.py", f"{fix}/candidates/scaled_tanh_torch.py", "--device", "cpu", "--no-ncu")
    assert p.returncode == 0 and "ptxas: no_cuda_source" in p.stdout


def test_eval_profile_option_says_why_there_are_no_metrics(tmp_path):
    fix = "tests/fixtures"
    out = tmp_path / "r.json"
    p = cli("eval", f"{fix}/tasks/scaled_tanh.py", f"{fix}/candidates/scaled_tanh_torch.py", "--device", "cpu", "--size", "small",
            "--trials", "3", "--budget-s", "0.3", "--profile", "--json", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    prof = json.loads(out.read_text())["profile"]
    assert prof["ncu_status"] != "ok" and prof["ncu_reason"] and prof["ptxas_status"] == "no_cuda_source"


def test_knowledge_store_feeds_the_search_prompts(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "relu.md").write_text("Fusing the bias and the ReLU into the matmul epilogue saves a pass over memory.\n")
    store = tmp_path / "store"
    p = cli("knowledge", "add", str(store), str(docs))
    assert p.returncode == 0 and "1 files added" in " ".join(p.stdout.split()), p.stdout + p.stderr
    p = cli("knowledge", "search", str(store), "bias relu epilogue")
    assert p.returncode == 0 and "docs/relu.md" in p.stdout.replace("\n", "")
    assert cli("knowledge", "search", str(tmp_path / "none"), "x").returncode == 2
    fix = "tests/fixtures/llm"
    out = tmp_path / "run"
    p = cli("optimize", f"{fix}/tiny_linear_relu.py", "--device", "cpu", "--size", "small", "--llm", f"replay:{fix}/tiny_linear_relu.jsonl",
            "--budget", "3", "--rounds", "1", "--trials", "3", "--budget-s", "0.2", "--knowledge", str(store), "--out", str(out),
            timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    with ExemplarDB(out / "cudaopt.db") as db:
        prompts = [r.prompt for r in db.candidates() if r.origin in ("llm", "oneshot")]
    assert prompts and all("docs/relu.md" in pr for pr in prompts)


def test_train_grpo_refuses_a_bad_vllm_mode_before_loading_anything():
    p = cli("train", "grpo", "no-such-model", "--vllm", "fast")
    assert p.returncode == 2 and "colocate" in p.stdout + p.stderr


def test_every_command_has_a_one_line_summary():
    """`cudaopt --help` lists each command by the first paragraph of its help; a paragraph that wraps in the source
    keeps its hard line breaks there, so the summary is one line and the details follow a blank line."""
    import typer.main

    from cudaopt.cli import app

    def walk(group, prefix=""):
        for name, cmd in group.commands.items():
            yield prefix + name, cmd
            if hasattr(cmd, "commands"):
                yield from walk(cmd, prefix + name + " ")

    wrapped = [name for name, cmd in walk(typer.main.get_command(app))
               if "\n" in (cmd.help or "").strip().split("\n\n")[0]]
    assert not wrapped, f"commands whose summary spans lines: {wrapped}"


def test_eval_names_a_missing_file_before_looking_at_the_device(tmp_path):
    # The default --device cuda: on a machine without a GPU the missing file is still what is reported.
    p = cli("eval", str(tmp_path / "ref.py"), str(tmp_path / "cand.py"))
    err = " ".join(p.stderr.split())
    assert p.returncode == 2 and "ref.py: no such file" in err, err
    p = cli("eval", "ref.py", str(tmp_path / "cand.py"))  # a bare name: a file, or a built-in task
    err = " ".join(p.stderr.split())
    assert p.returncode == 2 and "ref.py: no such file, nor a built-in task" in err, err
    p = cli("eval", "softmax_rows.py", str(tmp_path / "cand.py"))
    err = " ".join(p.stderr.split())
    assert p.returncode == 2 and "cand.py: no such file" in err, err


def test_reading_commands_refuse_a_missing_database_without_making_one(tmp_path):
    missing = tmp_path / "none.sqlite"
    for args in (("train", "export", str(missing), str(tmp_path / "sft.jsonl")),
                 ("train", "sft", "some-model", str(missing)),
                 ("techniques", str(missing))):
        p = cli(*args)
        err = " ".join(p.stderr.split())
        assert p.returncode == 2 and "no such database file" in err and "Traceback" not in p.stderr, (args, err)
    assert not missing.exists() and not (tmp_path / "sft.jsonl").exists()
    p = cli("train", "sft", "some-model", str(tmp_path / "none.jsonl"))
    assert p.returncode == 2 and "none.jsonl: no such file" in " ".join(p.stderr.split())


def test_profile_answers_missing_files_in_one_line(tmp_path):
    p = cli("profile", "softmax_rows", str(tmp_path / "cand.py"))
    assert p.returncode == 2 and "cand.py: no such file" in " ".join(p.stderr.split()) and "Traceback" not in p.stderr


def test_a_bad_model_spec_or_task_path_is_one_line_from_any_command(tmp_path):
    for args in (("collect", "--llm", "foo", "--device", "cpu", "--out", str(tmp_path / "c")),
                 ("ablation", "--llm", "foo", "--device", "cpu", "--out", str(tmp_path / "a")),
                 ("train", "self", "some-model", "--device", "cpu", "--tasks", str(tmp_path / "none.py"))):
        p = cli(*args)
        assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.startswith("error: "), (args, p.stderr)
    p = cli("collect", "--llm", "foo", "--device", "cpu", "--out", str(tmp_path / "c"))
    assert "http(s)://HOST/v1[#MODEL]" in p.stderr  # the message's brackets are text, not console markup


def test_knowledge_add_checks_every_folder_before_making_the_store(tmp_path):
    p = cli("knowledge", "add", str(tmp_path / "store"), str(tmp_path), str(tmp_path / "none"))
    assert p.returncode == 2 and "none: not a folder" in " ".join(p.stderr.split())
    assert not (tmp_path / "store").exists()
