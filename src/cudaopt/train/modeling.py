"""Loading the policy and its tokenizer, the chat/plain prompt format, and settings shared by the stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def require_training_stack() -> None:
    try:
        import datasets  # noqa: F401
        import peft  # noqa: F401
        import transformers  # noqa: F401
        import trl  # noqa: F401
    except ImportError as e:
        raise ImportError(f"training needs {e.name}: pip install 'cudaopt[train]'") from None


def load_tokenizer(model: Any, tokenizer: Any = None):
    if tokenizer is not None:
        return tokenizer if not isinstance(tokenizer, (str, Path)) else _auto_tokenizer(str(tokenizer))
    if isinstance(model, (str, Path)):
        return _auto_tokenizer(str(model))
    raise ValueError("pass tokenizer= together with a loaded model")


def _auto_tokenizer(name: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(name)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_model(model: Any):
    """A path or hub name loaded with AutoModelForCausalLM, or a loaded model as is."""
    if not isinstance(model, (str, Path)):
        return model
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(model), dtype="auto")


def uses_chat(tokenizer: Any, chat: bool | None) -> bool:
    """Chat format when asked, or (None) when the tokenizer has a chat template."""
    return bool(getattr(tokenizer, "chat_template", None)) if chat is None else chat


def as_prompt(text: str, chat: bool) -> Any:
    return [{"role": "user", "content": text}] if chat else text


def as_completion(text: str, chat: bool) -> Any:
    return [{"role": "assistant", "content": text}] if chat else text


def completion_text(completion: Any) -> str:
    """TRL hands plain strings, or for chat data a list of messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "\n".join(m.get("content", "") for m in completion if isinstance(m, dict) and m.get("role", "assistant") == "assistant")
    return str(completion)


def default_bf16() -> bool:
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass(frozen=True)
class LoraSettings:
    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: str | tuple[str, ...] = "all-linear"

    def peft_config(self):
        from peft import LoraConfig

        targets = self.target_modules if isinstance(self.target_modules, str) else list(self.target_modules)
        return LoraConfig(r=self.r, lora_alpha=self.alpha, lora_dropout=self.dropout, target_modules=targets, task_type="CAUSAL_LM")


@dataclass(frozen=True)
class FinetuneSettings:
    """What the SFT and self-supervised stages share (TRL SFTConfig fields under other names)."""

    epochs: float = 1.0
    learning_rate: float = 2e-5
    batch_size: int = 1
    grad_accum: int = 8
    max_length: int | None = 8192
    save_steps: int = 200
    logging_steps: int = 10
    seed: int = 0
    bf16: bool | None = None  # None: on where the GPU supports it
    lora: LoraSettings | None = None
    overrides: dict = field(default_factory=dict)  # any other SFTConfig field


def latest_checkpoint(folder: Path) -> Path | None:
    cps = sorted((p for p in folder.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()),
                 key=lambda p: int(p.name.split("-")[-1]))
    return cps[-1] if cps else None


def save_final(model, tokenizer, folder: Path) -> Path:
    """Save a plain model (LoRA adapters merged in) with its tokenizer, ready for the next stage."""
    from peft import PeftModel

    if isinstance(model, PeftModel):
        model = model.merge_and_unload()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
