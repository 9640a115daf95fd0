"""One investigation: diagnose a target, then send each proposed plan through policy in a mode.

The autonomy mode a front end asks for (a runbook's ``autonomy:``, the Slack app's default
``recommend``) can only lower what config.yaml's ``autonomy:`` allows a node group, never raise it
(:func:`capped`). Then, per plan, in execution order (agent/execute.py does the deciding):

- ``observe``: decided and recorded, nothing waits for approval, nothing runs;
- ``recommend``: nothing runs by itself; a plan the policy wants approved gets a pending approval
  (bound to its whole plan hash, with the requester and an expiry) for buttons to show;
- ``execute``: what the policy allows runs now (live targets only) and is verified; the rest waits
  for approval as in recommend.

:func:`execute_approval` is the second half, after a person approved: the plan is rebuilt, hashed,
re-decided with the approver and executed (live) or reported as a dry run (a recording).
"""

from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent.autonomy import AutonomyConfig, Mode
from agent.execute import ActionOutcome, ExecutionSetup, execution_order
from agent.runbooks.target import Target
from agent.settings import WardenSettings
from agent.store import RunStore
from gateway.config import BUILTIN_MODEL
from tools.facts import Facts
from tools.models.findings import ActionSpec, Diagnosis

__all__ = ["AUDIT_LOCK", "Investigation", "capped", "diagnose_target", "decide", "investigate", "execute_approval"]

_ORDER = {"observe": 0, "recommend": 1, "execute": 2}

AUDIT_LOCK = threading.RLock()
"""Held while a front end's worker writes the audit log (a diagnosis, its decisions, an approval, an
execution). Two AuditLog writers in one process can see the chain's head move between reading the
last row and the head row (agent/audit.py reads them apart) and refuse with AuditIntegrityError;
diagnoses are CPU-bound under the GIL anyway, so running them one at a time costs nothing. Live
collection (network-bound) runs outside it."""


def capped(cfg: AutonomyConfig, mode: Mode) -> AutonomyConfig:
    """``cfg`` with every group's mode lowered to at most ``mode``."""
    def low(m: Mode) -> Mode:
        return m if _ORDER[m] <= _ORDER[mode] else mode

    return cfg.model_copy(update={"default": low(cfg.default),
                                  "rules": [r.model_copy(update={"mode": low(r.mode)}) for r in cfg.rules]})


class Investigation(BaseModel):
    """A Diagnosis and what the execution path decided for each of its plans."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    diagnosis: Diagnosis
    outcomes: list[ActionOutcome]
    mode: Mode
    requester: str
    target: str
    facts: Facts | None = Field(default=None, exclude=True, repr=False)
    """The evidence the Diagnosis was made from (for a report's heat map and timeline); never serialised."""


def _setup(target: Target, settings: WardenSettings, *, requester: str, mode: Mode, facts: Facts,
           live_cfg: Any, diagnosis: Diagnosis | None, execute: bool) -> ExecutionSetup:
    if live_cfg is not None:
        from agent.live.act import setup_for

        s = setup_for(live_cfg, settings, requester=requester, execute=execute, facts=facts, diagnosis=diagnosis)
    else:
        audit = settings.open_audit()
        s = ExecutionSetup(engine=settings.engine(), approvals=settings.open_approvals(audit), audit=audit,
                           requester=requester, groups=settings.groups_of(requester),
                           approver_groups=settings.approvers, dry_run=True, facts=facts,
                           approval_ttl_s=settings.approval_ttl_s, fleet=settings.fleet, diagnosis=diagnosis,
                           condition=diagnosis.root_cause if diagnosis else None)
    s.autonomy = capped(settings.autonomy, mode)
    return s


def diagnose_target(target: Target, question: str, *, settings: WardenSettings, read: list[str] | None = None,
                    model: str = BUILTIN_MODEL) -> tuple[Diagnosis, Facts, Any]:
    """Diagnose ``target`` (nothing decided yet): the Diagnosis, the facts read and the live config used.

    Raises:
        WardenError: the evidence cannot be read, or the audit log cannot record.
    """
    from agent.diagnose import diagnose

    ctx, live_cfg = target.context(read)
    ctx.facts  # noqa: B018 - parse outside the lock
    with AUDIT_LOCK:
        d = diagnose(ctx, question, model=model, store=RunStore(None), target=target.name, limits=settings.limits)
    return d, ctx.facts, live_cfg


def decide(target: Target, d: Diagnosis, facts: Facts, live_cfg: Any, *, settings: WardenSettings, requester: str,
           mode: Mode) -> Investigation:
    """Send each of ``d``'s proposed plans through the execution path in ``mode`` (module docstring).

    Raises:
        WardenError: the policy or config is invalid, the audit log cannot record.
    """
    specs: list[ActionSpec] = [a.spec for a in d.proposed_actions]
    if live_cfg is not None:
        from agent.live.act import live_specs
        from agent.live.session import make_runner

        specs = live_specs(d, facts, live_cfg, make_runner(live_cfg.plan_input()))
    execute = mode == "execute" and target.is_live
    setup = _setup(target, settings, requester=requester, mode=mode, facts=facts, live_cfg=live_cfg,
                   diagnosis=d, execute=execute)
    outcomes = []
    for spec in execution_order(specs):
        with AUDIT_LOCK:
            o = setup.propose(spec, run_id=d.run_id)
        if (o.status == "dry_run" and o.plan and o.decision and o.decision.decision == "needs_approval"
                and mode != "observe"):
            with AUDIT_LOCK:
                req = setup.approvals.request_approval(
                    o.plan.plan_hash, o.spec.type, o.spec.model_dump(mode="json", exclude_none=True), requester,
                    d.run_id or "-", setup.approval_ttl_s, commands=o.plan.commands)
            o = o.model_copy(update={"status": "pending_approval", "approval_id": req.id,
                                     "message": f"{o.plan.description}: waiting for approval {req.id} (expires "
                                                f"{req.expires_at:%Y-%m-%d %H:%M}Z)"})
        outcomes.append(o)
    return Investigation(diagnosis=d, outcomes=outcomes, mode=mode, requester=requester, target=target.name,
                         facts=facts)


def investigate(target: Target, question: str, *, settings: WardenSettings, requester: str, mode: Mode,
                read: list[str] | None = None, model: str = BUILTIN_MODEL) -> Investigation:
    """Diagnose ``target`` and decide each proposed plan in ``mode`` (see the module docstring).

    Raises:
        WardenError: the evidence cannot be read, the policy or config is invalid, the audit log
            cannot record.
    """
    d, facts, live_cfg = diagnose_target(target, question, settings=settings, read=read, model=model)
    return decide(target, d, facts, live_cfg, settings=settings, requester=requester, mode=mode)


def execute_approval(target: Target, settings: WardenSettings, approval_id: str) -> ActionOutcome:
    """Carry out an approved plan: re-decided with its approver, executed once and verified on a live
    target; on a recording, decided and reported as a dry run (the approval stays unused).

    Raises:
        ApprovalError: not approved, expired, reused, a changed plan, an approver no longer allowed.
    """
    audit = settings.open_audit()
    req = settings.open_approvals(audit).get(approval_id)
    ctx, live_cfg = target.context()
    setup = _setup(target, settings, requester=req.requester, mode="recommend", facts=ctx.facts,
                   live_cfg=live_cfg, diagnosis=None, execute=target.is_live)
    with AUDIT_LOCK:
        return setup.execute_approved(approval_id)
