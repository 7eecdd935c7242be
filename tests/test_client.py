"""The Python client and the GRPO reward, against a real server running a fake evaluator."""

from __future__ import annotations

import threading

import pytest

from cudaopt.client import Client, ServiceError, completion_text, make_grpo_reward, request_body
from cudaopt.evaluate.result import EvalResult
from cudaopt.pool import EvaluatorPool
from cudaopt.pool.snippet import fake_timing
from cudaopt.service import BackgroundServer, create_app

TASK = "matrix_vector"
REFERENCE = "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n"


def speedup_from_source(reference, candidate, options):
    """The candidate says its own fate: `SPEEDUP = 2.5` is ok at 2.5x, `FAIL = 1` is incorrect."""
    scope: dict = {}
    exec(compile(candidate, "<candidate>", "exec"), {"__builtins__": {}}, scope) if "class" not in candidate else None
    if "FAIL" in candidate:
        return EvalResult(status="incorrect", stage_reached="correct", message="wrong answer", device=options.device)
    speedup = float(scope.get("SPEEDUP", 1.0)) if scope else 1.2
    return EvalResult(status="ok", stage_reached="timed", correct=True, timing=fake_timing(speedup, 0.0),
                      device=options.device, task=getattr(reference, "name", ""),
                      message=f"trials={options.trials}")


@pytest.fixture(scope="module")
def url():
    pool = EvaluatorPool(["cpu"] * 2, speedup_from_source)
    with BackgroundServer(create_app(pool, api_key="k3y")) as url:
        yield url
    pool.close()


@pytest.fixture
def client(url):
    with Client(url, api_key="k3y", timeout=60) as c:
        yield c


def test_evaluate_with_sources_paths_and_task_names(client, tmp_path):
    ref = tmp_path / "ref.py"
    ref.write_text(REFERENCE)
    cand = tmp_path / "cand.py"
    cand.write_text("SPEEDUP = 1.5\n")
    assert client.evaluate(str(ref), str(cand))["speedup"] == 1.5
    assert client.evaluate(ref, "SPEEDUP = 2.0")["speedup"] == 2.0
    by_name = client.evaluate(TASK, "SPEEDUP = 1.1", trials=7)
    assert by_name["task"] == TASK and by_name["message"] == "trials=7"
    assert client.evaluate(candidate="SPEEDUP = 1.3", task=TASK)["speedup"] == 1.3


def test_evaluate_batch_in_order_including_beyond_one_request(client):
    pairs = [(REFERENCE, f"SPEEDUP = {1 + i / 1000}") for i in range(300)]  # 300 > one request's 256
    results = client.evaluate_batch(pairs, trials=2)
    assert [r["speedup"] for r in results] == [1 + i / 1000 for i in range(300)]
    mixed = client.evaluate_batch([(TASK, "SPEEDUP = 3.0"), {"task": TASK, "candidate": "FAIL = 1"}])
    assert [r["status"] for r in mixed] == ["ok", "incorrect"]
    assert client.evaluate_batch([]) == []


def test_submit_then_wait(client):
    job_id = client.submit(TASK, "SPEEDUP = 1.7")
    assert client.wait(job_id, timeout=30)["speedup"] == 1.7
    assert client.job(job_id)["state"] == "done"


def test_service_refusals_raise_with_the_service_message(client, url):
    with pytest.raises(ServiceError, match="candidate is not valid Python") as err:
        client.evaluate(TASK, "def (")
    assert err.value.status_code == 422
    with pytest.raises(ServiceError, match="no built-in task named 'nope'"):
        client.evaluate("nope", "x = 1")
    with Client(url, api_key="wrong") as stranger, pytest.raises(ServiceError, match="API key"):
        stranger.queue()
    assert client.health()["status"] == "ok" and client.queue()["workers"] == 2


def test_request_body_reads_paths_but_not_source(tmp_path):
    assert request_body(TASK, "x = 1") == {"task": TASK, "candidate": "x = 1"}
    assert request_body(REFERENCE, "x = 1", trials=3) == {"reference": REFERENCE, "candidate": "x = 1", "options": {"trials": 3}}
    with pytest.raises(ValueError, match="give a reference"):
        request_body(None, "x = 1")


def answer(code: str) -> str:
    return f"## Analysis\nfaster.\n\n## Code Implementation\n```python\n{code}\n```\n"


MODEL_NEW = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"


def test_grpo_reward_scores_each_completion(client):
    reward = make_grpo_reward(client, {TASK: TASK, "custom": REFERENCE}, trials=3)
    completions = [
        answer(MODEL_NEW + "SPEED = 1"),  # ok: the fake gives 1.2x to class-defining code
        answer(MODEL_NEW + "FAIL = 1"),  # incorrect
        "no code at all",
        answer("class ModelNew(:\n    pass"),  # does not parse
        [{"role": "assistant", "content": answer(MODEL_NEW)}],  # chat format
    ]
    rewards = reward(prompts=["p"] * 5, completions=completions, task=[TASK, TASK, TASK, "custom", "custom"])
    assert rewards == [1.2, 0.0, 0.0, 0.0, 1.2]
    assert reward.__name__ == "cudaopt_speedup" and len(reward.last_results) == 3


def test_grpo_reward_with_one_reference_for_all_and_a_failure_value(client):
    reward = make_grpo_reward(client, TASK, failure_reward=-1.0)
    rewards = reward(prompts=["p", "p"], completions=[answer(MODEL_NEW), "no code"])
    assert rewards == [1.2, -1.0]


def test_grpo_reward_needs_the_task_column(client):
    reward = make_grpo_reward(client, {TASK: TASK})
    with pytest.raises(KeyError, match="dataset column 'task'"):
        reward(prompts=["p"], completions=[answer(MODEL_NEW)])


def test_grpo_reward_falls_back_to_single_items_when_the_batch_is_refused(client):
    calls = []
    real = client.evaluate_batch

    def spy(pairs, **options):
        pairs = list(pairs)
        calls.append(len(pairs))
        return real(pairs, **options)

    client.evaluate_batch = spy
    reward = make_grpo_reward(client, {TASK: TASK, "gone": "no_such_task"})
    rewards = reward(prompts=["p", "p"], completions=[answer(MODEL_NEW)] * 2, task=[TASK, "gone"])
    assert rewards == [1.2, 0.0]
    assert calls == [2, 1, 1]


def test_completion_text_formats():
    assert completion_text("abc") == "abc"
    assert completion_text([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]) == "a"


def test_many_reward_calls_in_parallel(client):
    reward = make_grpo_reward(client, TASK)
    out: list[list[float]] = []

    def one():
        out.append(reward(prompts=["p"] * 4, completions=[answer(MODEL_NEW)] * 4))

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert out == [[1.2] * 4] * 4
