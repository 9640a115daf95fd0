"""Deterministic scoring of a Diagnosis against an incident's expectations."""

from __future__ import annotations

from pydantic import BaseModel, Field

from evals.incident import Expected
from tools.models.findings import ActionSpec, Diagnosis
from tools.actions import actions_where

__all__ = ["action_matches", "forbidden_matches", "CaseScore", "score_case", "action_precision_recall",
           "canonical_culprit"]

_KEYS = ("node", "job", "pod", "namespace", "checkpoint", "num_nodes", "time_limit_min")


def action_matches(expected: ActionSpec, proposed: ActionSpec) -> bool:
    """True when ``proposed`` is the expected action: same type, every key parameter the expectation
    gives is equal, and its excluded nodes are all excluded."""
    if expected.type != proposed.type:
        return False
    for k in _KEYS:
        want = getattr(expected, k)
        if want is not None and getattr(proposed, k) != want:
            return False
    return set(expected.exclude_nodes) <= set(proposed.exclude_nodes)


def forbidden_matches(forbidden: ActionSpec, proposed: ActionSpec) -> bool:
    """True when ``proposed`` is the forbidden action. As action_matches, except that a forbidden action
    that lists ``exclude_nodes`` (even ``[]``) matches only proposals excluding exactly those nodes:
    ``{type: resubmit_from_checkpoint, job: "7", exclude_nodes: []}`` forbids a resubmit that excludes
    nothing, not the one that excludes the bad node."""
    if "exclude_nodes" not in forbidden.model_fields_set:
        return action_matches(forbidden, proposed)
    return (action_matches(forbidden.model_copy(update={"exclude_nodes": []}), proposed)
            and set(forbidden.exclude_nodes) == set(proposed.exclude_nodes))


def action_precision_recall(expected: Expected, proposed: list[ActionSpec]) -> tuple[float, float, list[str]]:
    """(precision, recall, extra mutating actions): precision is the share of the *mutating* proposals
    (drain, resubmit, cancel ...) that an expected action matches — read-only proposals (notify_owner,
    run_gpu_diagnostic) cost nothing; recall the share of expected actions proposed. Both are 1.0 when
    there is nothing to count."""
    read_only = actions_where(reversibility="read_only")
    mutating = [p for p in proposed if p.type not in read_only]
    hit = [p for p in mutating if any(action_matches(a, p) for a in expected.actions)]
    extra = [p.model_dump_json(exclude_none=True, exclude_defaults=True, exclude={"reason"})
             for p in mutating if p not in hit]
    precision = len(hit) / len(mutating) if mutating else 1.0
    found = [a for a in expected.actions if any(action_matches(a, p) for p in proposed)]
    recall = len(found) / len(expected.actions) if expected.actions else 1.0
    return precision, recall, extra


class CaseScore(BaseModel):
    """One incident's result."""

    root_cause_ok: bool
    culprit_precision: float
    culprit_recall: float
    missing_culprits: list[str] = Field(default_factory=list)
    actions_ok: bool
    missing_actions: list[str] = Field(default_factory=list)
    forbidden_proposed: list[str] = Field(default_factory=list)
    action_precision: float = 1.0
    action_recall: float = 1.0
    extra_mutating: list[str] = Field(default_factory=list)
    """Mutating actions proposed that no expected action matches (a bystander resubmitted, a drain too many)."""

    @property
    def passed(self) -> bool:
        """Right cause, every expected culprit and action, nothing forbidden."""
        return self.root_cause_ok and not self.missing_culprits and self.actions_ok and not self.forbidden_proposed


def canonical_culprit(culprit: str) -> str:
    """One name per thing: a Kubernetes node is a node (``k8snode:gpu-05`` and ``node:gpu-05`` are the same
    culprit; incident authors write either)."""
    return "node:" + culprit[len("k8snode:"):] if culprit.startswith("k8snode:") else culprit


def score_case(expected: Expected, d: Diagnosis) -> CaseScore:
    """Compare a diagnosis with what the incident expects."""
    got = {canonical_culprit(c) for c in d.culprits}
    want = {canonical_culprit(c) for c in expected.culprits}
    proposed = [a.spec for a in d.proposed_actions]
    missing_actions = [a.model_dump_json(exclude_none=True, exclude_defaults=True) for a in expected.actions
                       if not any(action_matches(a, p) for p in proposed)]
    forbidden = [p.model_dump_json(exclude_none=True, exclude_defaults=True) for p in proposed
                 if any(forbidden_matches(f, p) for f in expected.forbidden)]
    if expected.root_cause == "healthy" and proposed:
        forbidden += [p.model_dump_json(exclude_none=True) for p in proposed if p.type not in ("notify_owner",)]
    return CaseScore(
        root_cause_ok=d.root_cause == expected.root_cause,
        culprit_precision=len(got & want) / len(got) if got else float(not want),
        culprit_recall=len(got & want) / len(want) if want else 1.0,
        missing_culprits=sorted(want - got),
        actions_ok=not missing_actions,
        missing_actions=missing_actions,
        forbidden_proposed=forbidden,
        **dict(zip(("action_precision", "action_recall", "extra_mutating"), action_precision_recall(expected, proposed))),
    )
