"""Contrastive and one-shot prompts (templates a user can replace) and parsing of the answers."""

from cudaopt.prompts.builder import BUILTIN_TEMPLATES, PromptBuilder, PromptTemplateError  # noqa: F401
from cudaopt.prompts.parser import ParsedResponse, parse_response  # noqa: F401
