"""The execution path: proposed actions -> plan -> policy -> (approval) -> execute -> verify, audited.

For each proposed action (an ``ActionSpec``, or a Diagnosis' proposed actions)::

    sanitize reason ─► check targets ─► build Action (notify_owner: owner resolved, message drafted)
        ─► plan (argv lists + hash) ─► gates (agent/gates.py: per-run caps, autonomy mode, other
        owners, fleet bounds, return-to-service) ─► blast radius ─► policy (Cedar, with the mode)
        ─► audit "policy_decision" (mode and node group recorded on every decision)
        ├─ refused / observed ─► reported, the refusal as data (which bound, the counts)
        ├─ deny ──────────────► reported
        ├─ needs_approval ────► pending approval stored (plan hash, commands, requester, expiry)
        └─ allow ─────────────► dry run: reported; else audit "execution/started" ─► execute
                                ─► audit "execution/executed" ─► verify ─► audit "verification"

Each action runs through what its facts name: Slurm commands (``runner``), the Kubernetes API
(``kube``, an ApiClient) or the notification channels (``channels``).

:meth:`ExecutionSetup.execute_approved` is the second half of an approval: it rebuilds the plan
from the parameters given, re-evaluates the policy with the recorded approver, consumes the
approval for exactly that plan hash (single use; expired, reused, wrong-hash, self- or
unauthorized approvals raise a typed ``ApprovalError``) and only then executes.

Every record reaches the audit log before the step it describes takes effect; if the audit log
cannot record, nothing runs. Nothing here runs a command unless the policy allowed that exact plan
and ``dry_run`` is False.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from agent.approvals import ApprovalStore, ApprovalNotGranted, PlanHashMismatch
from agent.audit import AuditLog
from agent.autonomy import AutonomyConfig, NodeGroup
from agent.blast import BlastRadius, blast_radius, check_targets, resource_of
from agent.fleet import FleetBounds, Refusal, RunCounters
from agent.diag_results import save_result
from agent.gates import gate, resubmit_as_owner, target_of
from agent.identity import os_user
from agent.notify import draft_message, resolve_owner
from agent.spec_text import sanitize_spec  # lives there: a diagnosis needs it without this module
from policies import PolicyDecision, PolicyEngine, PolicyRequest
from tools.actions import (ACTION_FACTS, WARDEN_PREFIX, Action, Authorization, CommandRunner, ExecutionResult, Plan, VerifyResult,
                           build_action)
from tools.actions.gpu_diagnostic import RunGpuDiagnostic
from tools.actions.notify import NotifyOwner
from tools.actions.resubmit import ResizeJob, ResubmitFromCheckpoint
from tools.actions.notify_channels import Channels, NotifyConfig
from tools.errors import ActionError, WardenError
from tools.facts import Facts
from tools.models.findings import ActionSpec, Diagnosis, Evidence

__all__ = ["ActionOutcome", "ExecutionSetup", "OutcomeStatus", "execution_order", "propose_and_execute",
           "sanitize_spec"]

OutcomeStatus = Literal["denied", "refused", "observed", "dry_run", "pending_approval", "executed", "failed"]


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
    refusal: Refusal | None = None
    """The bound or rule that refused it before the policy (status ``refused`` or ``observed``)."""
    group: NodeGroup | None = None
    """The target's node group and the autonomy mode applied."""
    evidence: list[Evidence] = []
    """What executing it found (a failing GPU diagnostic's results), evidence for the target."""


def _target_denial(spec: ActionSpec, problems: list[str], policy_id: str = "warden-target-check") -> PolicyDecision:
    kind, rid = resource_of(spec)
    return PolicyDecision(decision="deny", policy_ids=[policy_id], reasons=["; ".join(problems)],
                          action=spec.type, resource=f"{kind}::{rid!r}", dry_run=False)


_Decided = tuple[Plan | None, PolicyDecision, BlastRadius | None, NodeGroup | None, Refusal | None, Action | None]


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
        kube: Kubernetes ApiClient the Kubernetes actions run through (None: they cannot run).
        channels: notification channels notify_owner sends through (None: it cannot send).
        notify: ``[notify]`` (the site directory) for resolving owners.
        diagnosis: the Diagnosis being acted on (notifications quote its evidence and proposals).
        autonomy: the autonomy modes per node group. fleet: the fleet bounds.
        condition: the diagnosed root cause (cool-downs are per node and condition).
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
    kube: Any = None
    channels: Channels | None = None
    notify: NotifyConfig | None = None
    diagnosis: Diagnosis | None = None
    autonomy: AutonomyConfig = field(default_factory=AutonomyConfig)
    fleet: FleetBounds = field(default_factory=FleetBounds)
    condition: str | None = None
    diag_dir: Path | None = None
    """Where GPU diagnostic results are kept as evidence for later runs (agent/diag_results.py)."""
    slurm_user: str | None = None
    """The Slurm user commands run as (admitted to a diagnostic's maintenance reservation); default: the OS user."""
    _counters: dict[str, RunCounters] = field(default_factory=dict)

    # ---- deciding ------------------------------------------------------------------------------

    def _build(self, spec: ActionSpec) -> tuple[Action | None, Refusal | None]:
        """The typed action; notify_owner gets its owner resolved and its message drafted here."""
        action = build_action(spec)
        if isinstance(action, RunGpuDiagnostic):
            return self._diag_on_drained(action), None
        if isinstance(action, (ResubmitFromCheckpoint, ResizeJob)):
            return resubmit_as_owner(action, self.facts, self.slurm_user or os_user())
        if not isinstance(action, NotifyOwner):
            return action, None
        who = resolve_owner(spec, self.facts, self.notify, self.kube)
        text = draft_message(spec, self.facts, self.diagnosis or None)
        action = action.model_copy(update={"message": text, "user": who.user, "channel": who.channel,
                                           "recipient": who.recipient})
        if who.problem:
            return action, Refusal(bound="no-owner-contact", message=f"notify_owner: {who.problem}; nothing sent",
                                   counts={"user": who.user or ""})
        return action, None

    def _diag_on_drained(self, action: RunGpuDiagnostic) -> RunGpuDiagnostic:
        """A diagnostic on a node Warden drained runs inside a maintenance reservation (no step starts
        on a DRAIN node); the drain with its reason is put back afterwards."""
        node = self.facts.node(action.node) if self.facts else None
        if node is None or not node.drained or not (node.reason or "").startswith(WARDEN_PREFIX):
            return action
        return action.model_copy(update={"reservation": f"warden-diag-{action.node}"[:64],
                                         "reservation_user": self.slurm_user or os_user(),
                                         "drain_reason": node.reason})

    def _decide(self, spec: ActionSpec, run_id: str | None, *, approver: str = "",
                requester: str | None = None, count: bool = True) -> _Decided:
        """Plan, gate and decide one sanitized spec; the decision is audited before it is returned."""
        plan: Plan | None = None
        blast: BlastRadius | None = None
        action: Action | None = None
        group: NodeGroup | None = None
        refusal: Refusal | None = None
        problems = check_targets(spec, self.facts)
        if not problems:
            try:
                action, refusal = self._build(spec)
                plan = action.plan() if action else None
            except ActionError as e:
                problems = [str(e)]
        if plan is not None and refusal is None:
            counters = self._counters.setdefault(run_id or "-", RunCounters()) if count else RunCounters()
            group, refusal = gate(spec, plan.plan_hash, facts=self.facts, audit=self.audit, counters=counters,
                                  autonomy=self.autonomy, bounds=self.fleet, condition=self.condition,
                                  now=self.clock())
        if problems or plan is None:
            decision = _target_denial(spec, problems)
        elif refusal is not None:
            decision = _target_denial(spec, [refusal.message], f"warden-{refusal.bound}")
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
                autonomy_mode=group.mode if group else self.autonomy.default,
            )
            decision = self.engine.evaluate(request)
        self.audit.append("policy_decision", {
            "autonomy_mode": group.mode if group else self.autonomy.default,
            "node_group": group.name if group else None,
            "refusal": refusal.model_dump(mode="json") if refusal else None,
            "action": spec.type, "spec": spec.model_dump(mode="json", exclude_none=True),
            "plan_hash": plan.plan_hash if plan else None, "commands": plan.commands if plan else [],
            "decision": decision.decision, "policy_ids": decision.policy_ids, "reasons": decision.reasons,
            "blast_radius": blast.model_dump(mode="json") if blast else None, "approver": approver or None,
            "requester": requester or self.requester, "dry_run": self.dry_run,
        }, run_id=run_id)
        return plan, decision, blast, group, refusal, action

    # ---- running -------------------------------------------------------------------------------

    def _runner_for(self, action: Action) -> Any:
        platform = action.facts.platform
        runner = {"slurm": self.runner, "kubernetes": self.kube, "notify": self.channels}[platform]
        if runner is None:
            what = {"slurm": "command runner", "kubernetes": "Kubernetes client ([kubernetes] in warden.toml)",
                    "notify": "notification channel ([notify] in warden.toml)"}[platform]
            raise ActionError(f"{action.action_type}: no {what} configured; cannot execute")
        return runner

    def _run(self, spec: ActionSpec, plan: Plan, decision: PolicyDecision, blast: BlastRadius | None,
             run_id: str | None, approval_id: str | None, action: Action, group: NodeGroup | None) -> ActionOutcome:
        base = {"spec": spec, "plan": plan, "decision": decision, "blast": blast, "approval_id": approval_id,
                "group": group}
        runner = self._runner_for(action)
        common = {"action": spec.type, "plan_hash": plan.plan_hash, "node": spec.node, "job": spec.job,
                  "target": target_of(spec), "partition": blast.partition if blast else None,
                  "group": group.name if group else None, "autonomy_mode": group.mode if group else None,
                  "condition": self.condition, "approval_id": approval_id}
        self.audit.append("execution", {"event": "started", "commands": plan.commands, **common}, run_id=run_id)
        auth = Authorization(plan_hash=plan.plan_hash, decision=decision.decision, policy_ids=decision.policy_ids,
                             approval_id=approval_id)
        try:
            result = action.execute(auth, runner)
        except ActionError as e:
            self.audit.append("execution", {"event": "executed", "ok": False, "error": str(e), **common}, run_id=run_id)
            return ActionOutcome(status="failed", message=f"{plan.description}: {e}", **base)
        self.audit.append("execution", {"event": "executed", "ok": result.ok, "error": result.error,
                                        "outputs": [o[:500] for o in result.outputs[:20]], **common}, run_id=run_id)
        if not result.ok:
            return ActionOutcome(status="failed", message=f"{plan.description}: {result.error}", execution=result, **base)
        try:
            check = action.verify(runner)
        except WardenError as e:
            check = VerifyResult(ok=False, observed=f"could not verify: {e}")
        evidence: list[Evidence] = []
        extra: dict[str, Any] = {}
        if isinstance(action, RunGpuDiagnostic) and action.report is not None:
            evidence = action.evidence()
            extra = {"passed": action.report.passed, "evidence": [e.text for e in evidence]}
            if self.diag_dir is not None and action.raw_json:
                srun = next(c for c in plan.commands if c[0] == "srun")
                extra["saved"] = str(save_result(self.diag_dir, action.node, action.raw_json, srun, now=self.clock()))
        self.audit.append("verification", {"ok": check.ok, "observed": check.observed, **extra, **common},
                          run_id=run_id)
        what = "executed and verified" if check.ok else "executed, but verification failed"
        return ActionOutcome(status="executed" if check.ok else "failed", message=f"{plan.description}: {what} "
                             f"({check.observed})", execution=result, verification=check, evidence=evidence, **base)

    # ---- public --------------------------------------------------------------------------------

    def propose(self, spec: ActionSpec, *, run_id: str | None = None) -> ActionOutcome:
        """Decide one proposed action and act on the decision (see the module docstring)."""
        spec = sanitize_spec(spec)
        plan, decision, blast, group, refusal, action = self._decide(spec, run_id)
        base = {"spec": spec, "plan": plan, "decision": decision, "blast": blast, "group": group}
        why = "; ".join(decision.reasons) or decision.decision
        if refusal is not None:
            status: OutcomeStatus = "observed" if refusal.bound == "observe-mode" else "refused"
            return ActionOutcome(status=status, message=refusal.message, refusal=refusal, **base)
        if decision.decision == "deny" or plan is None or action is None:
            return ActionOutcome(status="denied", message=f"{spec.type} denied by policy "
                                 f"({', '.join(decision.policy_ids)}): {why}", **base)
        mode = f" [{group.mode} mode]" if group else ""
        if self.dry_run:
            need = "would need approval" if decision.decision == "needs_approval" else "would be allowed"
            return ActionOutcome(status="dry_run", message=f"dry run: {plan.description} — {need}{mode}; nothing "
                                 "was run", **base)
        if decision.decision == "needs_approval":
            req = self.approvals.request_approval(
                plan.plan_hash, spec.type, spec.model_dump(mode="json", exclude_none=True), self.requester,
                run_id or "-", self.approval_ttl_s, now=self.clock(), commands=plan.commands)
            return ActionOutcome(status="pending_approval", approval_id=req.id,
                                 message=f"{plan.description}: waiting for approval {req.id} (plan "
                                 f"{plan.plan_hash[:12]}, expires {req.expires_at:%Y-%m-%d %H:%M}Z){mode}", **base)
        return self._run(spec, plan, decision, blast, run_id, None, action, group)

    def execute_approved(self, approval_id: str, spec: ActionSpec | None = None, *,
                         run_id: str | None = None) -> ActionOutcome:
        """Execute an approved action: the plan must hash to the approved one, the gates and the policy
        must still allow it with that approver, and the approval is consumed (once, its MAC and audit
        record checked) before anything runs.

        Args:
            approval_id: the approval request's id.
            spec: the action as now proposed; None takes the parameters stored with the approval.

        Raises:
            ApprovalError: not found, not approved, expired, reused, wrong plan hash, tampered,
                self-approved irreversible action, or an approver no longer allowed.
        """
        req = self.approvals.get(approval_id)
        run_id = run_id or req.run_id
        spec = sanitize_spec(spec or ActionSpec.model_validate(req.params))
        if req.status != "approved":
            self.approvals.consume(approval_id, req.plan_hash, now=self.clock())  # raises the typed refusal
            raise ApprovalNotGranted(f"approval {approval_id}: {req.status}, not approved")
        plan, decision, blast, group, refusal, action = self._decide(
            spec, run_id, approver=req.approver or "", requester=req.requester, count=False)
        base = {"spec": spec, "plan": plan, "decision": decision, "blast": blast, "approval_id": approval_id,
                "group": group}
        if plan is None or plan.plan_hash != req.plan_hash:
            self.approvals.consume(approval_id, plan.plan_hash if plan else "unplannable", now=self.clock())
            raise PlanHashMismatch(f"approval {approval_id}: the action no longer renders the approved plan")
        if refusal is not None:
            return ActionOutcome(status="refused", message=refusal.message, refusal=refusal, **base)
        if decision.decision != "allow" or action is None:
            return ActionOutcome(status="denied", message=f"{spec.type} not allowed even with approval "
                                 f"({', '.join(decision.policy_ids)}): {'; '.join(decision.reasons)}", **base)
        if self.dry_run:
            return ActionOutcome(status="dry_run", message=f"dry run: {plan.description} — approved and allowed; "
                                 "nothing was run (approval not used)", **base)
        self.approvals.consume(approval_id, plan.plan_hash, now=self.clock())
        return self._run(spec, plan, decision, blast, run_id, approval_id, action, group)


def execution_order(specs: Iterable[ActionSpec]) -> list[ActionSpec]:
    """The specs in the order they can work: a GPU diagnostic on a node runs before the action that
    takes that node out of service (after a drain, no Slurm step can start there); otherwise the
    proposed order is kept."""
    items = list(specs)
    diag_nodes = {s.node for s in items if s.type == "run_gpu_diagnostic" and s.node}

    def rank(i_s: tuple[int, ActionSpec]) -> tuple[int, int]:
        i, s = i_s
        first = s.type == "run_gpu_diagnostic" or not (ACTION_FACTS[s.type].takes_out_of_service
                                                       and s.node in diag_nodes)
        return (0 if first else 1, i)

    return [s for _, s in sorted(enumerate(items), key=rank)]


def propose_and_execute(items: Diagnosis | Iterable[ActionSpec], *, engine: PolicyEngine, approvals: ApprovalStore,
                        audit: AuditLog, requester: str, runner: CommandRunner | None = None,
                        groups: Iterable[str] = (), approver_groups: Mapping[str, list[str]] | None = None,
                        dry_run: bool = True, facts: Facts | None = None, run_id: str | None = None,
                        approval_ttl_s: float = 3600.0, **setup: Any) -> list[ActionOutcome]:
    """Decide, and where allowed execute, each proposed action (a Diagnosis' or a list of specs), in
    :func:`execution_order`. ``setup`` takes the other ExecutionSetup fields (kube, channels, notify,
    autonomy, fleet, ...); a Diagnosis also sets ``diagnosis`` and ``condition``.

    Returns:
        One ActionOutcome per action, in execution order. A ``pending_approval`` outcome means the
        run pauses there: approve with ``warden approve ID``, then :meth:`ExecutionSetup.execute_approved`.
    """
    if isinstance(items, Diagnosis):
        setup.setdefault("diagnosis", items)
        setup.setdefault("condition", items.root_cause)
    s = ExecutionSetup(engine=engine, approvals=approvals, audit=audit, requester=requester, groups=list(groups),
                       approver_groups=approver_groups or {}, runner=runner, dry_run=dry_run, facts=facts,
                       approval_ttl_s=approval_ttl_s, **setup)
    specs = [a.spec for a in items.proposed_actions] if isinstance(items, Diagnosis) else list(items)
    return [s.propose(spec, run_id=run_id) for spec in execution_order(specs)]
