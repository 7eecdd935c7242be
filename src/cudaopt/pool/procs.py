"""Which processes an evaluation left behind: for leak checks in tests, benchmarks and the service.

Reads /proc (Linux), so it needs no extra dependency.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# multiprocessing's helpers live for the whole parent process by design (the evaluator's forkserver
# with torch preloaded, and the resource tracker); what they fork for an evaluation does not.
_HELPERS = ("multiprocessing.forkserver", "multiprocessing.resource_tracker")


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    cmdline: str


def _processes() -> list[ProcessInfo]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # it ended while we looked
            continue
        # The command name in parentheses may contain spaces; the fields after it are fixed.
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":  # a zombie is already dead; its parent reaps it
            continue
        found.append(ProcessInfo(int(entry.name), int(fields[1]), cmdline))
    return found


def descendants(pid: int | None = None) -> list[ProcessInfo]:
    pid = pid or os.getpid()
    procs = _processes()
    children: dict[int, list[ProcessInfo]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child.pid)
    return out


def stray_processes(pid: int | None = None) -> list[ProcessInfo]:
    """Descendants of `pid` (default: this process) other than multiprocessing's long-lived helpers."""
    pid = pid or os.getpid()
    return [p for p in descendants(pid) if not (p.ppid == pid and any(h in p.cmdline for h in _HELPERS))]
