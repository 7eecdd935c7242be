"""Retrieval context (CUDA-L2): a local store of passages from documents and code the user may use,
ranked with BM25 (rank-bm25) and rendered, with their sources, into prompts."""

from cudaopt.retrieval.chunking import Chunk, chunk_text, tokenize  # noqa: F401
from cudaopt.retrieval.prompt import RetrievalPromptBuilder, task_query  # noqa: F401
from cudaopt.retrieval.store import (  # noqa: F401
    AddReport,
    KnowledgeStore,
    Passage,
    RetrievalError,
    render_context,
)
