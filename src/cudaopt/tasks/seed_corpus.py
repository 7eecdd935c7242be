"""The seed corpus: hand-written candidates for suite tasks (fast, honest, slow, wrong; CUDA and CPU).

Each file starts with `# cudaopt-corpus: kind=<fast|honest|slow|wrong|cpu> device=<cuda|cpu> note=<...>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cudaopt.tasks.loader import CORPUS_DIR, find_builtin

_HEADER = re.compile(r"#\s*cudaopt-corpus:\s*kind=(\w+)\s+device=(\w+)(?:\s+note=(.*))?")


@dataclass(frozen=True)
class CorpusEntry:
    task: str
    name: str
    kind: str  # fast | honest | slow | wrong | cpu
    device: str  # cuda | cpu
    note: str
    path: Path

    @property
    def expected_correct(self) -> bool:
        return self.kind != "wrong"

    @property
    def source(self) -> str:
        return self.path.read_text()

    def reference(self):
        return find_builtin(self.task)


def corpus_entries(root: Path = CORPUS_DIR) -> list[CorpusEntry]:
    entries = []
    for f in sorted(root.glob("*/*.py")):
        m = _HEADER.match(f.read_text().splitlines()[0] if f.stat().st_size else "")
        if not m:
            continue
        entries.append(CorpusEntry(f.parent.name, f.stem, m.group(1), m.group(2), (m.group(3) or "").strip(), f))
    return entries
