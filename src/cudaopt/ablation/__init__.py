"""The seeds' ablations (CUDA-L1 Table 5 rows) on one budget and one task set."""

from cudaopt.ablation.runner import AblationResult, VariantOutcome, run_ablation  # noqa: F401
from cudaopt.ablation.table import ABLATION_HEADERS, ablation_markdown, ablation_rows  # noqa: F401
from cudaopt.ablation.variants import VARIANTS, Variant, variant  # noqa: F401
