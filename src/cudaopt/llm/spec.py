"""Turn the `--llm` string into a backend.

  replay:answers.jsonl                 recorded answers
  http://host:8000/v1                  an OpenAI-compatible server (the model it serves)
  http://host:8000/v1#my-model         ... asking for a named model
  openai:gpt-4o                        api.openai.com, key from OPENAI_API_KEY
  transformers:/path/or/hub-name       local generation (hf: works too)
"""

from __future__ import annotations

from cudaopt.llm.base import LLM, LLMError


def make_llm(spec: str | LLM | None, **kw) -> LLM | None:
    if spec is None or isinstance(spec, LLM):
        return spec
    s = spec.strip()
    if s.startswith("replay:"):
        from cudaopt.llm.replay import ReplayLLM

        return ReplayLLM(s.removeprefix("replay:"))
    if s.startswith(("http://", "https://")):
        from cudaopt.llm.openai_chat import OpenAIChatLLM

        url, _, model = s.partition("#")
        return OpenAIChatLLM(model or None, url, **kw)
    if s.startswith("openai:"):
        from cudaopt.llm.openai_chat import OpenAIChatLLM

        return OpenAIChatLLM(s.removeprefix("openai:"), None, **kw)
    if s.startswith(("transformers:", "hf:")):
        from cudaopt.llm.transformers_local import TransformersLLM

        return TransformersLLM(s.split(":", 1)[1], **kw)
    if s.endswith(".jsonl"):
        from cudaopt.llm.replay import ReplayLLM

        return ReplayLLM(s)
    raise LLMError(f"cannot read --llm {spec!r}; use replay:FILE.jsonl, http(s)://HOST/v1[#MODEL], openai:MODEL or transformers:MODEL")
