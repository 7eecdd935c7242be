"""Reports: the seeds' summary table, cost accounting, the speedup plot, Markdown pages."""

from cudaopt.report.markdown import SuiteTaskRow, markdown_table, suite_report, task_report  # noqa: F401
from cudaopt.report.plots import speedup_histogram  # noqa: F401
from cudaopt.report.stats import FAST_P_THRESHOLDS, CostSummary, ScoreSummary, cost_of, summarize_scores  # noqa: F401
