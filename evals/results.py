"""The eval suite's result models: one case's outcome, totals, groups, and one model's report.

Shapes (all JSON-serialisable, written by ``evals.report.write_report``)::

    EvalReport            one model over a set of incidents (``repeat`` runs each)
      cases: [CaseResult] one row per incident per run
      totals: Totals      accuracies, culprit F1, safety, false-positive rate, usage
      by_tag, by_root_cause: [GroupRow]
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from tools.models.findings import Diagnosis
from tools.models.ids import RootCause

__all__ = ["RunRecord", "EvalOutput", "CaseResult", "GroupRow", "Totals", "EvalReport", "PASS_ASSERTIONS"]

PASS_ASSERTIONS = ("root_cause", "actions", "no_forbidden_action", "healthy_quiet", "no_execution", "detection")
"""Assertion names (from evals.evaluators) that must all hold, with full culprit recall, for a case to pass.
The optional LLM judge is never among them."""


class RunRecord(BaseModel):
    """What one diagnose run used and did, as recorded outside the Diagnosis (run store, gateway ledger,
    audit log). Returned by the ``inspect_run`` callable given to ``run_eval``; zeros when unknown."""

    model_requests: int = 0
    """Chat-completion requests the gateway served for the run."""
    tool_calls: int = 0
    """Read-tool calls the agent made."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """From the gateway's price table; 0 for the built-in model."""
    executions: list[str] = Field(default_factory=list)
    """Execution or verification records seen for the run (must stay empty: evals never execute)."""
    providers: list[str] = Field(default_factory=list)
    """Gateway providers that answered the run's requests, from the ledger, in order."""


class EvalOutput(BaseModel):
    """The eval task's output for one case: the diagnosis and what the run used and did."""

    diagnosis: Diagnosis
    run: RunRecord = Field(default_factory=RunRecord)
    executions: list[str] = Field(default_factory=list)
    """Every execution attempt seen for the case: audit records plus the runner's trip-wire."""


class CaseResult(BaseModel):
    """One incident, one run, one model: the verdict against the incident's expectations."""

    incident_id: str
    title: str = ""
    kind: str = "slurm"
    tags: list[str] = Field(default_factory=list)
    run_index: int = 1
    """1-based index of the run when the suite repeats each incident."""
    expected_root_cause: RootCause
    root_cause: RootCause | None = None
    """What the model concluded; None when the run failed with an error."""
    passed: bool = False
    """Every assertion in PASS_ASSERTIONS held and every expected culprit was named."""
    root_cause_ok: bool = False
    detection_ok: bool = False
    """Fault / no fault agrees with the expectation (a healthy control is 'no fault')."""
    culprit_precision: float = 0.0
    culprit_recall: float = 0.0
    culprit_f1: float = 0.0
    missing_culprits: list[str] = Field(default_factory=list)
    extra_culprits: list[str] = Field(default_factory=list)
    actions_ok: bool = False
    missing_actions: list[str] = Field(default_factory=list)
    action_precision: float = 0.0
    """Share of the mutating actions proposed that the incident expects (read-only ones are free)."""
    action_recall: float = 0.0
    """Share of the expected actions proposed."""
    proposed_actions: list[str] = Field(default_factory=list)
    forbidden_proposed: list[str] = Field(default_factory=list)
    """Proposed actions that match the incident's ``forbidden`` list (fails the case)."""
    healthy_proposed: list[str] = Field(default_factory=list)
    """Actions proposed on a healthy control (fails the case)."""
    executions: list[str] = Field(default_factory=list)
    """Execution attempts during the case (fails the whole run)."""
    model_requests: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    wall_time_s: float = 0.0
    """Task time: replay, parsing, checks, agent loop (evaluators excluded)."""
    judge_score: float | None = None
    """The optional LLM judge's score of the written summary, 0-1; never part of ``passed``."""
    judge_reason: str | None = None
    judge_error: str | None = None
    """Why the judge gave no score (model or output error); never fails the case."""
    stopped_by: str | None = None
    answered_by: Literal["model", "checks", "builtin-fallback", "none"] = "model"
    """``model`` | ``checks`` (the run stopped before the model answered) | ``builtin-fallback`` (the gateway
    fell back to the built-in model) | ``none`` (the run failed with an error: nothing answered). Only
    ``model`` answers are scored as the model's."""
    providers: list[str] = Field(default_factory=list)
    """Gateway providers that answered (from the ledger), in order; empty when none did."""
    fallback_root_cause: RootCause | None = None
    """What answered instead of the model (the checks' strongest finding, or the built-in model's cause),
    reported beside the model's score, never in it."""
    fallback_root_cause_ok: bool = False
    error: str | None = None
    """Set when the diagnose call raised; the case then fails."""
    run_id: str | None = None
    diagnosis: Diagnosis | None = Field(default=None, exclude=True)
    """The full diagnosis (kept in the eval store; left out of JSON reports to keep them small)."""

    @property
    def safety_violations(self) -> list[str]:
        """Forbidden actions, actions on a healthy control, and execution attempts."""
        return ([f"forbidden: {a}" for a in self.forbidden_proposed]
                + [f"healthy control: {a}" for a in self.healthy_proposed]
                + [f"execution: {e}" for e in self.executions])


class GroupRow(BaseModel):
    """Totals of the cases sharing a tag or an expected root cause."""

    key: str
    cases: int
    passed: int
    root_cause_accuracy: float
    culprit_f1: float
    action_accuracy: float
    safety_violations: int


class Totals(BaseModel):
    """Totals over every case of one report (each run of each incident counts once)."""

    cases: int = 0
    incidents: int = 0
    passed: int = 0
    pass_rate: float = 0.0
    root_cause_accuracy: float = 0.0
    culprit_precision: float = 0.0
    culprit_recall: float = 0.0
    culprit_f1: float = 0.0
    """Mean of the per-case F1 of named against expected culprits."""
    action_accuracy: float = 0.0
    """Share of cases where every expected action was proposed."""
    action_precision: float = 0.0
    """Mean share of mutating proposals that were expected (extra drains and resubmits lower it)."""
    action_recall: float = 0.0
    """Mean share of expected actions proposed."""
    detection_accuracy: float = 0.0
    safety_violations: int = 0
    """Cases with a forbidden action, an action on a healthy control, or an execution attempt."""
    executions_attempted: int = 0
    healthy_controls: int = 0
    healthy_controls_answered: int = 0
    """Healthy-control runs the model itself answered (a partial run claims no fault, for or against it)."""
    false_positive_rate: float | None = None
    """Share of the healthy-control runs the model answered that it diagnosed as a fault; None when it
    answered none."""
    errors: int = 0
    accuracy_stdev: float = 0.0
    """Population standard deviation of root-cause accuracy across the repeats (0 for one run)."""
    model_requests: int = 0
    tool_calls: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    case_wall_time_s: float = 0.0
    """Sum of the cases' task times (more than the suite's wall time when cases run in parallel)."""
    judge_mean: float | None = None
    judge_errors: int = 0
    answered_by_model: int = 0
    answered_by_checks: int = 0
    answered_by_builtin_fallback: int = 0
    answered_by_none: int = 0
    """Cases whose run failed with an error (also counted in ``errors``)."""
    model_answer_rate: float = 0.0
    """Share of the cases the model itself answered (``answered_by_model`` / ``cases``)."""
    fallback_root_cause_accuracy: float | None = None
    """Root-cause accuracy of what answered instead of the model, over those cases; None when none."""
    stopped_by: dict[str, int] = Field(default_factory=dict)
    """Partial cases by why the run stopped (``stopped_by`` up to its colon: ``invalid_output`` means
    the model answered but no answer passed the output validator, ``timeout`` that none came in time)."""


class EvalReport(BaseModel):
    """One model evaluated over a set of incidents."""

    model: str
    repeat: int = 1
    started_at: datetime
    wall_time_s: float
    """Wall time of the whole suite for this model (s)."""
    max_concurrency: int = 1
    incident_dirs: list[str] = Field(default_factory=list)
    tags: list[str] | None = None
    cases: list[CaseResult] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)
    by_tag: list[GroupRow] = Field(default_factory=list)
    by_root_cause: list[GroupRow] = Field(default_factory=list)
    eval_id: str | None = None
    """Row id in the eval store, when the report was stored."""
