"""Cut files into passages a prompt can hold, and the tokens BM25 ranks them by."""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def tokenize(text: str) -> list[str]:
    """Lower-case words; identifiers also split at underscores and case changes (`__shfl_down_sync`
    gives shfl, down, sync and the whole name), so prose and code meet on the same terms."""
    out: list[str] = []
    for word in _WORD.findall(text):
        parts = [p.lower() for piece in word.split("_") for p in _CAMEL.findall(piece)]
        whole = word.strip("_").lower()
        if len(parts) > 1 and whole:
            out.append(whole)
        out.extend(p for p in parts if len(p) > 1)
    return out


@dataclass(frozen=True)
class Chunk:
    text: str
    start_line: int  # 1-based, inclusive
    end_line: int


def chunk_text(text: str, max_chars: int = 1500) -> list[Chunk]:
    """Consecutive line ranges of at most about `max_chars`, cut at a blank line where one is near, so a
    paragraph or a function tends to stay whole. A single longer line becomes its own chunk."""
    lines = text.splitlines()
    chunks: list[Chunk] = []
    start, size, last_blank = 0, 0, -1
    i = 0
    while i < len(lines):
        size += len(lines[i]) + 1
        if not lines[i].strip():
            last_blank = i
        if size > max_chars and i > start:
            # Cut after the last blank line in the second half of the chunk, else before this line.
            cut = last_blank if last_blank >= start + (i - start) // 2 else i - 1
            chunks.append(Chunk("\n".join(lines[start:cut + 1]), start + 1, cut + 1))
            start, size, last_blank = cut + 1, 0, -1
            i = start
            continue
        i += 1
    if start < len(lines):
        chunks.append(Chunk("\n".join(lines[start:]), start + 1, len(lines)))
    return [c for c in chunks if c.text.strip()]
