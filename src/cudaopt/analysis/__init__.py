"""Analysis of stored kernels: which optimisation techniques they use, and how that relates to speedup."""

from cudaopt.analysis.techniques import TECHNIQUE_NAMES, TECHNIQUES, Tag, forward_ops, tag_names, tag_source  # noqa: F401
