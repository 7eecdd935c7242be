"""The HTTP service: request checks and limits, jobs, the page, API keys, and the pool under load.

The load test runs uvicorn for real on a free loopback port and sends 200 evaluations at once whose
candidates really crash, hang, exhaust memory and flood their output (in subprocesses, via
`snippet_evaluate`); a smaller test sends real evaluations through the real evaluator.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import httpx
import pytest
from fastapi.testclient import TestClient

from conftest import run_load_test

from cudaopt.evaluate.result import STATUSES, EvalResult
from cudaopt.pool import EvaluatorPool
from cudaopt.pool.procs import stray_processes
from cudaopt.pool.snippet import fake_timing, snippet_evaluate
from cudaopt.service import BackgroundServer, create_app, resolve_devices, serve
from cudaopt.service.requests import MAX_BATCH, MAX_SOURCE_BYTES

TASK = "matrix_vector"
REFERENCE = "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n"


def instant(reference, candidate, options):
    return EvalResult(status="ok", stage_reached="timed", correct=True, timing=fake_timing(1.5, 0.0),
                      device=options.device, max_abs_error=float("inf") if "inf" in candidate else 0.0)


@pytest.fixture
def pool():
    p = EvaluatorPool(["cpu"] * 2, instant)
    yield p
    p.close()


@pytest.fixture
def http(pool):
    with TestClient(create_app(pool)) as client:
        yield client


def test_evaluate_answers_the_result_dict(http):
    r = http.post("/evaluate", json={"reference": REFERENCE, "candidate": "x = 1", "options": {"trials": 3}})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["speedup"] == 1.5 and len(body["speedup_ci"]) == 2
    assert {"correct", "baseline", "device", "findings", "timing", "message"} <= set(body)
    assert EvalResult.from_dict(body).speedup == 1.5


def test_built_in_task_by_name(http):
    body = http.post("/evaluate", json={"task": TASK, "candidate": "x = 1"}).json()
    assert body["task"] == TASK


def test_non_finite_numbers_stay_strict_json(http):
    r = http.post("/evaluate", json={"task": TASK, "candidate": "inf = 1"})
    assert r.status_code == 200 and r.json()["max_abs_error"] == "inf"


@pytest.mark.parametrize("body, code, words", [
    ({"task": "no_such_task", "candidate": "x = 1"}, 404, "no built-in task"),
    ({"task": TASK, "candidate": "def broken(:"}, 422, "candidate is not valid Python: line 1"),
    ({"reference": "class (", "candidate": "x = 1"}, 422, "reference is not valid Python"),
    ({"task": TASK, "candidate": "x = 1", "options": {"trails": 3}}, 422, "unknown evaluation options: trails"),
    ({"task": TASK, "candidate": "x = 1", "options": {"baseline": "fast"}}, 422, "unknown baseline"),
    ({"task": TASK}, 422, "missing 'candidate'"),
    ({"candidate": "x = 1"}, 422, "exactly one of 'reference'"),
    ({"task": TASK, "reference": REFERENCE, "candidate": "x = 1"}, 422, "exactly one of"),
    ({"task": TASK, "candidate": "x = 1", "extra": 1}, 422, "unknown fields extra"),
    ({"task": TASK, "candidate": 5}, 422, "must be a string"),
    ([1, 2], 422, "JSON object"),
    ({"task": TASK, "candidate": "#" * (MAX_SOURCE_BYTES + 1)}, 413, "limited to 1 MB"),
])
def test_bad_requests_get_a_4xx_with_a_clear_message(http, body, code, words):
    r = http.post("/evaluate", json=body)
    assert r.status_code == code, r.text
    assert words in r.json()["detail"]


def test_reference_text_is_never_read_as_a_server_path(http, pool):
    seen = []
    pool._slots[0].evaluate_fn = pool._slots[1].evaluate_fn = lambda r, c, o: seen.append(r) or instant(r, c, o)
    http.post("/evaluate", json={"reference": "README", "candidate": "x = 1"})
    assert seen[0].source == "README\n" and seen[0].path is None


def test_body_that_is_not_json(http):
    r = http.post("/evaluate", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["detail"]


def test_body_size_limit(pool):
    with TestClient(create_app(pool, max_body_bytes=1000)) as http:
        r = http.post("/evaluate", json={"task": TASK, "candidate": "#" * 2000})
    assert r.status_code == 413 and "limit" in r.json()["detail"]


def test_batch_keeps_order_and_is_bounded(http):
    items = [{"task": TASK, "candidate": f"x = {i}"} for i in range(5)] + [{"reference": REFERENCE, "candidate": "y = 2"}]
    results = http.post("/evaluate/batch", json=items).json()
    assert [r["task"] for r in results][:5] == [TASK] * 5 and len(results) == 6
    assert len(http.post("/evaluate/batch", json={"items": items[:2]}).json()) == 2
    too_many = http.post("/evaluate/batch", json=[items[0]] * (MAX_BATCH + 1))
    assert too_many.status_code == 413 and f"at most {MAX_BATCH}" in too_many.json()["detail"]
    bad_item = http.post("/evaluate/batch", json=[items[0], {"task": TASK, "candidate": "("}])
    assert bad_item.status_code == 422 and bad_item.json()["detail"].startswith("item 1: candidate is not valid Python")
    assert http.post("/evaluate/batch", json=[]).status_code == 422


def test_jobs_submit_poll_wait_and_cancel(pool):
    gate = threading.Event()

    def gated(reference, candidate, options):
        gate.wait(30)
        return instant(reference, candidate, options)

    slow_pool = EvaluatorPool(["cpu"], gated)
    with TestClient(create_app(slow_pool)) as http:
        first = http.post("/jobs", json={"task": TASK, "candidate": "x = 1"}).json()["id"]
        ids = http.post("/jobs", json=[{"task": TASK, "candidate": "x = 2"}] * 2).json()["ids"]
        assert http.get(f"/jobs/{first}", params={"wait": 0.2}).json()["result"] is None
        assert http.delete(f"/jobs/{ids[1]}").json()["state"] == "cancelled"
        gate.set()
        view = http.get(f"/jobs/{first}", params={"wait": 30}).json()
        assert view["state"] == "done" and view["result"]["status"] == "ok"
        assert http.get(f"/jobs/{ids[0]}", params={"wait": 30}).json()["result"]["status"] == "ok"
        assert http.get("/jobs/nope").status_code == 404
        queue = http.get("/queue").json()
        assert queue["cancelled"] == 1 and queue["finished"] == 2
    slow_pool.close()


def test_page_shows_recent_results_escaped(pool):
    pool._slots[0].evaluate_fn = pool._slots[1].evaluate_fn = \
        lambda r, c, o: replace(instant(r, c, o), status="runtime_error", message="<script>alert(1)</script>")
    with TestClient(create_app(pool)) as http:
        job_id = http.post("/jobs", json={"task": TASK, "candidate": "x = 1"}).json()["id"]
        http.get(f"/jobs/{job_id}", params={"wait": 30})
        page = http.get("/").text
    assert job_id in page and TASK in page
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_api_key_is_required_when_set(pool):
    with TestClient(create_app(pool, api_key="s3cret")) as http:
        assert http.get("/health").status_code == 200
        r = http.post("/evaluate", json={"task": TASK, "candidate": "x = 1"})
        assert r.status_code == 401 and "X-API-Key" in r.json()["detail"]
        assert http.get("/queue", headers={"X-API-Key": "wrong"}).status_code == 401
        assert http.get("/queue", headers={"X-API-Key": "s3cret"}).status_code == 200
        assert http.get("/queue", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert http.get("/", params={"key": "s3cret"}).status_code == 200


def test_serve_refuses_to_listen_beyond_loopback_without_a_key(monkeypatch):
    monkeypatch.delenv("CUDAOPT_API_KEY", raising=False)
    with pytest.raises(ValueError, match="needs an API key"):
        serve(host="0.0.0.0", port=0, devices="cpu")


def test_device_specs():
    assert resolve_devices("cpu") == ["cpu"]
    assert resolve_devices("cpu*3") == ["cpu"] * 3
    assert resolve_devices("cuda:0,cuda:1") == ["cuda:0", "cuda:1"]
    assert resolve_devices(["cpu", "cpu"]) == ["cpu", "cpu"]
    with pytest.raises(ValueError, match="unknown device"):
        resolve_devices("tpu")


# -- under load, over real HTTP ---------------------------------------------------------------------------

def _cudaopt_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("cudaopt-")]


def test_two_hundred_misbehaving_evaluations_at_once_over_http():
    pool = EvaluatorPool(["cpu"] * 4, snippet_evaluate)
    try:
        run_load_test(pool, 200, {"exec_floor_s": 1.0}, REFERENCE)
    finally:
        pool.close()
    assert stray_processes() == []
    assert _cudaopt_threads() == []


REAL_CANDIDATES = {
    "correct": "class ModelNew(torch.nn.Module):\n    def forward(self, a, x):\n        return (a * x.t()).sum(dim=1, keepdim=True)\n",
    "wrong": "class ModelNew(torch.nn.Module):\n    def forward(self, a, x):\n        return torch.matmul(a, x) + 1\n",
    "crash": "class ModelNew(torch.nn.Module):\n    def forward(self, a, x):\n        raise RuntimeError('boom')\n",
    "exit": "class ModelNew(torch.nn.Module):\n    def forward(self, a, x):\n        import os; os._exit(3)\n",
    "hang": "class ModelNew(torch.nn.Module):\n    def forward(self, a, x):\n        while True:\n            a = a + 0\n",
    "no_model": "x = 1\n",
}
REAL_EXPECTED = {"correct": {"ok"}, "wrong": {"incorrect"}, "crash": {"runtime_error"}, "exit": {"runtime_error", "rejected"},
                 "hang": {"timeout"}, "no_model": {"runtime_error", "compile_error"}}


def test_real_evaluator_through_the_service():
    """The real evaluator on a CPU task at its small size: a handful of candidates through HTTP."""
    sources = {k: "import torch\n" + v for k, v in REAL_CANDIDATES.items()}
    options = {"size": "small", "trials": 3, "budget_s": 0.5, "min_rounds": 14, "exec_floor_s": 3.0,
               "compile_timeout_s": 60.0}
    pool = EvaluatorPool(["cpu"] * 2)
    try:
        with BackgroundServer(create_app(pool)) as url:
            body = [{"task": TASK, "candidate": src, "options": options} for src in sources.values()]
            results = httpx.post(f"{url}/evaluate/batch", json=body, timeout=300).json()
            single = httpx.post(f"{url}/evaluate", timeout=300,
                                json={"task": TASK, "candidate": sources["correct"], "options": options}).json()
            assert httpx.get(f"{url}/health").json()["status"] == "ok"
    finally:
        pool.close()
    for kind, result in zip(sources, results):
        assert result["status"] in REAL_EXPECTED[kind], (kind, result["status"], result["message"])
        assert result["task"] == TASK and result["status"] in STATUSES
    assert single["status"] == "ok" and single["speedup"] is not None and len(single["speedup_ci"]) == 2
    assert stray_processes() == []
    assert _cudaopt_threads() == []


@pytest.mark.gpu
def test_corpus_on_every_gpu_through_the_service():
    """On a GPU machine: CUDA corpus candidates through HTTP, each on a GPU of its own; with two GPUs a
    forced verification runs on the other one."""
    import torch

    from cudaopt.tasks.loader import CORPUS_DIR

    task = "bias_sigmoid_mul"
    sources = {p.stem: p.read_text() for p in sorted((CORPUS_DIR / task).glob("*.py"))}
    options = {"trials": 5, "budget_s": 1.0}
    devices = [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    pool = EvaluatorPool(devices)
    try:
        with BackgroundServer(create_app(pool)) as url:
            results = httpx.post(f"{url}/evaluate/batch", timeout=600,
                                 json=[{"task": task, "candidate": s, "options": options} for s in sources.values()]).json()
            forced = httpx.post(f"{url}/evaluate", timeout=600, json={
                "task": task, "candidate": sources["fast_fused_float4"], "options": {**options, "previous_best": 0.01}}).json()
    finally:
        pool.close()
    for name, result in zip(sources, results):
        assert result["status"] == ("incorrect" if name.startswith("wrong") else "ok"), (name, result["message"])
        assert result["device"].startswith("cuda")
    assert forced["status"] == "ok" and forced["timing"]["verified"] is not None
    if len(devices) >= 2:
        assert "re-measured on cuda:" in forced["message"]
    assert stray_processes() == []


def test_serve_answers_and_stops_cleanly_on_interrupt():
    """`serve()` as the CLI runs it, in a process of its own: it answers, and Ctrl-C stops it."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = f"from cudaopt.service import serve; serve(port={port}, devices='cpu*2', log_level='warning')"
    proc = subprocess.Popen([sys.executable, "-c", code], env=os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.2)
        assert health == {"status": "ok", "version": health["version"], "workers": 2, "devices": ["cpu", "cpu"]}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
