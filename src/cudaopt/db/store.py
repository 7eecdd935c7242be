"""ExemplarDB: every evaluated candidate, committed one at a time so a crash loses nothing evaluated.

SQLite (a file in the run folder) by default; any SQLAlchemy URL otherwise, e.g.
`postgresql+psycopg://user@host/db` when several machines share one search.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import create_engine, event, func, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from cudaopt.db.models import Base, CandidateRow, CandidateTechniquesRow, RunRow, TaskRow, utcnow
from cudaopt.db.sampling import Exemplar
from cudaopt.tasks.loader import Task

if TYPE_CHECKING:  # importing cudaopt.evaluate pulls in torch; the DB itself does not need it
    from cudaopt.evaluate.result import EvalResult


def source_hash(source: str) -> str:
    """Hash of the candidate text with trailing whitespace normalised, so re-indented copies still match."""
    normalised = "\n".join(line.rstrip() for line in source.strip().splitlines())
    return hashlib.sha256(normalised.encode()).hexdigest()


def database_url(url_or_path: str | Path) -> str:
    """A SQLAlchemy URL as given, or a file path turned into a SQLite URL."""
    s = str(url_or_path)
    if "://" in s:
        return s
    p = Path(s).expanduser().resolve()
    p.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{p}"


def existing_database(url_or_path: str | Path) -> str:
    """database_url for a database that is read, not made: a path that is no file raises FileNotFoundError
    (opening it would create an empty database and read nothing from it)."""
    if "://" not in str(url_or_path) and not Path(url_or_path).expanduser().is_file():
        raise FileNotFoundError(f"{url_or_path}: no such database file; give a run's SQLite file or a SQLAlchemy URL")
    return database_url(url_or_path)


@dataclass(frozen=True)
class RunInfo:
    id: int
    name: str
    kind: str
    config: dict
    status: str
    created: datetime | None = None


@dataclass(frozen=True)
class CandidateRecord:
    """A candidate as stored. `id` is None until it is written."""

    task_id: int
    run_id: int
    source: str
    status: str
    result: dict | None = None
    parent_ids: tuple[int, ...] = ()
    origin: str = "llm"
    model: str = ""
    prompt: str = ""
    response: str = ""
    stage_reached: str = ""
    note: str = ""
    speedup: float | None = None
    gpu_name: str = ""
    gpu_seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    round: int = 0
    island: int = 0
    id: int | None = None
    created: datetime | None = None
    source_hash: str = field(default="")

    def __post_init__(self) -> None:
        if not self.source_hash:
            object.__setattr__(self, "source_hash", source_hash(self.source))

    @classmethod
    def from_result(cls, result: "EvalResult", **kw) -> "CandidateRecord":
        return cls(
            status=result.status,
            result=result.to_dict(),
            stage_reached=result.stage_reached,
            speedup=result.speedup,
            gpu_name=result.device_name,
            gpu_seconds=result.gpu_seconds,
            **kw,
        )

    @property
    def eval_result(self) -> "EvalResult | None":
        from cudaopt.evaluate.result import EvalResult

        return EvalResult.from_dict(self.result) if self.result else None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


_RECORD_FIELDS = (
    "task_id", "run_id", "source", "source_hash", "origin", "model", "prompt", "response", "result", "status",
    "stage_reached", "note", "speedup", "gpu_name", "gpu_seconds", "prompt_tokens", "completion_tokens", "round", "island",
)


def _record(row: CandidateRow) -> CandidateRecord:
    return CandidateRecord(
        id=row.id, created=row.created, parent_ids=tuple(row.parent_ids or ()), **{k: getattr(row, k) for k in _RECORD_FIELDS}
    )


def enable_wal(conn, wait_s: float = 30.0) -> None:  # noqa: ANN001  (a DBAPI sqlite3 connection)
    """Put a SQLite database in WAL mode, once. Switching the journal mode can answer "database is locked" at
    once, without waiting out the busy timeout, while another process is creating or switching the same new file
    (session 25: one of three processes opening one new database failed so in CI); retry that for up to wait_s."""
    import sqlite3

    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return  # another connection set it: WAL is a property of the file
    deadline = time.monotonic() + wait_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class ExemplarDB:
    """Storage for runs, tasks and candidates. Each write is its own committed transaction."""

    def __init__(self, url: str | Path):
        self.url = database_url(url)
        kw = {"connect_args": {"timeout": 30}} if self.url.startswith("sqlite") else {"pool_pre_ping": True}
        self.engine = create_engine(self.url, **kw)
        if self.url.startswith("sqlite"):
            # WAL lets a reader (a report, a second process) look while the search writes.
            @event.listens_for(self.engine, "connect")
            def _sqlite_pragmas(conn, _record):  # noqa: ANN001
                enable_wal(conn)
                conn.execute("PRAGMA synchronous=NORMAL")

        self._create_schema()
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def _create_schema(self) -> None:
        # Two processes opening a new database at once (a search and a reader, two service workers) both
        # see no tables, and the slower CREATE fails with "already exists": the other one made it, so look again.
        for attempt in range(5):
            try:
                Base.metadata.create_all(self.engine)
                return
            except OperationalError as e:
                if "already exists" not in str(e) or attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "ExemplarDB":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def session(self) -> Session:
        return self._sessions()

    # -- runs -----------------------------------------------------------------------------------------
    def start_run(self, name: str, config: dict | None = None, kind: str = "task") -> RunInfo:
        with self.session() as s, s.begin():
            row = RunRow(name=name, kind=kind, config=config or {}, status="running", created=utcnow())
            s.add(row)
            s.flush()
            return RunInfo(row.id, row.name, row.kind, dict(row.config), row.status, row.created)

    def latest_run(self, name: str, kind: str | None = None) -> RunInfo | None:
        with self.session() as s:
            q = select(RunRow).where(RunRow.name == name)
            if kind:
                q = q.where(RunRow.kind == kind)
            row = s.scalars(q.order_by(RunRow.id.desc()).limit(1)).first()
            return None if row is None else RunInfo(row.id, row.name, row.kind, dict(row.config or {}), row.status, row.created)

    def finish_run(self, run_id: int) -> None:
        with self.session() as s, s.begin():
            row = s.get(RunRow, run_id)
            if row is not None:
                row.status, row.finished = "finished", utcnow()

    def reopen_run(self, run_id: int) -> None:
        with self.session() as s, s.begin():
            row = s.get(RunRow, run_id)
            if row is not None:
                row.status, row.finished = "running", None

    # -- tasks ----------------------------------------------------------------------------------------
    def ensure_task(self, task: Task) -> int:
        with self.session() as s, s.begin():
            row = s.scalars(select(TaskRow).where(TaskRow.name == task.name, TaskRow.digest == task.digest)).first()
            if row is None:
                row = TaskRow(name=task.name, level=task.level, digest=task.digest, source=task.source)
                s.add(row)
                s.flush()
            return row.id

    def find_task(self, task: Task) -> int | None:
        """The stored id of this task (same name and digest), without adding it; None where it is not stored."""
        with self.session() as s:
            row = s.scalars(select(TaskRow).where(TaskRow.name == task.name, TaskRow.digest == task.digest)).first()
            return None if row is None else row.id

    def task_info(self, task_id: int) -> dict:
        with self.session() as s:
            row = s.get(TaskRow, task_id)
            return {"id": row.id, "name": row.name, "level": row.level, "digest": row.digest}

    # -- candidates -----------------------------------------------------------------------------------
    def add_candidate(self, record: CandidateRecord) -> CandidateRecord:
        """Write one candidate, tagged with the techniques its source uses, and commit at once."""
        with self.session() as s, s.begin():
            row = CandidateRow(parent_ids=list(record.parent_ids), created=utcnow(), **{k: getattr(record, k) for k in _RECORD_FIELDS})
            s.add(row)
            s.flush()
            if record.source:
                task = s.get(TaskRow, record.task_id)
                s.add(_techniques_row(row.id, record.source, task.source if task is not None else None))
            return _record(row)

    def techniques(self, candidate_ids: list[int] | None = None, *, backfill: bool = True) -> dict[int, list[str]]:
        """Stored technique tags by candidate id; with `backfill`, tags missing or made by an older tagger
        are computed now and stored (databases written before tagging existed)."""
        from cudaopt.analysis.techniques import TAGGER_VERSION

        with self.session() as s, s.begin():
            q = select(CandidateRow.id, CandidateRow.source, CandidateRow.task_id, CandidateTechniquesRow.tags,
                       CandidateTechniquesRow.tagger_version).outerjoin(
                CandidateTechniquesRow, CandidateTechniquesRow.candidate_id == CandidateRow.id)
            if candidate_ids is not None:
                q = q.where(CandidateRow.id.in_(candidate_ids))
            out: dict[int, list[str]] = {}
            ref_sources: dict[int, str | None] = {}
            for cid, source, task_id, tags, version in s.execute(q).all():
                if tags is not None and version == TAGGER_VERSION:
                    out[cid] = list(tags)
                elif backfill and source:
                    if task_id not in ref_sources:
                        task = s.get(TaskRow, task_id)
                        ref_sources[task_id] = task.source if task is not None else None
                    fresh = _techniques_row(cid, source, ref_sources[task_id])
                    s.merge(fresh)
                    out[cid] = list(fresh.tags)
            return out

    def has_source(self, task_id: int, source: str, run_id: int | None = None) -> bool:
        with self.session() as s:
            q = select(CandidateRow.id).where(CandidateRow.task_id == task_id, CandidateRow.source_hash == source_hash(source))
            if run_id is not None:
                q = q.where(CandidateRow.run_id == run_id)
            return s.scalars(q.limit(1)).first() is not None

    def candidates(self, task_id: int | None = None, run_id: int | None = None, status: str | None = None) -> list[CandidateRecord]:
        with self.session() as s:
            q = select(CandidateRow)
            if task_id is not None:
                q = q.where(CandidateRow.task_id == task_id)
            if run_id is not None:
                q = q.where(CandidateRow.run_id == run_id)
            if status is not None:
                q = q.where(CandidateRow.status == status)
            return [_record(r) for r in s.scalars(q.order_by(CandidateRow.id))]

    def count(self, task_id: int | None = None, run_id: int | None = None) -> int:
        with self.session() as s:
            q = select(func.count(CandidateRow.id))
            if task_id is not None:
                q = q.where(CandidateRow.task_id == task_id)
            if run_id is not None:
                q = q.where(CandidateRow.run_id == run_id)
            return int(s.scalar(q) or 0)

    def exemplars(self, task_id: int) -> list[Exemplar]:
        """Successful (correct and timed) candidates of a task across all runs: what prompts draw from."""
        with self.session() as s:
            q = (
                select(CandidateRow.id, CandidateRow.source, CandidateRow.speedup, CandidateRow.island, CandidateRow.round)
                .where(CandidateRow.task_id == task_id, CandidateRow.status == "ok", CandidateRow.speedup.is_not(None))
                .order_by(CandidateRow.id)
            )
            return [Exemplar(id=i, source=src, speedup=sp, island=isl, round=rnd) for i, src, sp, isl, rnd in s.execute(q)]


def _techniques_row(candidate_id: int, source: str, reference_source: str | None) -> CandidateTechniquesRow:
    from cudaopt.analysis.techniques import TAGGER_VERSION, tag_names

    return CandidateTechniquesRow(candidate_id=candidate_id, tags=sorted(tag_names(source, reference_source)),
                                  tagger_version=TAGGER_VERSION)
