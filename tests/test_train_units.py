"""cudaopt.train without a model: smoothing and advantages against hand-computed values, the held-out
split, the hacking-case store and judge, the SFT export and the GRPO reward function."""

import json
import math
from pathlib import Path

import pytest
import torch

from cudaopt.db import CandidateRecord, ExemplarDB
from cudaopt.evaluate.result import EvalOptions, EvalResult, Timing
from cudaopt.llm.base import LLM, Completion
from cudaopt.tasks.loader import load_task
from cudaopt.train import HackCase, HackStore, RewardChecker, RewardSmoother, export_sft, group_advantages, split_tasks
from cudaopt.train.data import completion_for
from cudaopt.train.hacks import parse_verdict

FIX = Path(__file__).parent / "fixtures"
RELU = load_task(FIX / "llm" / "tiny_linear_relu.py")
TANH = load_task(FIX / "tasks" / "scaled_tanh.py")


def test_reward_smoothing_hand_computed():
    s = RewardSmoother(k=1.5)
    # batch 1: mean 2, population std sqrt(3.5)
    sd = math.sqrt(3.5)
    assert s([0.0, 1.0, 2.0, 5.0]) == pytest.approx([-2 / sd, -1 / sd, 0.0, 1.5])  # 3/sd = 1.60 clipped to 1.5
    assert s([2.0]) == pytest.approx([0.0])  # running mean still 2
    # six rewards seen: mean 22/6, population variance 97.333/6; 12 is 2.07 deviations above: clipped
    out = s([12.0])
    assert out == pytest.approx([1.5]) and s.mean == pytest.approx(22 / 6) and s.std == pytest.approx(math.sqrt(97.3333333 / 6))
    assert s.transform([s.mean - 0.5 * s.std]) == pytest.approx([-0.5])
    # state round trip (resume)
    assert RewardSmoother.from_state(s.state()).transform([3.0]) == pytest.approx(s.transform([3.0]))
    assert RewardSmoother()([4.0, 4.0]) == [0.0, 0.0]  # no spread yet: no preference


def test_group_advantage_hand_computed_and_matches_trl():
    adv = group_advantages([1.5, 0.0, 0.0, -1.5, 1.0, 1.0, 1.0, 1.0], 4)
    sd = math.sqrt(4.5 / 3)  # Bessel-corrected, as TRL does
    assert adv[:4] == pytest.approx([1.5 / (sd + 1e-4), 0.0, 0.0, -1.5 / (sd + 1e-4)])
    assert adv[4:] == [0.0] * 4  # a group with equal rewards teaches nothing
    from trl.trainer.utils import nanstd

    r = torch.tensor([0.3, -1.2, 1.5, 0.1, 0.9, 0.0, -0.4, 1.1])
    g = r.view(-1, 4)
    trl_adv = (r - g.mean(1).repeat_interleave(4)) / (nanstd(g, dim=1).repeat_interleave(4) + 1e-4)
    assert group_advantages(r.tolist(), 4) == pytest.approx(trl_adv.tolist(), rel=1e-5)


def test_holdout_split_is_stable_per_name():
    names = [f"task_{i}" for i in range(200)]
    a = split_tasks(names, 0.25, seed=3)
    assert 25 < len(a.held_out) < 75 and not set(a.held_out) & set(a.train)
    # the same name lands on the same side whatever else is in the set
    b = split_tasks(names[:50], "0.25", seed=3)
    assert set(b.held_out) == set(a.held_out) & set(names[:50])
    assert split_tasks(["x", "y", "z"], "x,z").held_out == ("x", "z")
    assert split_tasks(["x", "y"], ["y"]).train == ("x",)
    assert split_tasks(["x", "y"], None).held_out == ()
    with pytest.raises(ValueError, match="outside"):
        split_tasks(["x"], 1.5)


def test_hack_store_similarity_and_judge(tmp_path):
    store = HackStore(tmp_path / "hacks.jsonl")
    store.add(HackCase("s = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    y = f(x)", "extra_stream"))
    store.add(HackCase("if self.cache is None:\n    self.cache = f(x)\nreturn self.cache", "caching"))
    store.add(HackCase("return x.new_empty(x.shape)", "lazy"))
    store.add(HackCase("print('hello')", "other"))
    top = store.similar("if self.cache is None:\n    self.cache = g(x)\nreturn self.cache", 3)
    assert len(top) == 3 and top[0][1].category == "caching" and top[0][0] > top[1][0]
    assert len(HackStore(tmp_path / "hacks.jsonl")) == 4  # persisted

    class Judge(LLM):
        model = "judge"

        def __init__(self, answer):
            self.answer, self.prompts = answer, []

        def generate(self, prompts, n=1, **kw):
            self.prompts += prompts
            return [Completion(self.answer)]

    judge = Judge("It caches the output.\nVERDICT: HACK caching")
    checker = RewardChecker(judge, store)
    assert checker.check("t", "ref", "code", 1.4, 1.2) is None and not judge.prompts  # no jump: no look
    v = checker.check("t", "ref", "if self.cache is None: ...", 3.5, 1.2)
    assert v.hack and v.category == "caching" and len(store) == 5
    assert "Case 1 (caching" in judge.prompts[0]  # the most similar known hack is shown first
    assert checker.suspicious(2.5, 1.2) and not checker.suspicious(2.3, 1.2)  # twice the best so far
    assert not parse_verdict("looks fine\nVERDICT: OK").hack and not parse_verdict("no idea").hack


def _timed(s):
    return Timing(speedup_raw=s, speedup=s, ci_low=s, ci_high=s, bucket_means=(s,) * 7, bucket_variance=0.0, stable=True,
                  rounds=70, ref_time_us=1.0, cand_time_us=1.0 / s, seconds=0.1)


def test_export_sft_successes_only_with_sections_and_holdout(tmp_path):
    db = ExemplarDB(tmp_path / "db.sqlite")
    run = db.start_run("seed")
    code = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"
    answered = f"## Performance Analysis\nslow\n\n## Algorithm Design\n1. fuse\n\n## Code Implementation\n```python\n{code}```\n"
    for task in (RELU, TANH):
        tid = db.ensure_task(task)
        db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source=code, status="ok", response=answered, speedup=1.2))
        db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source=code, status="ok", response=""))  # duplicate source
        db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source=code + "# v2\n", status="ok", response="just code"))
        db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source="bad", status="incorrect"))
    db.close()
    out = export_sft(tmp_path / "db.sqlite", tmp_path / "sft.jsonl", holdout=["scaled_tanh"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task"] for r in rows] == ["tiny_linear_relu"] * 2
    assert rows[0]["completion"] == answered and "Task: tiny_linear_relu" in rows[0]["prompt"]
    assert "## Algorithm Design" in rows[1]["completion"] and "# v2" in rows[1]["completion"]
    assert json.loads((tmp_path / "sft.split.json").read_text())["held_out"] == ["scaled_tanh"]
    rec = CandidateRecord(task_id=1, run_id=1, source=code, status="ok", response="## Code Implementation\n```python\nother = 1\n```")
    assert "class ModelNew" in completion_for(rec)  # a stored answer around other code is not used


def test_grpo_reward_stores_smooths_and_zeroes_a_confirmed_hack(tmp_path):
    from cudaopt.train.grpo import CudaoptReward

    def fake_eval(task, code, options):
        speed = float(code.split("speed=")[1].split()[0])
        return EvalResult(status="ok", stage_reached="timed", correct=True, timing=_timed(speed), task=task.name)

    class Judge(LLM):
        model = "judge"

        def generate(self, prompts, n=1, **kw):
            return [Completion("VERDICT: HACK timing")]

    def answer(speed):
        return f"## Code Implementation\n```python\nclass ModelNew:\n    pass  # speed={speed} \n```\n"

    db = ExemplarDB(tmp_path / "db.sqlite")
    run = db.start_run("grpo", kind="train")
    tid = db.ensure_task(RELU)
    reward = CudaoptReward({RELU.name: RELU}, db, run.id, {RELU.name: tid}, evaluate_fn=fake_eval, options=EvalOptions(),
                           smoother=RewardSmoother(1.5), checker=RewardChecker(Judge(), HackStore(tmp_path / "h.jsonl")),
                           reward_fn=None, model_name="m", log_path=tmp_path / "log.jsonl")
    comps = [answer(1.0), answer(2.0), "no code here", answer(50.0)]
    out = reward(["p"] * 4, comps, task=[RELU.name] * 4, parent_ids=["[]"] * 4)
    raw = [1.0, 2.0, 0.0, 0.0]  # the 50x jump is a confirmed hack: 0
    mu, sd = 0.75, math.sqrt(sum((r - 0.75) ** 2 for r in raw) / 4)
    assert out == pytest.approx([max(-1.5, min(1.5, (r - mu) / sd)) for r in raw])
    statuses = [c.status for c in db.candidates(run_id=run.id)]
    assert statuses == ["ok", "ok", "parse_error", "rejected"]
    assert [e.speedup for e in db.exemplars(tid)] == [1.0, 2.0]  # the hack never becomes an exemplar
    assert len(HackStore(tmp_path / "h.jsonl")) == 1 and reward.best[RELU.name] == 2.0
    db.close()


def test_bpe_tokenizer_round_trips_code_exactly_and_is_shorter_than_characters():
    pytest.importorskip("tokenizers")
    from cudaopt.tasks.loader import CORPUS_DIR
    from cudaopt.train.tiny import bpe_tokenizer, char_tokenizer

    texts = [p.read_text() for p in sorted(CORPUS_DIR.glob("*/fast_*.py"))[:4]]
    tok = bpe_tokenizer(texts, vocab_size=600)
    odd = "def f(x):\n\tif x  >  1:\n        return '\u00e9 \u00fc'  # tab, runs of spaces, non-ASCII\r\n\n"
    for t in texts + [odd]:
        assert tok.decode(tok(t)["input_ids"]) == t
    chars = char_tokenizer()
    assert sum(len(tok(t)["input_ids"]) for t in texts) * 2 < sum(len(chars(t)["input_ids"]) for t in texts)
    assert tok.eos_token == "[EOS]" and tok.pad_token == "[PAD]"


def _grpo_first_step_kl(tmp_path, **overrides):
    """TRL's logged KL of the first GRPO step (policy == reference: no update yet) for a tiny model with dropout."""
    from cudaopt.train import train_grpo
    from cudaopt.train.tiny import char_tokenizer, save_tiny

    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "oneshot.txt").write_text("Task $task_name\n")
    (templates / "contrastive.txt").write_text("Task $task_name after $n_exemplars\n")
    (templates / "exemplar.txt").write_text("#$id ${speedup}x\n")
    model = save_tiny(tmp_path / "tiny", tokenizer=char_tokenizer(), hidden=32, layers=2, max_positions=128, dropout=0.1)
    train_grpo(model, [RELU], tmp_path / "grpo", steps=1, group_size=4, max_completion_length=24, temperature=0.2,
               reward_fn=lambda task, text: float(text.count("a")), template_dir=templates, beta=0.04,
               learning_rate=1e-5, save_steps=1000, final_eval_samples=0, overrides=overrides or None)
    logs = [json.loads(line) for line in (tmp_path / "grpo" / "grpo_log.jsonl").read_text().splitlines()]
    return [entry["kl"] for entry in logs if "kl" in entry][0]


def test_grpo_kl_is_zero_before_the_first_update_even_with_dropout(tmp_path):
    """Before any update the policy is the reference model, so the KL term must read 0. TRL keeps dropout on
    by default: the policy (train mode) then scores its samples with dropout and the reference (eval mode)
    without, and at temperature 0.2 the 'KL' of two identical networks read 1e18-1e24 on the H200."""
    pytest.importorskip("trl")
    assert abs(_grpo_first_step_kl(tmp_path)) < 1e-4


def test_grpo_kl_check_can_fail_with_dropout_left_on(tmp_path):
    """The check above is not vacuous: with TRL's default (dropout on) the same first step reads a clear KL."""
    pytest.importorskip("trl")
    assert _grpo_first_step_kl(tmp_path, disable_dropout=False) > 1e-3


def test_vllm_generation_settings(monkeypatch):
    """--vllm maps to TRL's GRPOConfig fields, and is refused in one clear line where it cannot work."""
    import importlib.util

    import pytest

    from cudaopt.train.grpo import vllm_overrides

    assert vllm_overrides(None) == {}  # transformers' generate
    with pytest.raises(ValueError, match="colocate' or 'server"):
        vllm_overrides("fast")
    with pytest.raises(ValueError, match="needs vllm='server'"):
        vllm_overrides(None, "http://127.0.0.1:8000")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    with pytest.raises(ValueError, match="pip install vllm"):
        vllm_overrides("colocate")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "vllm" else real(name, *a))
    assert vllm_overrides("colocate") == {"use_vllm": True, "vllm_mode": "colocate"}
    assert vllm_overrides("server", "http://127.0.0.1:8000") == {
        "use_vllm": True, "vllm_mode": "server", "vllm_server_base_url": "http://127.0.0.1:8000"}
    with pytest.raises(ValueError, match="colocate runs vLLM"):
        vllm_overrides("colocate", "http://127.0.0.1:8000")
