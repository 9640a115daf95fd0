"""Totals and group tables computed from an eval report's cases."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

from evals.results import CaseResult, EvalReport, GroupRow, Totals

__all__ = ["summarize", "group_rows", "finalize"]


def _mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


def summarize(cases: list[CaseResult]) -> Totals:
    """Totals over cases (every run of every incident counts once)."""
    n = len(cases)
    if not n:
        return Totals()
    controls = [c for c in cases if c.expected_root_cause == "healthy"]
    # a false positive is the model's claim of a fault: a run it did not answer claims nothing
    answered_controls = [c for c in controls if c.answered_by == "model" and c.error is None]
    by_run: dict[int, list[CaseResult]] = defaultdict(list)
    for c in cases:
        by_run[c.run_index].append(c)
    run_acc = [_mean(float(c.root_cause_ok) for c in group) for group in by_run.values()]
    judged = [c.judge_score for c in cases if c.judge_score is not None]
    fallback = [c for c in cases if c.answered_by != "model" and c.error is None]
    return Totals(
        cases=n,
        incidents=len({c.incident_id for c in cases}),
        passed=sum(c.passed for c in cases),
        pass_rate=_mean(float(c.passed) for c in cases),
        root_cause_accuracy=_mean(float(c.root_cause_ok) for c in cases),
        culprit_precision=_mean(c.culprit_precision for c in cases),
        culprit_recall=_mean(c.culprit_recall for c in cases),
        culprit_f1=_mean(c.culprit_f1 for c in cases),
        action_accuracy=_mean(float(c.actions_ok) for c in cases),
        action_precision=_mean(c.action_precision for c in cases if c.error is None),
        action_recall=_mean(c.action_recall for c in cases if c.error is None),
        detection_accuracy=_mean(float(c.detection_ok) for c in cases),
        safety_violations=sum(bool(c.safety_violations) for c in cases),
        executions_attempted=sum(len(c.executions) for c in cases),
        healthy_controls=len(controls),
        healthy_controls_answered=len(answered_controls),
        false_positive_rate=(_mean(float(c.root_cause not in ("healthy", None)) for c in answered_controls)
                             if answered_controls else None),
        errors=sum(c.error is not None for c in cases),
        accuracy_stdev=statistics.pstdev(run_acc) if len(run_acc) > 1 else 0.0,
        model_requests=sum(c.model_requests for c in cases),
        tool_calls=sum(c.tool_calls for c in cases),
        total_tokens=sum(c.input_tokens + c.output_tokens for c in cases),
        cost_usd=sum(c.cost_usd for c in cases),
        case_wall_time_s=sum(c.wall_time_s for c in cases),
        judge_mean=_mean(judged) if judged else None,
        judge_errors=sum(c.judge_error is not None for c in cases),
        answered_by_model=sum(c.answered_by == "model" and c.error is None for c in cases),
        answered_by_checks=sum(c.answered_by == "checks" for c in cases),
        answered_by_builtin_fallback=sum(c.answered_by == "builtin-fallback" for c in cases),
        answered_by_none=sum(c.answered_by == "none" for c in cases),
        model_answer_rate=_mean(float(c.answered_by == "model" and c.error is None) for c in cases),
        fallback_root_cause_accuracy=_mean(float(c.fallback_root_cause_ok) for c in fallback) if fallback else None,
        stopped_by=dict(sorted(Counter(c.stopped_by.split(":", 1)[0] for c in cases if c.stopped_by).items())),
    )


def group_rows(cases: list[CaseResult], keys: Callable[[CaseResult], Iterable[str]]) -> list[GroupRow]:
    """One row per key (a case may fall under several, e.g. its tags), sorted by key."""
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for c in cases:
        for k in keys(c):
            groups[k].append(c)
    rows = []
    for key in sorted(groups):
        t = summarize(groups[key])
        rows.append(GroupRow(key=key, cases=t.cases, passed=t.passed, root_cause_accuracy=t.root_cause_accuracy,
                             culprit_f1=t.culprit_f1, action_accuracy=t.action_accuracy,
                             safety_violations=t.safety_violations))
    return rows


def finalize(report: EvalReport) -> EvalReport:
    """Fill the report's totals and group tables from its cases (returns the same object)."""
    report.totals = summarize(report.cases)
    report.by_tag = group_rows(report.cases, lambda c: c.tags or ["(untagged)"])
    report.by_root_cause = group_rows(report.cases, lambda c: [c.expected_root_cause])
    return report
