"""The execution path: proposed actions -> plan -> policy -> (approval) -> execute -> verify, audited.

For each proposed action (an ``ActionSpec``, or a Diagnosis' proposed actions)::

    sanitize reason ─► check targets ─► build Action ─► plan (argv lists + hash) ─► blast radius
        ─► policy (Cedar, as if for real) ─► audit "policy_decision"
        ├─ deny ───────────► reported
        ├─ needs_approval ─► pending approval stored (plan hash, requester, expiry); the run pauses
        └─ allow ──────────► dry run: reported; else audit "execution/started" ─► execute
                             ─► audit "execution/executed" ─► verify ─► audit "verification"

:meth:`ExecutionSetup.execute_approved` is the second half of an approval: it rebuilds the plan
from the parameters given, re-evaluates the policy with the recorded approver, consumes the
approval for exactly that plan hash (single use; expired, reused, wrong-hash, self- or
unauthorized approvals raise a typed ``ApprovalError``) and only then executes.

Every record reaches the audit log before the step it describes takes effect; if the audit log
cannot record, nothing runs. Nothing here runs a command unless the policy allowed that exact plan
and ``dry_run`` is False.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel

from agent.approvals import ApprovalStore, ApprovalNotGranted, PlanHashMismatch
from agent.audit import AuditLog
from agent.blast import BlastRadius, blast_radius, check_targets, resource_of
from policies import PolicyDecision, PolicyEngine, PolicyRequest
from tools.actions import Authorization, CommandRunner, ExecutionResult, Plan, VerifyResult, build_action
from tools.errors import ActionError, WardenError
from tools.facts import Facts
from tools.models.findings import ActionSpec, Diagnosis

__all__ = ["ActionOutcome", "ExecutionSetup", "OutcomeStatus", "propose_and_execute", "sanitize_spec"]

OutcomeStatus = Literal["denied", "dry_run", "pending_approval", "executed", "failed"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
REASON_MAX_CHARS = 200
"""Longest drain/notify reason Warden writes; longer cluster text is cut."""


def sanitize_spec(spec: ActionSpec) -> ActionSpec:
    """The spec with its free-text ``reason`` made one short, printable line (control characters,
    ANSI escapes and bidi overrides removed, whitespace collapsed, at most REASON_MAX_CHARS)."""
    if spec.reason is None:
        return spec
    text = " ".join(_CONTROL.sub(" ", spec.reason).split())[:REASON_MAX_CHARS]
    return spec.model_copy(update={"reason": text})


class ActionOutcome(BaseModel):
    """What happened to one proposed action."""

    spec: ActionSpec
    status: OutcomeStatus
    message: str
    """One line for people (and for the model, as the execute_action tool's result)."""
    plan: Plan | None = None
    decision: PolicyDecision | None = None
    blast: BlastRadius | None = None
    approval_id: str | None = None
    execution: ExecutionResult | None = None
    verification: VerifyResult | None = None


def _target_denial(spec: ActionSpec, problems: list[str]) -> PolicyDecision:
    kind, rid = resource_of(spec)
    return PolicyDecision(decision="deny", policy_ids=["warden-target-check"], reasons=["; ".join(problems)],
                          action=spec.type, resource=f"{kind}::{rid!r}", dry_run=False)


@dataclass
class ExecutionSetup:
    """Everything the execution path needs; one per run (or per CLI command).

    Args:
        engine: the loaded policy engine.
        approvals: where pending approvals live (records into the same audit log).
        audit: the tamper-evident log.
        requester: the person on whose behalf Warden acts (the policy principal).
        groups: the requester's groups.
        approver_groups: approver name -> groups, for re-evaluating the policy with an approval.
        runner: runs argument lists on the cluster; None means nothing can run (dry run only).
        dry_run: True (the default) renders and decides but runs nothing.
        facts: the evidence, for target checks and the blast radius.
        approval_ttl_s: how long a pending approval stays valid.
        clock: current UTC time.
    """

    engine: PolicyEngine
    approvals: ApprovalStore
    audit: AuditLog
    requester: str
    groups: list[str] = field(default_factory=list)
    approver_groups: Mapping[str, list[str]] = field(default_factory=dict)
    runner: CommandRunner | None = None
    dry_run: bool = True
    facts: Facts | None = None
    approval_ttl_s: float = 3600.0
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)

    # ---- deciding ------------------------------------------------------------------------------

    def _decide(self, spec: ActionSpec, run_id: str | None, *, approver: str = "",
                requester: str | None = None) -> tuple[Plan | None, PolicyDecision, BlastRadius | None]:
        """Plan and decide one sanitized spec; the decision is audited before it is returned."""
        plan: Plan | None = None
        blast: BlastRadius | None = None
        problems = check_targets(spec, self.facts)
        if not problems:
            try:
                plan = build_action(spec).plan()
            except ActionError as e:
                problems = [str(e)]
        if problems or plan is None:
            decision = _target_denial(spec, problems)
        else:
            blast = blast_radius(spec, self.facts, requester=requester or self.requester, audit=self.audit,
                                 now=self.clock())
            kind, rid = resource_of(spec)
            request = PolicyRequest(
                principal=self.requester, groups=list(self.groups), action=plan.action, resource_type=kind,
                resource_id=rid, partition=blast.partition, dry_run=False, approved=bool(approver),
                approver=approver, approver_groups=list(self.approver_groups.get(approver, [])) if approver else [],
                requester=requester or self.requester,
                warden_drained_last_hour=blast.warden_drained_last_hour,
                partition_gpu_share_pct=blast.partition_gpu_share_pct,
                running_gpu_hours_killed=blast.running_gpu_hours_killed,
                other_users_jobs_touched=blast.other_users_jobs_touched,
            )
            decision = self.engine.evaluate(request)
        self.audit.append("policy_decision", {
            "action": spec.type, "spec": spec.model_dump(mode="json", exclude_none=True),
            "plan_hash": plan.plan_hash if plan else None, "commands": plan.commands if plan else [],
            "decision": decision.decision, "policy_ids": decision.policy_ids, "reasons": decision.reasons,
            "blast_radius": blast.model_dump(mode="json") if blast else None, "approver": approver or None,
            "requester": requester or self.requester, "dry_run": self.dry_run,
        }, run_id=run_id)
        return plan, decision, blast

    # ---- running -------------------------------------------------------------------------------

    def _run(self, spec: ActionSpec, plan: Plan, decision: PolicyDecision, blast: BlastRadius | None,
             run_id: str | None, approval_id: str | None) -> ActionOutcome:
        base = {"spec": spec, "plan": plan, "decision": decision, "blast": blast, "approval_id": approval_id}
        if self.runner is None:
            raise ActionError(f"{spec.type}: no command runner configured; cannot execute")
        action = build_action(spec)
        common = {"action": spec.type, "plan_hash": plan.plan_hash, "node": spec.node, "job": spec.job,
                  "partition": blast.partition if blast else None, "approval_id": approval_id}
        self.audit.append("execution", {"event": "started", "commands": plan.commands, **common}, run_id=run_id)
        auth = Authorization(plan_hash=plan.plan_hash, decision=decision.decision, policy_ids=decision.policy_ids,
                             approval_id=approval_id)
        try:
            result = action.execute(auth, self.runner)
        except ActionError as e:
            self.audit.append("execution", {"event": "executed", "ok": False, "error": str(e), **common}, run_id=run_id)
            return ActionOutcome(status="failed", message=f"{plan.description}: {e}", **base)
        self.audit.append("execution", {"event": "executed", "ok": result.ok, "error": result.error, **common},
                          run_id=run_id)
        if not result.ok:
            return ActionOutcome(status="failed", message=f"{plan.description}: {result.error}", execution=result, **base)
        try:
            check = action.verify(self.runner)
        except WardenError as e:
            check = VerifyResult(ok=False, observed=f"could not verify: {e}")
        self.audit.append("verification", {"ok": check.ok, "observed": check.observed, **common}, run_id=run_id)
        what = "executed and verified" if check.ok else "executed, but verification failed"
        return ActionOutcome(status="executed" if check.ok else "failed", message=f"{plan.description}: {what} "
                             f"({check.observed})", execution=result, verification=check, **base)

    # ---- public --------------------------------------------------------------------------------

    def propose(self, spec: ActionSpec, *, run_id: str | None = None) -> ActionOutcome:
        """Decide one proposed action and act on the decision (see the module docstring)."""
        spec = sanitize_spec(spec)
        plan, decision, blast = self._decide(spec, run_id)
        base = {"spec": spec, "plan": plan, "decision": decision, "blast": blast}
        why = "; ".join(decision.reasons) or decision.decision
        if decision.decision == "deny" or plan is None:
            return ActionOutcome(status="denied", message=f"{spec.type} denied by policy "
                                 f"({', '.join(decision.policy_ids)}): {why}", **base)
        if self.dry_run:
            need = "would need approval" if decision.decision == "needs_approval" else "would be allowed"
            return ActionOutcome(status="dry_run", message=f"dry run: {plan.description} — {need}; nothing was run",
                                 **base)
        if decision.decision == "needs_approval":
            req = self.approvals.request_approval(
                plan.plan_hash, spec.type, spec.model_dump(mode="json", exclude_none=True), self.requester,
                run_id or "-", self.approval_ttl_s, now=self.clock())
            return ActionOutcome(status="pending_approval", approval_id=req.id,
                                 message=f"{plan.description}: waiting for approval {req.id} (plan "
                                 f"{plan.plan_hash[:12]}, expires {req.expires_at:%Y-%m-%d %H:%M}Z)", **base)
        return self._run(spec, plan, decision, blast, run_id, None)

    def execute_approved(self, approval_id: str, spec: ActionSpec | None = None, *,
                         run_id: str | None = None) -> ActionOutcome:
        """Execute an approved action: the plan must hash to the approved one, the policy must allow
        it with that approver, and the approval is consumed (once) before anything runs.

        Args:
            approval_id: the approval request's id.
            spec: the action as now proposed; None takes the parameters stored with the approval.

        Raises:
            ApprovalError: not found, not approved, expired, reused, wrong plan hash, self-approved
                irreversible action, or an approver no longer allowed.
        """
        req = self.approvals.get(approval_id)
        run_id = run_id or req.run_id
        spec = sanitize_spec(spec or ActionSpec.model_validate(req.params))
        if req.status != "approved":
            self.approvals.consume(approval_id, req.plan_hash, now=self.clock())  # raises the typed refusal
            raise ApprovalNotGranted(f"approval {approval_id}: {req.status}, not approved")
        plan, decision, blast = self._decide(spec, run_id, approver=req.approver or "", requester=req.requester)
        base = {"spec": spec, "plan": plan, "decision": decision, "blast": blast, "approval_id": approval_id}
        if plan is None or plan.plan_hash != req.plan_hash:
            self.approvals.consume(approval_id, plan.plan_hash if plan else "unplannable", now=self.clock())
            raise PlanHashMismatch(f"approval {approval_id}: the action no longer renders the approved plan")
        if decision.decision != "allow":
            return ActionOutcome(status="denied", message=f"{spec.type} not allowed even with approval "
                                 f"({', '.join(decision.policy_ids)}): {'; '.join(decision.reasons)}", **base)
        if self.dry_run:
            return ActionOutcome(status="dry_run", message=f"dry run: {plan.description} — approved and allowed; "
                                 "nothing was run (approval not used)", **base)
        self.approvals.consume(approval_id, plan.plan_hash, now=self.clock())
        return self._run(spec, plan, decision, blast, run_id, approval_id)


def propose_and_execute(items: Diagnosis | Iterable[ActionSpec], *, engine: PolicyEngine, approvals: ApprovalStore,
                        audit: AuditLog, requester: str, runner: CommandRunner | None = None,
                        groups: Iterable[str] = (), approver_groups: Mapping[str, list[str]] | None = None,
                        dry_run: bool = True, facts: Facts | None = None, run_id: str | None = None,
                        approval_ttl_s: float = 3600.0) -> list[ActionOutcome]:
    """Decide, and where allowed execute, each proposed action (a Diagnosis' or a list of specs).

    Returns:
        One ActionOutcome per action, in order. A ``pending_approval`` outcome means the run pauses
        there: approve with ``warden approve ID``, then :meth:`ExecutionSetup.execute_approved`.
    """
    setup = ExecutionSetup(engine=engine, approvals=approvals, audit=audit, requester=requester, groups=list(groups),
                           approver_groups=approver_groups or {}, runner=runner, dry_run=dry_run, facts=facts,
                           approval_ttl_s=approval_ttl_s)
    specs = [a.spec for a in items.proposed_actions] if isinstance(items, Diagnosis) else list(items)
    return [setup.propose(s, run_id=run_id) for s in specs]
