"""A prompt builder that shows each exemplar's profile right after its code (CUDA-L2's NCU context)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cudaopt.db.sampling import Exemplar
from cudaopt.db.store import ExemplarDB
from cudaopt.profile.format import format_profile
from cudaopt.profile.store import load_profile
from cudaopt.prompts.builder import PromptBuilder
from cudaopt.tasks.loader import Task


def db_profile_text(db: ExemplarDB, max_kernels: int = 4) -> Callable[[int], str]:
    """Exemplar id -> its stored profile as prompt text ("" when none was stored)."""
    return lambda candidate_id: format_profile(load_profile(db, candidate_id), max_kernels)


@dataclass(frozen=True)
class ProfiledPromptBuilder(PromptBuilder):
    """`PromptBuilder` whose contrastive prompt adds `profile_text(exemplar.id)` under each exemplar."""

    profile_text: Callable[[int], str] | None = None

    def contrastive(self, task: Task, exemplars: Sequence[Exemplar]) -> str:
        if self.profile_text is None:
            return super().contrastive(task, exemplars)
        blocks = []
        for i, e in enumerate(exemplars, 1):
            block = self._fill("exemplar", index=i, speedup=f"{e.speedup:.2f}", source=e.source.strip(), id=e.id).strip()
            text = self.profile_text(e.id)
            blocks.append(f"{block}\n\nProfile of implementation {i}:\n{text}" if text else block)
        return self._fill(
            "contrastive", task_name=task.name, level=task.level, reference=task.source.strip(),
            exemplars="\n\n".join(blocks), n_exemplars=len(exemplars), rules=self.rules(),
        )
