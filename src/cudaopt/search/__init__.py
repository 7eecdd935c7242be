"""The inference-time search (`cudaopt optimize`): built-in proposers, contrastive LLM rounds, reports."""

from cudaopt.search.loop import SearchConfig, SearchResult, TaskSearch, optimize  # noqa: F401
from cudaopt.search.proposers import (  # noqa: F401
    DEFAULT_PROPOSERS,
    PROPOSERS,
    Proposal,
    builtin_proposals,
    propose,
)
from cudaopt.search.suite import SuiteResult, optimize_suite  # noqa: F401
