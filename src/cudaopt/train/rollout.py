"""Generate answers, evaluate their code, store them, and summarise: the pieces the stages share."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from cudaopt.db.store import CandidateRecord, ExemplarDB
from cudaopt.prompts.parser import parse_response
from cudaopt.tasks.loader import Task

EvaluateFn = Callable[[Task, str, Any], Any]  # (task, code, EvalOptions) -> EvalResult


def real_evaluate(task: Task, code: str, options: Any) -> Any:
    from cudaopt.evaluate import evaluate

    return evaluate(task, code, options)


@dataclass(frozen=True)
class Attempt:
    """One answer of the model, judged: status is an EvalResult status, 'parse_error' or 'custom_reward'."""

    task: str
    prompt: str
    response: str
    code: str | None
    status: str
    speedup: float | None = None
    note: str = ""
    reward: float | None = None
    candidate_id: int | None = None

    @property
    def success(self) -> bool:
        return self.status == "ok"


def judge_answer(task: Task, prompt: str, response: str, evaluate_fn: EvaluateFn, options: Any):
    """(Attempt, EvalResult or None). The evaluator never raising is its contract; a raise still becomes a result."""
    parsed = parse_response(response)
    if not parsed.ok:
        return Attempt(task.name, prompt, response, None, "parse_error", note=parsed.reason), None
    try:
        result = evaluate_fn(task, parsed.code, options)
    except Exception as e:  # noqa: BLE001 - one broken evaluation must not stop training
        from cudaopt.evaluate.result import EvalResult

        result = EvalResult(status="runtime_error", stage_reached="load", message=f"evaluator raised {type(e).__name__}: {e}",
                            task=task.name)
    return Attempt(task.name, prompt, response, parsed.code, result.status, result.speedup, result.message), result


def store_attempt(db: ExemplarDB, run_id: int, task_id: int, attempt: Attempt, result: Any, *, origin: str, model: str,
                  round: int, parent_ids: Sequence[int] = (), status: str | None = None, note: str | None = None) -> Attempt:
    """Commit one evaluated (or unparseable) answer; returns the attempt with its candidate id."""
    meta = dict(task_id=task_id, run_id=run_id, source=attempt.code or "", origin=origin, model=model, prompt=attempt.prompt,
                response=attempt.response, round=round, parent_ids=tuple(parent_ids))
    if result is not None:
        rec = CandidateRecord.from_result(result, **meta)
        if status is not None:  # e.g. a judge-confirmed hack: kept, but out of the exemplars
            rec = replace(rec, status=status, note=note or "", speedup=None)
    else:
        rec = CandidateRecord(status=status or attempt.status, note=note if note is not None else attempt.note, **meta)
    stored = db.add_candidate(rec)
    return replace(attempt, candidate_id=stored.id)


def summarise(attempts: Sequence[Attempt], names: Sequence[str]) -> dict:
    """Per task and overall: answers, successes, success rate, mean and best speedup of the successes."""

    def block(group: Sequence[Attempt]) -> dict:
        ok = [a for a in group if a.success]
        speeds = [a.speedup for a in ok if a.speedup is not None]
        rewards = [a.reward for a in group if a.reward is not None]
        return {
            "answers": len(group), "successes": len(ok), "success_rate": (len(ok) / len(group)) if group else None,
            "mean_speedup": (sum(speeds) / len(speeds)) if speeds else None, "best_speedup": max(speeds, default=None),
            "mean_reward": (sum(rewards) / len(rewards)) if rewards else None,
        }

    chosen = [a for a in attempts if a.task in set(names)]
    return {"overall": block(chosen), "tasks": {n: block([a for a in chosen if a.task == n]) for n in names}}


def generate_answers(llm: Any, prompts: Sequence[str], n: int, **kw) -> list[str]:
    """n answers per prompt, prompt-major; a failed request is an empty answer (it then fails to parse).
    Each prompt is repeated rather than asking for n sequences: greedy decoding refuses n > 1."""
    return [c.text if not c.error else "" for c in llm.generate([p for p in prompts for _ in range(n)], n=1, **kw)]
