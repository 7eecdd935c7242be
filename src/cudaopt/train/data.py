"""Supervised pairs from the exemplar database: (one-shot prompt, answer with the three sections).

Only successful candidates (status ok: executable and correct) are exported, one pair per distinct
source per task. The instruction is the one-shot prompt of the task (what the model will be asked); the
completion is the model answer that produced the candidate when it already has the required sections
around that very code, and otherwise the code wrapped in the three sections.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

from sqlalchemy import select

from cudaopt.db.models import TaskRow
from cudaopt.db.store import CandidateRecord, ExemplarDB, existing_database, source_hash
from cudaopt.prompts.builder import PromptBuilder
from cudaopt.prompts.parser import CODE_SECTION, parse_response
from cudaopt.tasks.loader import Task
from cudaopt.train.holdout import HoldoutSpec, Split, split_tasks

NO_NOTES = "(No analysis was recorded with this implementation.)"


def answer_with_sections(code: str, analysis: str = NO_NOTES, design: str = NO_NOTES) -> str:
    return (f"## Performance Analysis\n{analysis.strip()}\n\n## Algorithm Design\n{design.strip()}\n\n"
            f"## Code Implementation\n```python\n{code.strip()}\n```\n")


def completion_for(record: CandidateRecord) -> str:
    """The stored answer if it has the sections around this code; else the code wrapped in them."""
    parsed = parse_response(record.response) if record.response else None
    if parsed is not None and parsed.ok and CODE_SECTION in parsed.sections and source_hash(parsed.code) == record.source_hash:
        return record.response.strip() + "\n"
    sections = parsed.sections if parsed is not None else {}
    return answer_with_sections(record.source, sections.get("performance analysis") or NO_NOTES,
                                sections.get("algorithm design") or NO_NOTES)


def db_tasks(db: ExemplarDB) -> list[tuple[int, Task]]:
    """(task id, Task) for every task the database knows (same name, other source: another entry)."""
    with db.session() as s:
        rows = s.scalars(select(TaskRow).order_by(TaskRow.id)).all()
        return [(r.id, Task(r.name, r.level, r.source)) for r in rows]


def sft_rows(db: ExemplarDB, *, holdout: HoldoutSpec = None, tasks: Sequence[str] | None = None, seed: int = 0,
             builder: PromptBuilder | None = None) -> tuple[list[dict], Split]:
    builder = builder or PromptBuilder()
    known = db_tasks(db)
    names = [t.name for _, t in known if tasks is None or t.name in set(tasks)]
    split = split_tasks(names, holdout, seed=seed)
    keep = set(split.train)
    rows: list[dict] = []
    for task_id, task in known:
        if task.name not in keep:
            continue
        prompt = builder.oneshot(task)
        seen: set[str] = set()
        for rec in db.candidates(task_id=task_id, status="ok"):
            if not rec.source.strip() or rec.source_hash in seen:
                continue
            seen.add(rec.source_hash)
            rows.append({"prompt": prompt, "completion": completion_for(rec), "task": task.name, "level": task.level,
                         "candidate_id": rec.id, "speedup": rec.speedup})
    return rows, split


def write_jsonl(rows: Iterable[dict], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return path


def read_jsonl(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; make it with `cudaopt train export` or give a database")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for n, r in enumerate(rows, 1):
        if "prompt" not in r or "completion" not in r:
            raise ValueError(f"{path}:{n}: each line needs \"prompt\" and \"completion\"")
    return rows


def export_sft(db_url: str | Path, out_jsonl: str | Path, *, holdout: HoldoutSpec = None, tasks: Sequence[str] | None = None,
               seed: int = 0, template_dir: str | Path | None = None) -> Path:
    """Write the SFT pairs of the database's successful candidates as JSONL ({prompt, completion, task, ...}),
    held-out tasks left out. Returns the JSONL path; the split goes next to it as <name>.split.json."""
    from cudaopt.train.holdout import write_split

    with ExemplarDB(existing_database(db_url)) as db:
        rows, split = sft_rows(db, holdout=holdout, tasks=tasks, seed=seed,
                               builder=PromptBuilder(Path(template_dir) if template_dir else None))
    out = write_jsonl(rows, out_jsonl)
    write_split(split, out.with_suffix(".split.json"))
    return out
