"""A prompt builder that adds retrieved passages to the ordinary one-shot or contrastive prompt."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cudaopt.db.sampling import Exemplar
from cudaopt.prompts.builder import PromptBuilder
from cudaopt.retrieval.chunking import tokenize
from cudaopt.retrieval.store import KnowledgeStore, render_context
from cudaopt.tasks.loader import Task

ANSWER_HEADING = "## How to answer"


# Words every reference file has; as query terms they only add noise.
BOILERPLATE = frozenset(
    ["import", "torch", "nn", "self", "def", "return", "class", "model", "module", "init", "super", "forward", "get", "inputs", "init_inputs", "get_inputs", "get_init_inputs", "randn", "rand", "batch", "size", "batch_size", "dim", "small", "level", "tolerance", "float", "none", "true", "false", "the"])


def task_query(task: Task) -> str:
    """What to search for: the task's name and the reference's code (its torch calls name the operations)."""
    words = [w for w in tokenize(f"{task.name.replace('_', ' ')}\n{task.source}") if w not in BOILERPLATE]
    return " ".join(words)


def insert_section(prompt: str, section: str) -> str:
    """Put `section` just before the answer instructions (so they stay last), or at the end."""
    if not section:
        return prompt
    m = re.search(rf"^{re.escape(ANSWER_HEADING)}", prompt, flags=re.MULTILINE)
    if m is None:
        return prompt.rstrip() + "\n\n" + section
    return prompt[: m.start()] + section + "\n" + prompt[m.start():]


@dataclass(frozen=True)
class RetrievalPromptBuilder(PromptBuilder):
    """`PromptBuilder` plus the `k` passages of `store` that best match the task."""

    store: KnowledgeStore | None = None
    k: int = 3
    max_context_chars: int = 6000

    def context(self, task: Task) -> str:
        if self.store is None:
            return ""
        return render_context(self.store.search(task_query(task), self.k), self.max_context_chars)

    def build(self, task: Task, exemplars: Sequence[Exemplar]) -> str:
        return insert_section(super().build(task, exemplars), self.context(task))
