"""Analysis of stored kernels: which optimisation techniques they use, and how that relates to speedup."""

from cudaopt.analysis.report import (  # noqa: F401
    TechniqueAnalysis,
    analyze,
    analyze_db,
    render_markdown,
    technique_chart,
    technique_report,
    technique_table,
)
from cudaopt.analysis.techniques import (  # noqa: F401
    TECHNIQUE_NAMES,
    TECHNIQUES,
    Tag,
    forward_ops,
    tag_names,
    tag_source,
)
