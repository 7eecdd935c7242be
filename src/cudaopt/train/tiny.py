"""Tiny causal LMs built from a config, with a tokenizer made here: for CPU tests and smoke runs.

Nothing is downloaded. `char` tokenizers cover printable ASCII and newline one character a token (enough
to write Python); `word` tokenizers split on whitespace over a given vocabulary; `bpe` tokenizers are
byte-level BPE trained here on given texts (exact round trip of any text, 3-4x fewer tokens than `char`
on CUDA sources: shorter sequences to memorise and to generate).
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Sequence

SPECIALS = ("[PAD]", "[UNK]", "[EOS]")


def char_tokenizer():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = [c for c in string.printable if c not in "\r\x0b\x0c"]
    vocab = {t: i for i, t in enumerate(list(SPECIALS) + chars)}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tk.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]")


def word_tokenizer(words: Sequence[str]):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(list(SPECIALS) + [w for w in dict.fromkeys(words) if w not in SPECIALS])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]")


def bpe_tokenizer(texts: Sequence[str], vocab_size: int = 2000):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(list(texts), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]")


def tiny_model(tokenizer, *, arch: str = "gpt2", hidden: int = 64, layers: int = 2, heads: int = 2,
               max_positions: int = 1024, seed: int = 0, dropout: float = 0.0):
    """A randomly initialised causal LM. `dropout` defaults to 0 (GPT-2's config says 0.1): these models are
    meant to memorise a handful of answers, and a policy with dropout scores its own samples differently
    from the dropout-free reference model GRPO compares it with."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    ids = dict(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.eos_token_id)
    if arch == "gpt2":
        cfg = GPT2Config(vocab_size=len(tokenizer), n_positions=max_positions, n_embd=hidden, n_layer=layers, n_head=heads,
                         resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout, **ids)
        return GPT2LMHeadModel(cfg)
    if arch == "llama":
        cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                          num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=max_positions,
                          attention_dropout=dropout, **ids)
        return LlamaForCausalLM(cfg)
    raise ValueError(f"unknown tiny arch {arch!r}; use gpt2 or llama")


def save_tiny(folder: str | Path, *, tokenizer=None, **model_kw) -> Path:
    """Build a tiny model (character tokenizer unless one is given) and save both to `folder`."""
    folder = Path(folder)
    tok = tokenizer or char_tokenizer()
    model = tiny_model(tok, **model_kw)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
