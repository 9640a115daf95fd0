"""Remediation actions: typed plans that render exact commands, executed only when authorized.

``build_action`` turns a proposed ``ActionSpec`` (what a model or a check suggests) into the typed
``Action``; ``plan_spec`` renders it into a ``PlannedAction`` for a Diagnosis without executing.
"""

from __future__ import annotations

from pydantic import ValidationError

from tools.actions.base import (
    WARDEN_PREFIX,
    Action,
    ActionFacts,
    Authorization,
    CommandRunner,
    ExecutionResult,
    Plan,
    Reversibility,
    VerifyResult,
)
from tools.actions.drain_node import DrainNode
from tools.actions.gpu_diagnostic import RunGpuDiagnostic
from tools.actions.job_control import CancelJob, HoldJob, ReleaseJob, RequeueJob, UpdateJob
from tools.actions.kubernetes import CordonNode, DrainK8sNode, EvictPod, UncordonNode
from tools.actions.notify import NotifyOwner
from tools.actions.resubmit import ResizeJob, ResubmitFromCheckpoint
from tools.actions.resume_node import ResumeNode
from tools.errors import ActionError
from tools.models.findings import ActionSpec, PlannedAction

__all__ = [
    "ACTIONS",
    "ACTION_FACTS",
    "Action",
    "ActionFacts",
    "Authorization",
    "CommandRunner",
    "ExecutionResult",
    "Plan",
    "VerifyResult",
    "WARDEN_PREFIX",
    "build_action",
    "plan_spec",
    "reversibility_of",
    "actions_where",
]

ACTIONS: dict[str, type[Action]] = {
    cls.action_type: cls
    for cls in (RunGpuDiagnostic, NotifyOwner, DrainNode, ResumeNode, HoldJob, ReleaseJob, CordonNode,
                UncordonNode, UpdateJob, RequeueJob, ResubmitFromCheckpoint, ResizeJob, CancelJob, EvictPod,
                DrainK8sNode)
}

ACTION_FACTS: dict[str, ActionFacts] = {name: cls.facts for name, cls in ACTIONS.items()}
"""Each action type's declared facts (reversibility, resource, platform, what it does to work)."""


def reversibility_of(action_type: str) -> Reversibility:
    """The action type's declared reversibility; an unknown type counts as irreversible."""
    facts = ACTION_FACTS.get(action_type)
    return facts.reversibility if facts else "irreversible"


def actions_where(**flags: object) -> frozenset[str]:
    """Action types whose facts match every ``flag=value`` given, e.g.
    ``actions_where(takes_out_of_service=True)`` -> {"drain_node", "cordon_node", "drain_k8s_node"}."""
    return frozenset(t for t, f in ACTION_FACTS.items() if all(getattr(f, k) == v for k, v in flags.items()))


def build_action(spec: ActionSpec) -> Action:
    """The typed Action for a proposal.

    Raises:
        ActionError: a parameter the action needs is missing or invalid (names the action and field).
    """
    cls = ACTIONS[spec.type]
    fields = set(cls.model_fields)
    data = {k: v for k, v in spec.model_dump().items() if k in fields and v not in (None, [])}
    if "reason" in fields and "reason" not in data:
        data["reason"] = "proposed by Warden"
    if "message" in fields:
        data["message"] = spec.reason or "Warden found a problem with this job"
    try:
        return cls.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ActionError(f"{spec.type}: field {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def plan_spec(spec: ActionSpec) -> PlannedAction:
    """Render a proposal into its plan (never executes). A proposal that cannot be planned keeps
    its spec and carries the error instead of commands."""
    try:
        plan = build_action(spec).plan()
    except ActionError as e:
        return PlannedAction(spec=spec, commands=[], plan_hash="", reversibility=reversibility_of(spec.type),
                             description=f"{spec.type} (not plannable)", error=str(e))
    return PlannedAction(spec=spec, commands=plan.commands, plan_hash=plan.plan_hash,
                         reversibility=plan.reversibility, description=plan.description)
