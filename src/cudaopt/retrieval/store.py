"""KnowledgeStore: passages from folders the user may use, kept in SQLite, ranked with BM25.

The store is a folder holding `knowledge.sqlite` (files with their hashes, passages with their tokens).
Adding a folder again re-reads only files whose content changed. The BM25 index (rank-bm25) is rebuilt
from the stored tokens when the store is first searched; that takes well under a second for tens of
thousands of passages, so no second copy of the index is kept on disk. The BM25+
variant is used because its term weight log((N+1)/n) stays positive: Okapi's weight is zero or below for
a term in half the passages or more, which in a small store hides real matches.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudaopt.retrieval.chunking import chunk_text, tokenize

DEFAULT_SUFFIXES = (".md", ".txt", ".rst", ".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp", ".py")
MAX_FILE_BYTES = 2_000_000  # bigger files are usually generated or data, not knowledge

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, passages INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS passages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, text TEXT NOT NULL, tokens TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS passages_path ON passages(path);
"""


class RetrievalError(RuntimeError):
    """The store cannot be used as asked; the message says what to do."""


@dataclass(frozen=True)
class Passage:
    text: str
    source: str  # "path:first-last" (lines)
    score: float


@dataclass(frozen=True)
class AddReport:
    added: int  # files read for the first time or changed since
    unchanged: int
    skipped: int  # too large, not text, or unreadable
    passages: int  # passages written by this call


def _bm25_class():
    try:
        from rank_bm25 import BM25Plus
    except ImportError:
        raise RetrievalError("retrieval needs rank-bm25: pip install rank-bm25 (or 'cudaopt[retrieval]')") from None
    return BM25Plus


class KnowledgeStore:
    """`KnowledgeStore(folder)`; `add_folder(path)`; `search(query, k)`."""

    def __init__(self, path: str | Path, max_chars: int = 1500):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.max_chars = max_chars
        self.db = sqlite3.connect(self.path / "knowledge.sqlite")
        self.db.executescript(_SCHEMA)
        self._index = None  # (BM25 index, rows) built on first search after a change

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> KnowledgeStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM passages").fetchone()[0])

    def sources(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT path FROM files ORDER BY path")]

    # -- filling ---------------------------------------------------------------------------------------
    def add_file(self, file: str | Path, name: str | None = None) -> str:
        """Store one file's passages under `name` (default: its path). Returns added|unchanged|skipped."""
        file = Path(file)
        name = name or str(file)
        try:
            data = file.read_bytes()
        except OSError:
            return "skipped"
        if len(data) > MAX_FILE_BYTES or b"\0" in data[:4096]:
            return "skipped"
        digest = hashlib.sha256(data).hexdigest()
        row = self.db.execute("SELECT sha256 FROM files WHERE path = ?", (name,)).fetchone()
        if row and row[0] == digest:
            return "unchanged"
        chunks = chunk_text(data.decode("utf-8", errors="replace"), self.max_chars)
        with self.db:
            self.db.execute("DELETE FROM passages WHERE path = ?", (name,))
            self.db.executemany(
                "INSERT INTO passages (path, start_line, end_line, text, tokens) VALUES (?, ?, ?, ?, ?)",
                [(name, c.start_line, c.end_line, c.text, json.dumps(tokenize(c.text))) for c in chunks])
            self.db.execute("INSERT OR REPLACE INTO files (path, sha256, passages) VALUES (?, ?, ?)", (name, digest, len(chunks)))
        self._index = None
        return "added"

    def add_folder(self, folder: str | Path, suffixes: Iterable[str] = DEFAULT_SUFFIXES) -> AddReport:
        """Every file under `folder` with one of `suffixes` (hidden folders left out). Sources are stored
        relative to the folder's parent, e.g. `cuda-guide/shared-memory.md`."""
        root = Path(folder).expanduser().resolve()
        if not root.is_dir():
            raise RetrievalError(f"{folder}: no such folder; give a folder of documents or code you may use")
        wanted = {s.lower() for s in suffixes}
        counts = {"added": 0, "unchanged": 0, "skipped": 0}
        before = len(self)
        for f in sorted(root.rglob("*")):
            rel = f.relative_to(root)
            if not f.is_file() or f.suffix.lower() not in wanted or any(p.startswith(".") for p in rel.parts):
                continue
            counts[self.add_file(f, str(Path(root.name) / rel))] += 1
        return AddReport(counts["added"], counts["unchanged"], counts["skipped"], max(0, len(self) - before))

    # -- searching -------------------------------------------------------------------------------------
    def _ensure_index(self):
        if self._index is None:
            rows = self.db.execute("SELECT path, start_line, end_line, text, tokens FROM passages ORDER BY id").fetchall()
            corpus = [json.loads(r[4]) or ["\0"] for r in rows]  # rank-bm25 divides by document length
            self._index = (_bm25_class()(corpus) if rows else None, rows)
        return self._index

    def search(self, query: str, k: int = 4) -> list[Passage]:
        """The k passages that best match `query`, best first; passages sharing no term are never returned."""
        bm25, rows = self._ensure_index()
        terms = tokenize(query)
        if bm25 is None or not terms or k < 1:
            return []
        scores = bm25.get_scores(terms)
        term_set = set(terms)
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], i))
        out: list[Passage] = []
        for i in order:
            if len(out) >= k:
                break
            path, first, last, text, tokens = rows[i]
            if term_set.isdisjoint(json.loads(tokens)):
                continue
            out.append(Passage(text, f"{path}:{first}-{last}", float(scores[i])))
        return out


def render_context(passages: Sequence[Passage], max_chars: int = 6000) -> str:
    """The passages as a prompt section, each headed by its source; empty when there are none."""
    if not passages:
        return ""
    parts = ["## Reference material (retrieved from the local knowledge store; sources named)", ""]
    used = 0
    for i, p in enumerate(passages, 1):
        text = p.text.strip()
        if used + len(text) > max_chars and i > 1:
            break
        used += len(text)
        parts += [f"### [{i}] {p.source}", "```", text, "```", ""]
    return "\n".join(parts).rstrip() + "\n"
