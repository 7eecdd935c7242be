from cudaopt.evaluate.result import BASELINES, STATUSES, EvalOptions, EvalResult, Timing  # noqa: F401
from cudaopt.evaluate.runner import evaluate  # noqa: F401
