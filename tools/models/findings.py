"""Findings (what a check concluded) and the Diagnosis (what Warden answers)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from tools.models.ids import ActionType, RootCause
from tools.models.unreadable import Unreadable

__all__ = ["Evidence", "ActionSpec", "Finding", "DiagnosisDraft", "PlannedAction", "Diagnosis", "CULPRIT_RE"]

CULPRIT_RE = re.compile(r"^(node|job|fs|user|pod|partition|k8snode|ost|mdt):\S+$")
"""A culprit is ``kind:name``: node:gpu017, job:4242, fs:lustre, user:alice, pod:ns/name, ..."""


class Evidence(BaseModel):
    """One piece of evidence: a file and line, or a metric with its value and unit."""

    text: str
    """What was seen, quoted or summarised (at most ~300 chars)."""
    file: str | None = None
    """Snapshot-relative path (or command) the evidence came from."""
    line: int | None = None
    time: str | None = None
    """When it was logged, as the source printed it (kernel prefix, ISO time of a log line)."""
    metric: str | None = None
    value: float | None = None
    unit: str | None = None
    at: SkipJsonSchema[datetime | None] = None
    """When it was logged (UTC), set by Warden from the parsed line (never taken from a model: not in
    the schema a model fills in); None when the line carries no timestamp."""


class ActionSpec(BaseModel):
    """A proposed remediation before it is planned: its type and key parameters.

    Flat on purpose: it is the schema a model fills in. Which fields matter depends on ``type``
    (drain_node: node; resubmit_from_checkpoint: job, exclude_nodes; update_job: job, time_limit_min ...).
    """

    type: ActionType
    node: str | None = None
    job: str | None = None
    pod: str | None = None
    namespace: str | None = None
    exclude_nodes: list[str] = Field(default_factory=list)
    num_nodes: int | None = None
    time_limit_min: int | None = None
    start_time: str | None = None
    """update_job: ``now`` or an ISO time (``2026-10-02T09:00``) for the job's begin time (``--begin``)."""
    checkpoint: str | None = None
    reason: str | None = None
    """Human text for the action (drain reason, notification); Warden prefixes drains with ``warden:``."""

    @model_validator(mode="after")
    def _pod_given_as_job(self) -> "ActionSpec":
        # A Kubernetes workload is keyed ``namespace/pod`` where a Slurm job is keyed by its id (job logs, victims):
        # that key given as ``job`` names the pod; Slurm job ids never hold a slash.
        if self.job and "/" in self.job and not self.pod:
            self.namespace, _, self.pod = self.job.rpartition("/")
            self.job = None
        return self

    def key(self) -> tuple:
        """Identity used to merge duplicate proposals: type and target parameters."""
        return (self.type, self.node, self.job, self.pod, self.namespace, tuple(sorted(self.exclude_nodes)))


def _culprit_form(v: list[str]) -> list[str]:
    for c in v:
        if not CULPRIT_RE.match(c):
            raise ValueError(f"culprit {c!r} is not kind:name")
    return v


class Finding(BaseModel):
    """What one check concluded from the evidence.

    ``confidence`` is in [0, 1]: how strongly the evidence supports ``root_cause`` as the
    explanation; it follows from ``strength`` (tools.knowledge.precedence.confidence), not from a literal.
    """

    check: str
    root_cause: RootCause
    message: str
    """Actual against threshold, e.g. "2 Xid 79 events on gpu017 (threshold 1)"."""
    culprits: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    confidence: float = Field(ge=0.0, le=1.0)
    strength: Literal["direct", "state", "symptom", "heuristic"] = "symptom"
    """What kind of evidence the finding rests on (tools.knowledge.precedence): a direct hardware signal,
    the scheduler's/orchestrator's state, a symptom in a job's log, or a heuristic over metrics."""
    suggested_actions: list[ActionSpec] = Field(default_factory=list)

    _culprit_form = field_validator("culprits")(_culprit_form)


SUMMARY_MAX_CHARS = 8000
"""Longest summary a model's answer may carry (the built-in model's run to a few hundred)."""


class DiagnosisDraft(BaseModel):
    """The model's answer (the agent's output tool): cause, culprits, evidence, proposed actions."""

    root_cause: RootCause
    culprits: list[str] = Field(default_factory=list)
    """``kind:name`` strings, most important first (node:gpu017, job:4242)."""
    _culprit_form = field_validator("culprits")(_culprit_form)  # a model's "node:gpu 01" is refused here
    evidence: list[Evidence] = Field(default_factory=list)
    confidence: float = Field(ge=0.0, le=1.0)
    summary: str = Field(max_length=SUMMARY_MAX_CHARS)
    """Plain-language explanation for the on-call engineer, a few sentences (at most 8,000 characters:
    a model's megabyte of prose is refused, not printed, posted and stored)."""
    proposed_actions: list[ActionSpec] = Field(default_factory=list)


class PlannedAction(BaseModel):
    """A proposed action with its rendered plan; never executed by diagnose."""

    spec: ActionSpec
    commands: list[list[str]]
    """The exact argument lists execute() would run."""
    plan_hash: str
    reversibility: str
    """``read_only``, ``reversible`` or ``irreversible``."""
    description: str
    error: str | None = None
    """Set when the action could not be planned (e.g. no verified checkpoint); commands is then empty."""


class Diagnosis(BaseModel):
    """Warden's answer to a question about a cluster, as printed by `warden diagnose`."""

    question: str
    root_cause: RootCause
    culprits: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    confidence: float
    summary: str
    gpu_hours_lost: float = 0.0
    """GPU-hours consumed by the culprit jobs' failed or stalled work so far (GPUs x hours)."""
    proposed_actions: list[PlannedAction] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    """Every finding the checks produced, the chosen cause's and the others."""
    stopped_by: str | None = None
    """Set when a loop limit ended the run early (the diagnosis is then partial)."""
    unreadable: list[Unreadable] = Field(default_factory=list)
    """Evidence that could not be read (file, fetch or check, and why); the diagnosis used the rest."""
    nothing_read: bool = False
    """True when no evidence at all could be read (nothing fetched, every file unreadable): the answer is
    then ``inconclusive`` and `warden diagnose` exits 3."""
    model: str = "builtin"
    answered_by: Literal["model", "checks", "builtin-fallback"] = "model"
    """Who produced this answer: the model asked for; the deterministic checks alone (the run stopped before
    the model answered: ``root_cause`` is then ``inconclusive`` and ``findings`` hold the checks' view); or
    the built-in model the gateway fell back to when the model asked for failed."""
    providers: list[str] = Field(default_factory=list)
    """Gateway providers that answered the run's model requests, in order (``x-warden-provider``)."""
    run_id: str | None = None
