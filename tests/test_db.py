"""The exemplar database on SQLite (always) and PostgreSQL (when CUDAOPT_TEST_PG_URL is set)."""

import os
import uuid

import pytest

from cudaopt.db import CandidateRecord, ExemplarDB, database_url, source_hash
from cudaopt.db.models import Base
from cudaopt.evaluate.result import EvalResult, Timing
from cudaopt.tasks.loader import Task

PG_URL = os.environ.get("CUDAOPT_TEST_PG_URL")
TASK = Task(name="tiny_add", level=1, source="import torch\nclass Model: ...\n")


def ok_result(speedup: float) -> EvalResult:
    t = Timing(speedup_raw=speedup, speedup=speedup, ci_low=speedup * 0.99, ci_high=speedup * 1.01,
               bucket_means=(speedup,) * 7, bucket_variance=0.0, stable=True, rounds=70,
               ref_time_us=10.0, cand_time_us=10.0 / speedup, seconds=1.0)
    return EvalResult(status="ok", stage_reached="timed", correct=True, timing=t, device_name="FakeGPU",
                      gpu_seconds=2.5, task="tiny_add")


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    if request.param == "sqlite":
        d = ExemplarDB(tmp_path / "ex.db")
    else:
        if not PG_URL:
            pytest.skip("PostgreSQL not tested: set CUDAOPT_TEST_PG_URL=postgresql+psycopg://user:pw@host/db")
        d = ExemplarDB(PG_URL)
        Base.metadata.drop_all(d.engine)  # a clean schema for each test
        Base.metadata.create_all(d.engine)
    yield d
    d.close()


def test_round_trip_of_a_candidate_with_its_full_result(db):
    run = db.start_run("r1", {"budget": 4})
    tid = db.ensure_task(TASK)
    assert db.ensure_task(TASK) == tid  # idempotent
    res = ok_result(1.7)
    rec = db.add_candidate(CandidateRecord.from_result(
        res, task_id=tid, run_id=run.id, source="class ModelNew: pass\n", parent_ids=(3, 4), origin="llm",
        model="m", prompt="p", response="r", prompt_tokens=10, completion_tokens=20, round=2, island=1))
    assert rec.id is not None and rec.created is not None
    [back] = db.candidates(task_id=tid)
    assert back.eval_result == res  # the full EvalResult survives the JSON round trip
    assert back.speedup == 1.7 and back.gpu_name == "FakeGPU" and back.gpu_seconds == 2.5
    assert back.parent_ids == (3, 4) and back.tokens == 30 and back.round == 2 and back.island == 1
    assert back.source_hash == source_hash("class ModelNew: pass")


def test_every_write_is_committed_at_once(db):
    run = db.start_run("r", {})
    tid = db.ensure_task(TASK)
    db.add_candidate(CandidateRecord(task_id=tid, run_id=run.id, source="x = 1\n", status="parse_error"))
    other = ExemplarDB(db.url)  # a second connection, as another process would have
    try:
        assert other.count(task_id=tid) == 1
        assert other.has_source(tid, "x = 1   \n")  # trailing whitespace does not make new work
        assert not other.has_source(tid, "x = 2\n")
    finally:
        other.close()


def test_exemplars_are_the_successful_candidates(db):
    run = db.start_run("r", {})
    tid = db.ensure_task(TASK)
    for i, s in enumerate([1.2, 2.0]):
        db.add_candidate(CandidateRecord.from_result(ok_result(s), task_id=tid, run_id=run.id, source=f"v{i}", island=i))
    bad = EvalResult(status="incorrect", stage_reached="correct", message="max abs error 3.0")
    db.add_candidate(CandidateRecord.from_result(bad, task_id=tid, run_id=run.id, source="bad"))
    ex = db.exemplars(tid)
    assert [e.speedup for e in ex] == [1.2, 2.0] and [e.island for e in ex] == [0, 1]
    assert [c.status for c in db.candidates(task_id=tid, status="incorrect")] == ["incorrect"]


def test_runs_are_found_again_for_resume(db):
    name = f"run-{uuid.uuid4().hex[:6]}"
    first = db.start_run(name, {"a": 1})
    second = db.start_run(name, {"a": 2})
    assert db.latest_run(name).id == second.id != first.id
    db.finish_run(second.id)
    assert db.latest_run(name).status == "finished"
    db.reopen_run(second.id)
    assert db.latest_run(name).config == {"a": 2} and db.latest_run(name).status == "running"
    assert db.latest_run("nothing-here") is None


def test_database_url_accepts_paths_and_urls(tmp_path):
    assert database_url(tmp_path / "a" / "x.db").startswith("sqlite:///")
    assert (tmp_path / "a").is_dir()
    assert database_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"


SHUFFLE_KERNEL = '''
from torch.utils.cpp_extension import load_inline
src = r"""
__global__ void k(const float* x, float* y, int n) {
    float v = x[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) y[blockIdx.x] = v;
}
"""
'''


def test_each_candidate_is_stored_with_its_technique_tags(db):
    from cudaopt.analysis.techniques import tag_names

    run = db.start_run("r", {})
    tid = db.ensure_task(TASK)
    rec = db.add_candidate(CandidateRecord.from_result(ok_result(2.0), task_id=tid, run_id=run.id, source=SHUFFLE_KERNEL))
    stored = db.techniques([rec.id], backfill=False)
    assert set(stored[rec.id]) == tag_names(SHUFFLE_KERNEL, TASK.source)
    assert "warp_shuffle" in stored[rec.id] and "custom_kernel" in stored[rec.id]


def test_tags_missing_or_from_an_older_tagger_are_computed_and_stored(db, monkeypatch):
    from cudaopt.analysis import techniques
    from cudaopt.db.models import CandidateTechniquesRow

    run = db.start_run("r", {})
    tid = db.ensure_task(TASK)
    rec = db.add_candidate(CandidateRecord.from_result(ok_result(2.0), task_id=tid, run_id=run.id, source=SHUFFLE_KERNEL))
    with db.session() as s, s.begin():  # as in a database written before tags were stored
        s.delete(s.get(CandidateTechniquesRow, rec.id))
    assert db.techniques([rec.id], backfill=False) == {}
    assert "warp_shuffle" in db.techniques([rec.id])[rec.id]
    assert "warp_shuffle" in db.techniques([rec.id], backfill=False)[rec.id]  # stored by the backfill
    monkeypatch.setattr(techniques, "TAGGER_VERSION", techniques.TAGGER_VERSION + 1)
    assert db.techniques([rec.id], backfill=False) == {}  # stale: made by an older tagger
    assert "warp_shuffle" in db.techniques([rec.id])[rec.id]


def test_two_processes_creating_one_new_database_at_once(tmp_path):
    """Both see no tables and both CREATE; the slower one must open the database, not fail."""
    import subprocess
    import sys

    path = tmp_path / "race.db"
    code = ("import sys; from cudaopt.db import ExemplarDB\n"
            "for i in range(20):\n"
            "    p = sys.argv[1] + str(i)\n"
            "    with ExemplarDB(p) as db: db.count()\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)], stderr=subprocess.PIPE, text=True) for _ in range(3)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], "\n".join(e[-1500:] for e in errs)


def test_wal_switch_retries_a_database_that_answers_locked():
    """enable_wal (session 25): SQLite can answer the journal-mode switch with "database is locked" at once while
    another process creates the same new file; the switch is retried, other errors and a lock that outlasts the
    wait are raised, and a file already in WAL mode is left alone."""
    import sqlite3

    from cudaopt.db.store import enable_wal

    class Conn:
        def __init__(self, mode, fails, error="database is locked"):
            self.mode, self.fails, self.error, self.sets = mode, fails, error, 0

        def execute(self, sql):
            if sql == "PRAGMA journal_mode":
                return self
            self.sets += 1
            if self.fails:
                self.fails -= 1
                raise sqlite3.OperationalError(self.error)
            self.mode = "wal"
            return self

        def fetchone(self):
            return (self.mode,)

    c = Conn("delete", fails=3)
    enable_wal(c)
    assert c.mode == "wal" and c.sets == 4  # three refusals, then the switch
    done = Conn("WAL", fails=5)
    enable_wal(done)
    assert done.sets == 0  # already WAL: no switch asked for
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        enable_wal(Conn("delete", fails=1, error="disk I/O error"))
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        enable_wal(Conn("delete", fails=10**6), wait_s=0.2)
