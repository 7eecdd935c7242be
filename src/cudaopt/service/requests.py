"""What the service accepts: one evaluation request, checked before anything is queued.

Every problem is a `RequestError` whose message is one line saying what to change; the app turns it into
a 4xx. Sources are always treated as source text (never as a path on the server), are bounded in size
and must parse as Python.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from cudaopt.evaluate.result import EvalOptions
from cudaopt.tasks.loader import Task, TaskError, find_builtin, load_task

MAX_SOURCE_BYTES = 1 << 20  # per source; real kernels are tens of KB
MAX_BATCH = 256
# Whole request body. A full batch of maximal sources would be 512 MB; nobody needs that in one request.
MAX_BODY_BYTES = 64 << 20
REQUEST_KEYS = {"reference", "candidate", "task", "options"}


class RequestError(Exception):
    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


@dataclass(frozen=True)
class EvaluationRequest:
    reference: Task
    candidate: str
    options: EvalOptions

    @property
    def task(self) -> str:
        return self.reference.name


def _as_source(text: str) -> str:
    # The loader takes text without a newline for a path; a trailing newline keeps it source text.
    return text if text.endswith("\n") else text + "\n"


def check_source(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise RequestError(422, f"{what} must be a string of Python source, not {type(value).__name__}")
    size = len(value.encode())
    if size > MAX_SOURCE_BYTES:
        raise RequestError(413, f"{what} is {size / 1e6:.1f} MB; sources are limited to {MAX_SOURCE_BYTES >> 20} MB each")
    try:
        ast.parse(value)
    except SyntaxError as e:
        raise RequestError(422, f"{what} is not valid Python: line {e.lineno}: {e.msg}") from None
    except ValueError as e:  # e.g. null bytes
        raise RequestError(422, f"{what} is not valid Python: {e}") from None
    return _as_source(value)


def parse_options(value: Any) -> EvalOptions:
    if value is None:
        return EvalOptions()
    if not isinstance(value, dict):
        raise RequestError(422, "options must be an object of EvalOptions fields, e.g. {\"trials\": 10}")
    try:
        return EvalOptions.from_dict(value)
    except (TypeError, ValueError) as e:
        raise RequestError(422, f"bad options: {e}") from None


def parse_request(body: Any, where: str = "") -> EvaluationRequest:
    """`{"reference": source | "task": name, "candidate": source, "options": {...}}`."""
    prefix = f"{where}: " if where else ""
    try:
        if not isinstance(body, dict):
            raise RequestError(422, "a request is a JSON object with 'candidate' and 'reference' or 'task'")
        unknown = set(body) - REQUEST_KEYS
        if unknown:
            raise RequestError(422, f"unknown fields {', '.join(sorted(unknown))}; use {', '.join(sorted(REQUEST_KEYS))}")
        if "candidate" not in body:
            raise RequestError(422, "missing 'candidate': the source of a file defining class ModelNew")
        has_ref, has_task = body.get("reference") is not None, body.get("task") is not None
        if has_ref == has_task:
            raise RequestError(422, "give exactly one of 'reference' (source) or 'task' (a built-in task name)")
        candidate = check_source(body["candidate"], "candidate")
        options = parse_options(body.get("options"))
        if has_task:
            if not isinstance(body["task"], str):
                raise RequestError(422, "'task' must be the name of a built-in task")
            try:
                reference = find_builtin(body["task"].removesuffix(".py"))
            except TaskError as e:
                raise RequestError(404, str(e)) from None
        else:
            reference = load_task(check_source(body["reference"], "reference"))
        return EvaluationRequest(reference, candidate, options)
    except RequestError as e:
        raise RequestError(e.status_code, prefix + e.message) from None


def parse_batch(body: Any) -> list[EvaluationRequest]:
    """A JSON list of requests, or `{"items": [...]}`."""
    items = body.get("items") if isinstance(body, dict) and set(body) == {"items"} else body
    if not isinstance(items, list):
        raise RequestError(422, "a batch is a JSON list of requests (or {\"items\": [...]})")
    if not items:
        raise RequestError(422, "the batch is empty")
    if len(items) > MAX_BATCH:
        raise RequestError(413, f"the batch has {len(items)} items; at most {MAX_BATCH} per request: split it")
    return [parse_request(item, where=f"item {i}") for i, item in enumerate(items)]
