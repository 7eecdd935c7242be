"""A Python client for `cudaopt serve`, and a reward function for TRL's GRPOTrainer built on it.

    client = Client("http://127.0.0.1:8000")
    result = client.evaluate("ref.py", "cand.py", trials=10)        # paths, source text or a built-in task
    results = client.evaluate_batch([(ref, c) for c in candidates])  # dicts, in order

    reward = make_grpo_reward(client, {"matrix_vector": "matrix_vector"})
    GRPOTrainer(..., reward_funcs=[reward])   # the dataset's "task" column names each prompt's task
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx

API_KEY_ENV = "CUDAOPT_API_KEY"
MAX_BATCH = 256  # the service's limit per request; bigger batches go as several job submissions
POLL_WAIT_S = 60.0  # how long one GET /jobs/{id}?wait= holds the connection


class ServiceError(Exception):
    """The service refused a request (4xx) or failed (5xx); the message is the service's own."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"{status_code}: {message}")
        self.status_code = status_code
        self.message = message


def _read_if_path(value: str | Path) -> str:
    if isinstance(value, Path) or ("\n" not in value and value.endswith(".py") and os.path.isfile(value)):
        return Path(value).read_text()
    return value


def _is_task_name(value: Any) -> bool:
    return isinstance(value, str) and "\n" not in value and re.fullmatch(r"[\w.-]+", value) is not None \
        and not os.path.isfile(value)


def request_body(reference: str | Path | None, candidate: str | Path, task: str | None = None, **options: Any) -> dict:
    """The JSON of one request. A reference that is a bare name (no newline, not a file) is a built-in task."""
    if task is None and _is_task_name(reference):
        task, reference = str(reference).removesuffix(".py"), None
    body: dict[str, Any] = {"candidate": _read_if_path(candidate)}
    if task is not None:
        body["task"] = task
    else:
        if reference is None:
            raise ValueError("give a reference (path or source) or task=<built-in task name>")
        body["reference"] = _read_if_path(reference)
    if options:
        body["options"] = options
    return body


class Client:
    def __init__(self, url: str = "http://127.0.0.1:8000", api_key: str | None = None, timeout: float = 3600.0) -> None:
        api_key = api_key or os.environ.get(API_KEY_ENV)
        headers = {"X-API-Key": api_key} if api_key else {}
        # One evaluation can take minutes; only connecting is expected to be quick.
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers,
                                  timeout=httpx.Timeout(timeout, connect=10.0),
                                  transport=httpx.HTTPTransport(retries=2))

    def _call(self, method: str, path: str, **kw) -> Any:
        response = self._http.request(method, path, **kw)
        if response.status_code >= 400:
            try:
                message = response.json().get("detail", response.text)
            except ValueError:
                message = response.text
            raise ServiceError(response.status_code, message if isinstance(message, str) else str(message))
        return response.json()

    def health(self) -> dict:
        return self._call("GET", "/health")

    def queue(self) -> dict:
        return self._call("GET", "/queue")

    def evaluate(self, reference: str | Path | None = None, candidate: str | Path | None = None, *,
                 task: str | None = None, **options: Any) -> dict:
        """One evaluation; answers `EvalResult.to_dict()` (status, correct, speedup, speedup_ci, findings, ...)."""
        if candidate is None:
            raise ValueError("give the candidate (a path or its source)")
        return self._call("POST", "/evaluate", json=request_body(reference, candidate, task, **options))

    def evaluate_batch(self, pairs: Iterable[tuple | dict], **options: Any) -> list[dict]:
        """Results in the order of `pairs`: (reference, candidate) tuples, or request dicts. `options`
        apply to every pair that brings none of its own."""
        bodies = [self._body(p, options) for p in pairs]
        if len(bodies) <= MAX_BATCH:
            return self._call("POST", "/evaluate/batch", json=bodies) if bodies else []
        ids: list[str] = []
        for i in range(0, len(bodies), MAX_BATCH):  # queue everything first, then collect
            ids += self._call("POST", "/jobs", json=bodies[i:i + MAX_BATCH])["ids"]
        return [self.wait(job_id) for job_id in ids]

    @staticmethod
    def _body(pair: tuple | dict, options: dict) -> dict:
        if isinstance(pair, dict):
            body = dict(pair)
            if options and "options" not in body:
                body["options"] = options
            return body
        reference, candidate = pair
        return request_body(reference, candidate, **options)

    def submit(self, reference: str | Path | None = None, candidate: str | Path | None = None, *,
               task: str | None = None, **options: Any) -> str:
        """Queue one evaluation and return its job id at once."""
        if candidate is None:
            raise ValueError("give the candidate (a path or its source)")
        return self._call("POST", "/jobs", json=request_body(reference, candidate, task, **options))["id"]

    def job(self, job_id: str, wait: float = 0.0) -> dict:
        """The job's state, and its `result` once done (waiting up to `wait` seconds for it)."""
        return self._call("GET", f"/jobs/{job_id}", params={"wait": wait} if wait else None)

    def wait(self, job_id: str, timeout: float | None = None) -> dict:
        """The job's result dict, polling with long waits until it is done."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_WAIT_S if deadline is None else min(POLL_WAIT_S, deadline - time.monotonic())
            if left <= 0:
                raise TimeoutError(f"job {job_id} did not finish within {timeout} s")
            view = self.job(job_id, wait=left)
            if view["state"] == "cancelled":
                raise ServiceError(409, f"job {job_id} was cancelled")
            if view["result"] is not None:
                return view["result"]

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- a reward for TRL's GRPOTrainer ------------------------------------------------------------------------


def completion_text(completion: Any) -> str:
    """TRL passes plain strings, or for chat datasets a list of {"role", "content"} messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        replies = [m.get("content", "") for m in completion if isinstance(m, dict) and m.get("role", "assistant") == "assistant"]
        return "\n".join(r for r in replies if isinstance(r, str))
    return str(completion)


def extract_code(text: str) -> str | None:
    """The candidate code in a model's answer, or None (the prompts package's parser decides)."""
    from cudaopt.prompts import parse_response

    return parse_response(text).code


def make_grpo_reward(client: Client, task_sources: Mapping[str, str] | str, *, task_column: str = "task",
                     failure_reward: float = 0.0, extract: Callable[[str], str | None] = extract_code,
                     **options: Any) -> Callable[..., list[float]]:
    """A TRL-style reward `reward(prompts, completions, **kwargs) -> list[float]`: the measured speedup of the
    code in each completion, or `failure_reward` when there is no code or it fails, is wrong or rejected.

    `task_sources` maps a task name (the dataset's `task_column`) to its reference: source text, a path or a
    built-in task name. A single string is the reference for every prompt. `options` are EvalOptions fields.
    Service refusals of one item count as failures; an unreachable service raises, so that a training run
    does not quietly learn from zeros.
    """

    def reference_for(i: int, kwargs: dict) -> str:
        if isinstance(task_sources, str):
            return task_sources
        names = kwargs.get(task_column)
        if names is None:
            raise KeyError(f"the reward needs the dataset column {task_column!r} naming each prompt's task")
        name = names[i]
        if name not in task_sources:
            raise KeyError(f"no reference for task {name!r}; add it to task_sources")
        return task_sources[name]

    def reward(prompts: list | None = None, completions: list | None = None, **kwargs: Any) -> list[float]:
        completions = completions or []
        rewards = [failure_reward] * len(completions)
        pending: list[tuple[int, dict]] = []
        for i, completion in enumerate(completions):
            code = extract(completion_text(completion))
            if code is not None:
                pending.append((i, request_body(reference_for(i, kwargs), code, **options)))
        results: list[dict | None]
        try:
            results = client.evaluate_batch([body for _, body in pending]) if pending else []
        except ServiceError as e:
            if e.status_code >= 500:
                raise
            results = []  # one bad item refuses the whole batch: score the items one by one
            for _, body in pending:
                try:
                    results.append(client.evaluate_batch([body])[0])
                except ServiceError as item_error:
                    if item_error.status_code >= 500:
                        raise
                    results.append(None)
        for (i, _), result in zip(pending, results):
            if result and result.get("status") == "ok" and result.get("speedup") is not None:
                rewards[i] = float(result["speedup"])
        reward.last_results = results
        return rewards

    reward.__name__ = "cudaopt_speedup"
    reward.last_results = []
    return reward
