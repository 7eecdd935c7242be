"""What each ablation variant changes in the search, or why the search alone cannot run it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    sampler: str = "bucket"
    n_exemplars: int | None = None  # None: the run's own setting; 0: no exemplars (one-shot prompts only)
    not_applicable: str = ""  # set when the inference-time search cannot express the variant


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("bucket", "bucket sampling of exemplars (CUDA-L1 Equation 1)", sampler="bucket"),
    Variant("island", "island sampling: prompts draw from one island; weak islands are re-seeded", sampler="island"),
    Variant("random", "exemplars drawn uniformly at random", sampler="uniform"),
    Variant("no-contrastive", "no scored exemplars in the prompt: every prompt is one-shot", sampler="bucket", n_exemplars=0),
    Variant("no-smoothing", "GRPO without reward smoothing",
            not_applicable="reward smoothing is part of training; the search uses no rewards. Run the GRPO stage "
                           "twice (with and without smoothing) and compare their suites instead"),
)}


def variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown ablation variant {name!r}; choose from {', '.join(VARIANTS)}") from None
