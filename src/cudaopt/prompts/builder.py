"""Build contrastive and one-shot prompts from text templates a user can replace.

Templates are `string.Template` files (`$name` placeholders; write `$$` for a literal dollar sign):
  contrastive.txt  the prompt with earlier candidates and their measured speedups
  oneshot.txt      the prompt for a task the database knows nothing about yet
  exemplar.txt     one earlier candidate inside the contrastive prompt
  rules.txt        the rules both prompts end with
A user folder may hold any of them; the files it lacks come from the built-in set.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from cudaopt.db.sampling import Exemplar
from cudaopt.tasks.loader import Task

BUILTIN_TEMPLATES = Path(__file__).parent / "templates"
TEMPLATE_NAMES = ("contrastive", "oneshot", "exemplar", "rules")

# The placeholders each template may use.
PLACEHOLDERS = {
    "contrastive": {"task_name", "reference", "exemplars", "n_exemplars", "rules", "level"},
    "oneshot": {"task_name", "reference", "rules", "level"},
    "exemplar": {"index", "speedup", "source", "id"},
    "rules": {"device_hint"},
}


class PromptTemplateError(ValueError):
    """A template file that cannot be used; the message says which file and what to fix."""


def _load(name: str, template_dir: Path | None) -> tuple[string.Template, Path]:
    for folder in ([Path(template_dir)] if template_dir else []) + [BUILTIN_TEMPLATES]:
        path = folder / f"{name}.txt"
        if path.is_file():
            return string.Template(path.read_text()), path
    raise PromptTemplateError(f"no template {name}.txt in {template_dir} or the built-in set")


def _check(name: str, template: string.Template, path: Path) -> None:
    if not template.is_valid():
        raise PromptTemplateError(f"{path}: invalid placeholder; write $$ for a literal dollar sign")
    unknown = set(template.get_identifiers()) - PLACEHOLDERS[name]
    if unknown:
        raise PromptTemplateError(
            f"{path}: unknown placeholder(s) {', '.join('$' + u for u in sorted(unknown))}; "
            f"{name}.txt may use {', '.join('$' + p for p in sorted(PLACEHOLDERS[name]))}"
        )


@dataclass(frozen=True)
class PromptBuilder:
    template_dir: Path | None = None
    device_hint: str = "an NVIDIA H200, sm_90"

    def __post_init__(self) -> None:
        if self.template_dir is not None and not Path(self.template_dir).is_dir():
            raise PromptTemplateError(f"{self.template_dir}: no such folder; give a folder of .txt templates")
        for name in TEMPLATE_NAMES:
            _check(name, *_load(name, self.template_dir))

    def _fill(self, name: str, **values) -> str:
        template, _ = _load(name, self.template_dir)
        return template.substitute(**values)

    def rules(self) -> str:
        return self._fill("rules", device_hint=self.device_hint).strip()

    def oneshot(self, task: Task) -> str:
        return self._fill("oneshot", task_name=task.name, level=task.level, reference=task.source.strip(), rules=self.rules())

    def contrastive(self, task: Task, exemplars: Sequence[Exemplar]) -> str:
        blocks = [
            self._fill("exemplar", index=i, speedup=f"{e.speedup:.2f}", source=e.source.strip(), id=e.id).strip()
            for i, e in enumerate(exemplars, 1)
        ]
        return self._fill(
            "contrastive", task_name=task.name, level=task.level, reference=task.source.strip(),
            exemplars="\n\n".join(blocks), n_exemplars=len(exemplars), rules=self.rules(),
        )

    def build(self, task: Task, exemplars: Sequence[Exemplar]) -> str:
        """The contrastive prompt, or the one-shot prompt when there is nothing to contrast yet."""
        return self.contrastive(task, exemplars) if exemplars else self.oneshot(task)
