"""The exemplar database's tables (SQLAlchemy 2.0 ORM): runs, tasks and evaluated candidates.

Only storage lives here; which candidates go into a prompt is decided in `cudaopt.db.sampling`.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    pass


class RunRow(Base):
    """One `cudaopt optimize` invocation (one task, or a whole suite)."""

    __tablename__ = "cudaopt_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(255), index=True)
    kind: Mapped[str] = mapped_column(String(16), default="task")  # "task" or "suite"
    config: Mapped[dict] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="running")  # running | finished
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class TaskRow(Base):
    """A reference module. Same name with a different source is a different task."""

    __tablename__ = "cudaopt_tasks"
    __table_args__ = (UniqueConstraint("name", "digest", name="uq_cudaopt_task_name_digest"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(255), index=True)
    level: Mapped[int] = mapped_column(Integer, default=0)
    digest: Mapped[str] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(Text)


class CandidateRow(Base):
    """One evaluated (or unparseable) candidate, with everything needed to reproduce and cost it."""

    __tablename__ = "cudaopt_candidates"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("cudaopt_tasks.id"), index=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("cudaopt_runs.id"), index=True)
    source: Mapped[str] = mapped_column(Text)
    source_hash: Mapped[str] = mapped_column(String(64), index=True)
    parent_ids: Mapped[list] = mapped_column(JSON, default=list)
    origin: Mapped[str] = mapped_column(String(64), default="llm")  # "llm", "oneshot", "proposer:<name>", ...
    model: Mapped[str] = mapped_column(String(255), default="")
    prompt: Mapped[str] = mapped_column(Text, default="")
    response: Mapped[str] = mapped_column(Text, default="")
    result: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # EvalResult.to_dict()
    status: Mapped[str] = mapped_column(String(32), index=True)  # an EvalResult status, or "parse_error"
    stage_reached: Mapped[str] = mapped_column(String(32), default="")
    note: Mapped[str] = mapped_column(Text, default="")  # why a candidate never reached the evaluator
    speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    gpu_name: Mapped[str] = mapped_column(String(255), default="")
    gpu_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    round: Mapped[int] = mapped_column(Integer, default=0)
    island: Mapped[int] = mapped_column(Integer, default=0)
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class CandidateTechniquesRow(Base):
    """The techniques a candidate's source uses (`cudaopt.analysis.techniques`), written with it.

    A table of its own, so databases made before it existed gain it without touching their rows; the
    tagger's version says when stored tags are stale and must be computed again.
    """

    __tablename__ = "cudaopt_candidate_techniques"

    candidate_id: Mapped[int] = mapped_column(ForeignKey("cudaopt_candidates.id"), primary_key=True)
    tags: Mapped[list] = mapped_column(JSON, default=list)
    tagger_version: Mapped[int] = mapped_column(Integer, default=1)
