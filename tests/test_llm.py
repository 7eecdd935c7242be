"""LLM backends: replay, the OpenAI-compatible client against a real local HTTP server, transformers."""

import json
from pathlib import Path

import pytest
import torch

from cudaopt.llm import LLMError, ReplayLLM, make_llm
from cudaopt.llm.replay_server import ReplayServer
from cudaopt.llm.transformers_local import TransformersLLM

REPLAY = Path(__file__).parent / "fixtures" / "llm" / "tiny_linear_relu.jsonl"
openai = pytest.importorskip("openai", reason="the HTTP backend needs the openai client (pip install 'cudaopt[llm]')")
from cudaopt.llm.openai_chat import OpenAIChatLLM  # noqa: E402


def _book(tmp_path, records):
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return p


def test_replay_round_robin_by_task(tmp_path):
    p = _book(tmp_path, [{"task": "conv2d", "response": "a"}, {"task": "conv2d", "response": "b"},
                         {"task": "conv2d_relu", "response": "c"}, {"task": "*", "response": "any"}])
    llm = ReplayLLM(p)
    assert [c.text for c in llm.generate(["# Task: conv2d\n..."], n=3)] == ["a", "b", "a"]
    assert llm.generate(["# Task: conv2d_relu"])[0].text == "c"  # longest name wins
    assert llm.generate(["something else"])[0].text == "any"
    assert llm.generate(["x"], task="conv2d")[0].text == "b"
    c = llm.generate(["# Task: conv2d"])[0]
    assert c.prompt_tokens > 0 and c.completion_tokens > 0 and c.model == "replay"


def test_replay_errors_are_one_line(tmp_path):
    with pytest.raises(LLMError, match="no such replay file"):
        ReplayLLM(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"response": "no task"}\n')
    with pytest.raises(LLMError, match=r"bad.jsonl:1: not a replay record"):
        ReplayLLM(bad)
    only = ReplayLLM(_book(tmp_path, [{"task": "t1", "response": "x"}]))
    assert only.generate(["unrelated"])[0].error == "no recorded answer for this task"


def test_openai_client_against_real_local_server():
    with ReplayServer(REPLAY) as srv:
        llm = OpenAIChatLLM(None, srv.base_url, concurrency=3, max_retries=0)  # model from GET /v1/models
        assert llm.model == "replay-model"
        prompts = ["# Task: tiny_linear_relu\nmake it fast"] * 4
        out = llm.generate(prompts, n=2)
        assert len(out) == 8 and srv.requests == 8
        # Round-robin over the six recorded answers: all six appear, tokens come from the server's usage.
        assert len({c.text for c in out}) == 6
        assert all(c.prompt_tokens >= 500 and c.completion_tokens >= 100 for c in out)
        assert all(c.model == "replay-model" and c.finish_reason == "stop" for c in out)
        llm.close()


def test_openai_client_retries_then_reports_failure():
    with ReplayServer(REPLAY, fail_first=1) as srv:
        llm = OpenAIChatLLM("m", srv.base_url, max_retries=2, timeout_s=10)
        [c] = llm.generate(["# Task: tiny_linear_relu"])
        assert c.error == "" and "## Code Implementation" in c.text and srv.requests == 2
    with ReplayServer(REPLAY, fail_first=5) as srv:
        [c] = OpenAIChatLLM("m", srv.base_url, max_retries=0).generate(["# Task: tiny_linear_relu"])
        assert c.text == "" and ("503" in c.error or "InternalServerError" in c.error)


def test_make_llm_specs(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert make_llm(None) is None
    assert isinstance(make_llm(f"replay:{REPLAY}"), ReplayLLM)
    with ReplayServer(REPLAY) as srv:
        llm = make_llm(srv.base_url + "#chosen", max_retries=0)
        assert isinstance(llm, OpenAIChatLLM) and llm.model == "chosen"
    with pytest.raises(LLMError, match="set OPENAI_API_KEY"):
        make_llm("openai:gpt-4o")
    with pytest.raises(LLMError, match="cannot read --llm"):
        make_llm("gpt-4o")


class FakeTokenizer:
    """Enough of a Hugging Face tokenizer: characters are tokens, 0 pads, 1 ends."""

    pad_token_id, eos_token_id, eos_token, chat_template = 0, 1, "<eos>", None
    padding_side = "right"

    def __call__(self, texts, return_tensors="pt", padding=True):
        width = max(len(t) for t in texts)
        ids = torch.zeros(len(texts), width, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, t in enumerate(texts):  # left padding, as the wrapper asks for
            ids[i, width - len(t):] = torch.tensor([ord(ch) for ch in t])
            mask[i, width - len(t):] = 1
        return {"input_ids": ids, "attention_mask": mask}

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(int(i)) for i in ids if int(i) > 1)


class FakeModel:
    """Answers "ok" then end-of-sequence, padded to max_new_tokens; records its generate() arguments."""

    def generate(self, input_ids, attention_mask, max_new_tokens, num_return_sequences, **kw):
        self.kw = kw
        tail = torch.tensor([ord("o"), ord("k"), 1] + [0] * (max_new_tokens - 3))
        rows = input_ids.repeat_interleave(num_return_sequences, dim=0)
        return torch.cat([rows, tail.expand(rows.shape[0], -1)], dim=1)


def test_transformers_wrapper_with_a_fake_model():
    tok = FakeTokenizer()
    llm = TransformersLLM(FakeModel(), tok, max_new_tokens=6, batch_size=2)
    assert tok.padding_side == "left"
    out = llm.generate(["abc", "abcdef", "x"], n=2)
    assert [c.text for c in out] == ["ok"] * 6
    assert [c.prompt_tokens for c in out] == [3, 3, 6, 6, 1, 1]
    assert all(c.completion_tokens == 3 and c.finish_reason == "stop" for c in out)
    assert llm.lm.kw["do_sample"] is True and llm.lm.kw["pad_token_id"] == 0
    with pytest.raises(LLMError, match="pass the tokenizer"):
        TransformersLLM(FakeModel())
