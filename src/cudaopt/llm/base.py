"""The interface every LLM backend implements: prompts in, completions with token counts out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


class LLMError(RuntimeError):
    """A backend that cannot be used as configured; the message says what to set or install."""


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    finish_reason: str = ""
    error: str = ""  # set when the request failed after its retries; text is then empty

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def estimate_tokens(text: str) -> int:
    """Roughly four characters a token; used only where a backend does not report usage."""
    return max(1, len(text) // 4) if text else 0


class LLM(ABC):
    """`generate(prompts, n)` returns len(prompts) * n completions, prompt-major: all n answers to the
    first prompt, then all n to the second. A failed request is a Completion with `error` set, never an
    exception, so one bad request does not stop a search."""

    model: str = ""

    @abstractmethod
    def generate(self, prompts: list[str], n: int = 1, **kw) -> list[Completion]: ...

    def close(self) -> None:  # backends holding connections or GPU memory release them here
        pass

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
