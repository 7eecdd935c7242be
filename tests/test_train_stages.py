"""The three stages end to end on CPU with tiny models built here (nothing downloaded).

One SFT run teaches a tiny character-level model to answer the one-shot prompt of `tiny_linear_relu`
with a correct ModelNew (memorised from the database). The self-supervised and GRPO stages then start
from that model, with a fake evaluator (and once with the real one). A separate GRPO run with a
word-level model and a reward it can learn shows the mean reward rising.
"""

import json
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="training needs the train extra: pip install 'cudaopt[train]'")

from cudaopt.db import CandidateRecord, ExemplarDB  # noqa: E402
from cudaopt.evaluate.result import EvalOptions, EvalResult, Timing  # noqa: E402
from cudaopt.prompts.parser import parse_response  # noqa: E402
from cudaopt.tasks.loader import load_task  # noqa: E402
from cudaopt.train import export_sft, train_grpo, train_self, train_sft  # noqa: E402
from cudaopt.train.tiny import save_tiny, word_tokenizer  # noqa: E402

FIX = Path(__file__).parent / "fixtures"
RELU = load_task(FIX / "llm" / "tiny_linear_relu.py")
TANH = load_task(FIX / "tasks" / "scaled_tanh.py")
CODE = """import torch
class ModelNew(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = torch.nn.Linear(features, features)
    def forward(self, x):
        return self.linear(x).relu()
"""
ANSWER = f"## Code Implementation\n```python\n{CODE}```\n"


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    # Short prompts keep the tiny model's sequences short (the built-in ones carry the whole reference).
    d = tmp_path_factory.mktemp("templates")
    (d / "oneshot.txt").write_text("Task $task_name\n")
    (d / "contrastive.txt").write_text("Task $task_name after $n_exemplars\n")
    (d / "exemplar.txt").write_text("#$id ${speedup}x\n")
    return d


@pytest.fixture(scope="module")
def sft_model(tmp_path_factory, templates):
    """Export from a database (scaled_tanh held out) and memorise the one answer: stage 1 end to end."""
    root = tmp_path_factory.mktemp("sft")
    with ExemplarDB(root / "db.sqlite") as db:
        run = db.start_run("seed")
        for task in (RELU, TANH):
            tid = db.ensure_task(task)
            db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source=CODE, status="ok", response=ANSWER, speedup=1.1))
            db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source="x", status="incorrect"))
    data = export_sft(root / "db.sqlite", root / "sft.jsonl", holdout="scaled_tanh", template_dir=templates)
    base = save_tiny(root / "tiny", hidden=64, layers=2, max_positions=512)
    # A short warmup: lr 1e-2 from step 0 memorised the answer with GPT-2's 0.1 dropout (tiny models now have
    # none); without dropout and warmup, this seed's greedy answer lost `class ModelNew`.
    result = train_sft(base, data, root / "out", epochs=50, learning_rate=1e-2, batch_size=1, grad_accum=1,
                       max_length=512, save_steps=25, overrides={"warmup_steps": 0.1})
    return root, result


def _fake_eval(task, code, options):
    ok = "class ModelNew" in code and ".relu()" in code
    timing = Timing(speedup_raw=1.3, speedup=1.3, ci_low=1.3, ci_high=1.3, bucket_means=(1.3,) * 7, bucket_variance=0.0,
                    stable=True, rounds=70, ref_time_us=1.0, cand_time_us=0.8, seconds=0.1) if options.timing else None
    return EvalResult(status="ok" if ok else "incorrect", stage_reached="timed" if ok else "correct", correct=ok,
                      timing=timing, task=task.name, compile_seconds=0.25)


def _greedy_answer(model_dir, prompt):
    from cudaopt.llm.transformers_local import TransformersLLM
    from cudaopt.train.modeling import load_model, load_tokenizer

    llm = TransformersLLM(load_model(model_dir), load_tokenizer(model_dir), max_new_tokens=300, temperature=0)
    return llm.generate([prompt])[0].text


def test_sft_learns_the_exported_answer_and_keeps_the_holdout_out(sft_model):
    root, result = sft_model
    assert result.examples == 1 and result.split.held_out == ("scaled_tanh",)
    assert (result.model_dir / "config.json").is_file() and (root / "out" / "checkpoints" / "checkpoint-50").is_dir()
    parsed = parse_response(_greedy_answer(result.model_dir, "Task tiny_linear_relu\n"))
    assert parsed.ok and parsed.code.strip() == CODE.strip()


def test_sft_resume_and_lora(sft_model, tmp_path):
    root, result = sft_model
    # resume: the finished checkpoint is picked up, so no further step runs
    again = train_sft(root / "tiny", root / "sft.jsonl", root / "out", epochs=50, learning_rate=1e-2, batch_size=1,
                      grad_accum=1, max_length=512, save_steps=25, resume=True)
    assert again.resumed_from is not None and again.resumed_from.name == "checkpoint-50"
    lora = train_sft(root / "tiny", root / "sft.jsonl", tmp_path / "lora", lora=True, lora_r=4, lora_target_modules=("c_attn",),
                     epochs=2, learning_rate=1e-3, batch_size=1, grad_accum=1, max_length=512)
    assert (lora.model_dir / "config.json").is_file() and not (lora.model_dir / "adapter_config.json").exists()  # merged


def test_self_stage_keeps_successes_stores_everything_and_resumes(sft_model, tmp_path, templates):
    _, sft = sft_model
    kw = dict(samples_per_task=2, evaluate_fn=_fake_eval, holdout=["scaled_tanh"], max_new_tokens=300, temperature=0,
              epochs=1, learning_rate=1e-4, grad_accum=1, max_length=512, template_dir=templates, db_url=tmp_path / "db.sqlite")
    res = train_self(sft.model_dir, [RELU, TANH], tmp_path / "self", iterations=1, **kw)
    it = res.iterations[0]
    assert it.train["overall"]["success_rate"] == 1.0 and it.trained_on == 2
    assert it.held_out["overall"]["answers"] == 2  # reported apart, never stored or trained on
    assert "scaled_tanh" not in it.train["tasks"] and "tiny_linear_relu" not in it.held_out["tasks"]
    with ExemplarDB(tmp_path / "db.sqlite") as db:
        stored = db.candidates()
        assert len(stored) == 2 and {db.task_info(c.task_id)["name"] for c in stored} == {"tiny_linear_relu"}
    assert Path(res.model_dir).name == "model" and (Path(res.model_dir) / "config.json").is_file()
    # resume: iteration 1 is not repeated, iteration 2 runs from iteration 1's model
    res2 = train_self(sft.model_dir, [RELU, TANH], tmp_path / "self", iterations=2, resume=True, **kw)
    assert [r.iteration for r in res2.iterations] == [1, 2]
    assert len((tmp_path / "self" / "iterations.jsonl").read_text().splitlines()) == 2


@pytest.mark.slow
def test_self_stage_with_the_real_evaluator_on_cpu(sft_model, tmp_path, templates):
    _, sft = sft_model
    opts = EvalOptions(device="cpu", size="small", trials=2, timing=False, verify=False)
    res = train_self(sft.model_dir, [RELU], tmp_path / "self", iterations=1, samples_per_task=1, options=opts,
                     max_new_tokens=300, temperature=0, epochs=1, learning_rate=1e-4, grad_accum=1, max_length=512,
                     template_dir=templates)
    assert res.iterations[0].train["overall"]["successes"] == 1


def test_grpo_end_to_end_prompts_grow_with_the_database(sft_model, tmp_path, templates):
    _, sft = sft_model
    opts = EvalOptions(device="cpu")
    res = train_grpo(sft.model_dir, [RELU, TANH], tmp_path / "grpo", steps=3, group_size=2, max_completion_length=300,
                     evaluate_fn=_fake_eval, options=opts, holdout=["scaled_tanh"], template_dir=templates, learning_rate=1e-5,
                     beta=0.01, epsilon=0.2, save_steps=2, final_eval_samples=1, temperature=0.2)
    assert res.split.held_out == ("scaled_tanh",) and set(res.final_eval) == {"train", "held_out"}
    assert res.final_eval["held_out"]["overall"]["answers"] == 1 and "scaled_tanh" not in res.train["tasks"]
    with ExemplarDB(res.db_url) as db:
        stored = db.candidates()
    assert len(stored) == 6 and all(c.origin == "grpo" for c in stored)  # every scored completion, training tasks only
    assert any(c.status == "ok" for c in stored[:4])
    # once the database holds a success, later prompts are contrastive and name their exemplars
    assert stored[0].parent_ids == () and any(c.parent_ids for c in stored[2:])
    assert any("after" in c.prompt for c in stored[2:])
    ckpt = tmp_path / "grpo" / "checkpoints" / "checkpoint-2"
    assert json.loads((ckpt / "cudaopt_grpo_state.json").read_text())["smoother"]["count"] == 4
    steps = [json.loads(line) for line in (tmp_path / "grpo" / "grpo_steps.jsonl").read_text().splitlines()]
    assert len(steps) == 3 and all(s["seconds"] >= s["eval_seconds"] >= 0 for s in steps)
    # a step splits into generation, evaluation and the rest (the update), which the GPU run reports
    assert all(s["generation_seconds"] > 0 and s["seconds"] >= s["generation_seconds"] + s["eval_seconds"] for s in steps)
    # the evaluations' build seconds are counted apart (the H200 run's long steps were nvcc builds)
    assert sum(s["build_seconds"] for s in steps) == pytest.approx(0.25 * sum(c.status != "parse_error" for c in stored), abs=0.05)
    # resume from the latest checkpoint (the smoother comes back with it) and run to step 4
    from cudaopt.train.modeling import latest_checkpoint

    done = int(latest_checkpoint(tmp_path / "grpo" / "checkpoints").name.split("-")[1])
    res2 = train_grpo(sft.model_dir, [RELU, TANH], tmp_path / "grpo", steps=4, group_size=2, max_completion_length=300,
                      evaluate_fn=_fake_eval, options=opts, holdout=["scaled_tanh"], template_dir=templates,
                      learning_rate=1e-5, save_steps=2, final_eval_samples=0, resume=True, temperature=0.2)
    assert res2.train["overall"]["answers"] == 2 * (4 - done)  # only the steps after the checkpoint


def test_grpo_raises_a_learnable_reward(tmp_path, templates):
    """Reward = share of the word 'a' in the completion; the tiny policy must learn to say it more."""
    words = ["a", "b", "c", "d", "e", "f", "g", "h", "Task", "t1", "t2"]
    model = save_tiny(tmp_path / "tiny", tokenizer=word_tokenizer(words), hidden=32, layers=2, max_positions=64)
    t1 = RELU.__class__("t1", 1, RELU.source)
    t2 = RELU.__class__("t2", 1, RELU.source)

    def share_of_a(task, text):
        toks = text.split()
        return toks.count("a") / len(toks) if toks else 0.0

    res = train_grpo(model, [t1, t2], tmp_path / "grpo", steps=40, group_size=8, max_completion_length=8,
                     reward_fn=share_of_a, template_dir=templates, learning_rate=5e-3, beta=0.0, save_steps=1000,
                     final_eval_samples=0, seed=0)
    rewards = [json.loads(line) for line in (tmp_path / "grpo" / "grpo_rewards.jsonl").read_text().splitlines()]
    by_step: dict[int, list[float]] = {}
    for r in rewards:
        by_step.setdefault(r["step"], []).append(r["raw"])
    means = [sum(v) / len(v) for _, v in sorted(by_step.items())]
    assert len(means) == 40
    first, last = sum(means[:8]) / 8, sum(means[-8:]) / 8
    assert last > first + 0.3, (first, last)
    assert res.train["overall"]["answers"] == 320
