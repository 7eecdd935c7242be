"""OpenAI-compatible chat completions over HTTP: hosted APIs, vLLM, SGLang (the official `openai` client)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from cudaopt.llm.base import LLM, Completion, LLMError, estimate_tokens

OPENAI_HOST = "api.openai.com"


class OpenAIChatLLM(LLM):
    """One request per answer (n=1 each: not every server supports n>1), `concurrency` in flight at once.

    The client retries connection errors, 408/409/429 and 5xx with exponential backoff (`max_retries`);
    `timeout_s` bounds each request. A self-hosted server (vLLM, SGLang) needs no key: without the
    environment variable the key is a placeholder. `model=None` asks the server which model it serves.
    """

    def __init__(self, model: str | None = None, base_url: str | None = None, *, api_key_env: str = "OPENAI_API_KEY",
                 max_retries: int = 3, timeout_s: float = 600.0, concurrency: int = 8, temperature: float = 1.0,
                 max_tokens: int | None = None, system_prompt: str | None = None, extra_body: dict | None = None):
        try:
            import openai
        except ImportError:
            raise LLMError("the OpenAI-compatible backend needs the openai client: pip install 'cudaopt[llm]'") from None
        key = os.environ.get(api_key_env)
        if not key:
            if base_url is None or OPENAI_HOST in base_url:
                raise LLMError(f"no API key: set {api_key_env} (or pass a base URL of a self-hosted server)")
            key = "EMPTY"
        self.client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=max_retries, timeout=timeout_s)
        self.base_url = base_url
        self.concurrency = max(1, concurrency)
        self.temperature, self.max_tokens = temperature, max_tokens
        self.system_prompt, self.extra_body = system_prompt, extra_body
        if model is None:
            try:
                served = self.client.models.list().data
            except Exception as e:  # noqa: BLE001 - any connection problem becomes one line
                raise LLMError(f"cannot list models at {base_url}: {e}; pass the model name") from None
            if not served:
                raise LLMError(f"{base_url} serves no models; pass the model name")
            model = served[0].id
        self.model = model

    def _one(self, prompt: str, kw: dict) -> Completion:
        messages = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else []) + [
            {"role": "user", "content": prompt}
        ]
        args = {"model": self.model, "messages": messages, "temperature": kw.get("temperature", self.temperature)}
        if kw.get("max_tokens", self.max_tokens) is not None:
            args["max_tokens"] = kw.get("max_tokens", self.max_tokens)
        if self.extra_body:
            args["extra_body"] = self.extra_body
        try:
            resp = self.client.chat.completions.create(**args)
        except Exception as e:  # noqa: BLE001 - after the client's retries a failure is a result
            return Completion("", estimate_tokens(prompt), 0, self.model, "error", f"{type(e).__name__}: {e}")
        choice = resp.choices[0]
        text = choice.message.content or ""
        usage = resp.usage
        return Completion(
            text=text,
            prompt_tokens=usage.prompt_tokens if usage else estimate_tokens(prompt),
            completion_tokens=usage.completion_tokens if usage else estimate_tokens(text),
            model=resp.model or self.model,
            finish_reason=choice.finish_reason or "",
        )

    def generate(self, prompts: list[str], n: int = 1, **kw) -> list[Completion]:
        jobs = [p for p in prompts for _ in range(n)]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, max(1, len(jobs)))) as pool:
            return list(pool.map(lambda p: self._one(p, kw), jobs))

    def close(self) -> None:
        self.client.close()
