"""The inference-time search (`cudaopt optimize`): built-in proposers, contrastive LLM rounds, reports.

The proposers load eagerly (they need only the task loader); the loop and the suite, which need the exemplar
database (SQLAlchemy), load on first use, so `cudaopt.search.proposers` imports where SQLAlchemy is absent.
"""

from importlib import import_module

from cudaopt.search.proposers import (  # noqa: F401
    DEFAULT_PROPOSERS,
    PROPOSERS,
    Proposal,
    builtin_proposals,
    propose,
)

_LAZY = {"SearchConfig": "loop", "SearchResult": "loop", "TaskSearch": "loop", "optimize": "loop",
         "SuiteResult": "suite", "optimize_suite": "suite"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f"cudaopt.search.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'cudaopt.search' has no attribute {name!r}")
