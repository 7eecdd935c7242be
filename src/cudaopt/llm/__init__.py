"""LLM backends behind one interface (`LLM.generate(prompts, n) -> list[Completion]`)."""

from cudaopt.llm.base import LLM, Completion, LLMError, estimate_tokens  # noqa: F401
from cudaopt.llm.replay import ReplayBook, ReplayLLM, ReplayRecord, load_replay  # noqa: F401
from cudaopt.llm.spec import make_llm  # noqa: F401
