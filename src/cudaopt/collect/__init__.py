"""Multi-model collection (CUDA-L1 stage 1): one-shot attempts per task and model, stored for SFT export."""

from cudaopt.collect.runner import CollectResult, collect, resolve_tasks  # noqa: F401
from cudaopt.collect.summary import (  # noqa: F401
    CollectCell,
    collect_markdown,
    collect_rich_table,
    summarize_collection,
)
