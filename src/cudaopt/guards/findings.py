"""A guard finding: what a static or dynamic check saw, and what the policy does with it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum

# Every category named in the JSON output. Kept as plain strings so results stay JSON-friendly.
CATEGORIES = (
    "side_stream",
    "lazy_output",
    "problem_changed",
    "result_cache",
    "precision_downgrade",
    "timer_tamper",
    "input_mutation",
    "output_alias",
    "reference_peek",
    "no_custom_kernel",
    "exception_fallback",
    "nondeterminism",
    "uninitialised_output",
    "process_escape",
    "reference_inherit",
    "degenerate_output",
    "input_exploit",
    "drift",
    "cache_state",
)


# A finding whose message starts with this is only suspicious (e.g. fp16 types in a CUDA string of an fp32
# task): it is reported, and GuardPolicy.rejects never counts it.
HINT_PREFIX = "hint: "


def is_hint(finding: "Finding") -> bool:
    return finding.message.startswith(HINT_PREFIX)


class Action(str, Enum):
    REJECT = "reject"  # the candidate gets status "rejected" and no speedup
    FLAG = "flag"  # reported beside the result; the speedup stands
    IGNORE = "ignore"  # not reported


@dataclass(frozen=True)
class Finding:
    category: str
    message: str  # one line, says what was seen
    evidence: str = ""  # the offending line, value or kernel name
    source: str = "static"  # "static" (AST, before compiling) or "dynamic" (while evaluating)
    # Blocking: the measurement itself could not include what was seen (e.g. a thread still working after
    # the call on the CPU), so the result cannot stand whatever the category's policy, unless ignored.
    blocking: bool = False

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown finding category {self.category!r}; known: {', '.join(CATEGORIES)}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Finding":
        return cls(**{k: d[k] for k in ("category", "message", "evidence", "source", "blocking") if k in d})


@dataclass(frozen=True)
class GuardPolicy:
    """What each category does. The default rejects everything that changes what is measured and flags
    what is only suspicious; `strict()` rejects every category."""

    actions: dict = field(default_factory=lambda: dict(_DEFAULT_ACTIONS))

    def action(self, category: str) -> Action:
        return Action(self.actions.get(category, Action.REJECT))

    def with_actions(self, **overrides: str) -> "GuardPolicy":
        merged = dict(self.actions)
        merged.update({k: Action(v) for k, v in overrides.items()})
        return GuardPolicy(merged)

    @classmethod
    def strict(cls) -> "GuardPolicy":
        return cls({c: Action.REJECT for c in CATEGORIES})

    def rejects(self, findings: list[Finding]) -> list[Finding]:
        # A hint (a static pattern that honest code also uses) is reported but never rejects on its own.
        return [f for f in findings if not is_hint(f) and (
            self.action(f.category) is Action.REJECT or (f.blocking and self.action(f.category) is not Action.IGNORE))]


# Flagged, not rejected, by default: these are reported facts about an otherwise honest measurement
# (timing already includes side-stream work; a library-only "CUDA" candidate is still correct and timed;
# nondeterminism within tolerance is still correct).
_DEFAULT_ACTIONS = {c: Action.REJECT for c in CATEGORIES}
_DEFAULT_ACTIONS.update(
    side_stream=Action.FLAG,
    no_custom_kernel=Action.FLAG,
    nondeterminism=Action.FLAG,
    cache_state=Action.FLAG,
)
