"""Local generation with Hugging Face `transformers` (imported only when this backend is used)."""

from __future__ import annotations

from cudaopt.llm.base import LLM, Completion, LLMError


class TransformersLLM(LLM):
    """`model` is a name/path (loaded with AutoModelForCausalLM) or a loaded model with `.generate`;
    `tokenizer` likewise (defaults to the model's). Prompts go through the chat template when the
    tokenizer has one, are left-padded in batches of `batch_size`, and sampled n times each."""

    def __init__(self, model, tokenizer=None, *, device: str | None = None, max_new_tokens: int = 4096,
                 temperature: float = 1.0, top_p: float = 0.95, batch_size: int = 4, use_chat_template: bool = True):
        if isinstance(model, str):
            try:
                from transformers import AutoModelForCausalLM, AutoTokenizer
            except ImportError:
                raise LLMError("the transformers backend needs transformers: pip install 'cudaopt[train]'") from None
            name = model
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(name)
            model = AutoModelForCausalLM.from_pretrained(name, torch_dtype="auto")
            self.model = name
        else:
            if tokenizer is None:
                raise LLMError("pass the tokenizer together with a loaded model")
            self.model = getattr(getattr(model, "config", None), "name_or_path", "") or type(model).__name__
        if device is not None:
            model = model.to(device)
        self.lm, self.tokenizer = model, tokenizer
        self.tokenizer.padding_side = "left"  # decoder-only batches must end where generation starts
        if getattr(self.tokenizer, "pad_token_id", None) is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        self.batch_size, self.use_chat_template = max(1, batch_size), use_chat_template

    def _render(self, prompt: str) -> str:
        if self.use_chat_template and getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
        return prompt

    def generate(self, prompts: list[str], n: int = 1, **kw) -> list[Completion]:
        import torch

        out: list[Completion] = []
        temperature = kw.get("temperature", self.temperature)
        for start in range(0, len(prompts), self.batch_size):
            batch = [self._render(p) for p in prompts[start : start + self.batch_size]]
            enc = self.tokenizer(batch, return_tensors="pt", padding=True)
            device = getattr(self.lm, "device", None)
            if device is not None:
                enc = {k: v.to(device) for k, v in enc.items()}
            sample = temperature > 0
            with torch.no_grad():
                seqs = self.lm.generate(
                    **enc, max_new_tokens=kw.get("max_new_tokens", self.max_new_tokens), do_sample=sample,
                    temperature=temperature if sample else None, top_p=self.top_p if sample else None,
                    num_return_sequences=n, pad_token_id=self.tokenizer.pad_token_id,
                )
            width = enc["input_ids"].shape[1]
            prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
            for row, seq in enumerate(seqs):
                new = seq[width:]
                eos = self.tokenizer.eos_token_id
                # Count tokens up to and including the first end-of-sequence; the rest is padding.
                n_new = len(new)
                if eos is not None:
                    hits = (new == eos).nonzero()
                    if len(hits):
                        n_new = int(hits[0]) + 1
                text = self.tokenizer.decode(new[:n_new], skip_special_tokens=True)
                finish = "stop" if n_new < len(new) or (eos is not None and n_new and int(new[n_new - 1]) == eos) else "length"
                out.append(Completion(text, int(prompt_lens[row // n]), n_new, self.model, finish))
        return out
