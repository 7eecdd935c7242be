"""Take the code out of a model's answer, or say clearly why there is none."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

CODE_SECTION = "code implementation"
_FENCE = re.compile(r"^\s*```\s*([\w+-]*)\s*$")
_HEADING = re.compile(r"^##(?!#)\s*(.+?)\s*#*\s*$")
_DEFINES_MODELNEW = re.compile(r"^class\s+ModelNew\b", re.M)
_PYTHON_LANGS = {"", "python", "py", "python3"}


@dataclass(frozen=True)
class CodeBlock:
    lang: str
    code: str
    section: str  # the `## ` heading it sits under, lower case ("" before the first heading)
    closed: bool


@dataclass(frozen=True)
class ParsedResponse:
    code: str | None
    reason: str = ""  # why there is no code; empty when there is
    sections: dict = field(default_factory=dict)  # heading (lower case) -> text under it

    @property
    def ok(self) -> bool:
        return self.code is not None


def scan(text: str) -> tuple[dict[str, str], list[CodeBlock]]:
    """Split an answer into `## ` sections and fenced code blocks; headings inside code do not count."""
    sections: dict[str, list[str]] = {}
    blocks: list[CodeBlock] = []
    section, in_fence, lang, body = "", False, "", []
    for line in text.splitlines():
        fence = _FENCE.match(line)
        if in_fence:
            if fence and not fence.group(1):
                blocks.append(CodeBlock(lang, "\n".join(body), section, closed=True))
                in_fence = False
            else:
                body.append(line)
        elif fence:
            in_fence, lang, body = True, fence.group(1).lower(), []
        else:
            heading = _HEADING.match(line)
            if heading:
                section = heading.group(1).strip().lower().rstrip(":")
                sections.setdefault(section, [])
                continue
        sections.setdefault(section, []).append(line)
    if in_fence:
        blocks.append(CodeBlock(lang, "\n".join(body), section, closed=False))
    return {k: "\n".join(v).strip() for k, v in sections.items()}, blocks


def parse_response(text: str) -> ParsedResponse:
    """The python block of `## Code Implementation`, else the last python block defining ModelNew."""
    if not text or not text.strip():
        return ParsedResponse(None, "the answer is empty")
    sections, blocks = scan(text)
    python = [b for b in blocks if b.lang in _PYTHON_LANGS]
    if not python:
        return ParsedResponse(None, "the answer has no python code block (```python ... ```)", sections)
    in_section = [b for b in python if b.section == CODE_SECTION]
    defining = [b for b in python if _DEFINES_MODELNEW.search(b.code)]
    section_defining = [b for b in in_section if _DEFINES_MODELNEW.search(b.code)]
    chosen = (section_defining or defining or [None])[-1]
    if chosen is None:
        return ParsedResponse(None, "no python code block defines `class ModelNew`", sections)
    if not chosen.closed:
        return ParsedResponse(None, "the code block is not closed: the answer was probably cut off at the token limit", sections)
    try:
        ast.parse(chosen.code)
    except SyntaxError as e:
        return ParsedResponse(None, f"the code does not parse: line {e.lineno}: {e.msg}", sections)
    return ParsedResponse(chosen.code.strip() + "\n", "", sections)
