"""Profile reports stored beside the candidates: a side table `cudaopt_profiles` (candidate id -> JSON).

A side table rather than a column, so databases written before profiling existed need no migration;
the table is created the first time a report is saved.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    delete,
    insert,
    select,
)

from cudaopt.db.store import ExemplarDB
from cudaopt.profile.report import ProfileReport

metadata = MetaData()
profiles_table = Table(
    "cudaopt_profiles", metadata,
    Column("candidate_id", Integer, primary_key=True),  # cudaopt_candidates.id
    Column("source_hash", String(64), default=""),
    Column("report", JSON, nullable=False),
    Column("created", DateTime(timezone=True)),
)


def _ensure(db: ExemplarDB) -> None:
    metadata.create_all(db.engine, checkfirst=True)


def save_profile(db: ExemplarDB, candidate_id: int, report: ProfileReport) -> None:
    """Store (or replace) the report of one stored candidate."""
    _ensure(db)
    with db.engine.begin() as conn:
        conn.execute(delete(profiles_table).where(profiles_table.c.candidate_id == candidate_id))
        conn.execute(insert(profiles_table).values(candidate_id=candidate_id, source_hash=report.source_hash,
                                                   report=report.to_dict(), created=datetime.now(timezone.utc)))


def load_profiles(db: ExemplarDB, candidate_ids: Iterable[int] | None = None) -> dict[int, ProfileReport]:
    _ensure(db)
    q = select(profiles_table.c.candidate_id, profiles_table.c.report)
    if candidate_ids is not None:
        q = q.where(profiles_table.c.candidate_id.in_(list(candidate_ids)))
    with db.engine.connect() as conn:
        return {cid: ProfileReport.from_dict(rep) for cid, rep in conn.execute(q)}


def load_profile(db: ExemplarDB, candidate_id: int) -> ProfileReport | None:
    return load_profiles(db, [candidate_id]).get(candidate_id)
