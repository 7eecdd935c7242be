"""Answer from a JSONL file of recorded answers: reproducible searches and tests without a model.

Each line: {"task": "<task name>", "response": "<the model's answer>"} with optional "model",
"prompt_tokens", "completion_tokens". A task's answers are handed out round-robin. The task is the
`task=` argument when given, else the longest recorded task name found in the prompt; a record with
task "*" answers any prompt no other record matches.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from cudaopt.llm.base import LLM, Completion, LLMError, estimate_tokens

WILDCARD = "*"


@dataclass(frozen=True)
class ReplayRecord:
    task: str
    response: str
    model: str = "replay"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def load_replay(path: str | Path) -> dict[str, list[ReplayRecord]]:
    path = Path(path)
    if not path.is_file():
        raise LLMError(f"{path}: no such replay file; give a JSONL file of {{\"task\": ..., \"response\": ...}} lines")
    book: dict[str, list[ReplayRecord]] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            rec = ReplayRecord(
                task=str(d["task"]), response=str(d.get("response", d.get("text", ""))), model=str(d.get("model", "replay")),
                prompt_tokens=d.get("prompt_tokens"), completion_tokens=d.get("completion_tokens"),
            )
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise LLMError(f"{path}:{n}: not a replay record ({e}); each line needs \"task\" and \"response\"") from None
        book.setdefault(rec.task, []).append(rec)
    if not book:
        raise LLMError(f"{path}: the replay file is empty")
    return book


class ReplayBook:
    """Thread-safe round-robin over the recorded answers of each task."""

    def __init__(self, records: dict[str, list[ReplayRecord]]):
        self.records = records
        self._next = {t: 0 for t in records}
        self._lock = threading.Lock()
        # Longest names first, so "conv2d_relu" wins over "conv2d" when both appear in a prompt.
        self._names = sorted((t for t in records if t != WILDCARD), key=len, reverse=True)

    @classmethod
    def from_file(cls, path: str | Path) -> "ReplayBook":
        return cls(load_replay(path))

    def task_of(self, prompt: str) -> str | None:
        for name in self._names:
            if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", prompt):
                return name
        return WILDCARD if WILDCARD in self.records else None

    def answer(self, prompt: str, task: str | None = None) -> ReplayRecord | None:
        key = task if task in self.records else self.task_of(prompt)
        if key is None:
            return None
        with self._lock:
            i = self._next[key]
            self._next[key] = i + 1
        recs = self.records[key]
        return recs[i % len(recs)]


def completion_from(rec: ReplayRecord | None, prompt: str) -> Completion:
    if rec is None:
        return Completion("", estimate_tokens(prompt), 0, "replay", "error", "no recorded answer for this task")
    return Completion(
        text=rec.response,
        prompt_tokens=rec.prompt_tokens if rec.prompt_tokens is not None else estimate_tokens(prompt),
        completion_tokens=rec.completion_tokens if rec.completion_tokens is not None else estimate_tokens(rec.response),
        model=rec.model,
        finish_reason="stop",
    )


class ReplayLLM(LLM):
    def __init__(self, path_or_book: str | Path | ReplayBook):
        self.book = path_or_book if isinstance(path_or_book, ReplayBook) else ReplayBook.from_file(path_or_book)
        self.model = "replay"

    def generate(self, prompts: list[str], n: int = 1, task: str | None = None, **kw) -> list[Completion]:
        return [completion_from(self.book.answer(p, task), p) for p in prompts for _ in range(n)]
