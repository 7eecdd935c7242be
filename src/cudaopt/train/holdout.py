"""The held-out split: tasks that no training stage sees, the exemplar database's sampling included.

A fraction is decided per task name (a seeded hash against the fraction), not by shuffling the set, so
the same name lands on the same side in every stage and in every run with the same seed, whatever other
tasks are present. A list of names (or a file of names, one a line) holds out exactly those.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence, Union

HoldoutSpec = Union[float, str, Sequence[str], None]


@dataclass(frozen=True)
class Split:
    train: tuple[str, ...]
    held_out: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"train": list(self.train), "held_out": list(self.held_out)}


def _unit_hash(name: str, seed: int) -> float:
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def parse_holdout(spec: HoldoutSpec) -> float | frozenset[str] | None:
    """`--holdout` as given: 0.2 / "0.2" (a fraction), "a,b" or ["a", "b"] (names), or "@names.txt" (a file)."""
    if spec is None or spec == "" or spec == 0:
        return None
    if isinstance(spec, (int, float)):
        if not 0 <= spec < 1:
            raise ValueError(f"holdout fraction {spec} is outside [0, 1); give e.g. 0.2 or a list of task names")
        return float(spec) or None
    if isinstance(spec, str):
        s = spec.strip()
        if s.startswith("@"):
            path = Path(s[1:])
            if not path.is_file():
                raise ValueError(f"holdout file {path} does not exist; give a file with one task name a line")
            return frozenset(line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#"))
        try:
            return parse_holdout(float(s))
        except ValueError as e:
            if "outside" in str(e):
                raise
        return frozenset(n.strip() for n in s.split(",") if n.strip())
    return frozenset(str(n) for n in spec)


def split_tasks(names: Iterable[str], holdout: HoldoutSpec = None, *, seed: int = 0) -> Split:
    """Training and held-out task names, each sorted. Unknown names in a list are simply not present."""
    names = sorted(set(names))
    rule = parse_holdout(holdout)
    if rule is None:
        return Split(tuple(names), ())
    if isinstance(rule, float):
        held = [n for n in names if _unit_hash(n, seed) < rule]
    else:
        held = [n for n in names if n in rule]
    return Split(tuple(n for n in names if n not in held), tuple(held))


def write_split(split: Split, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(split.to_dict(), indent=2) + "\n")
    return path
