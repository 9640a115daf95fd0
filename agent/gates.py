"""The gates an action passes before the Cedar policy sees it, each refusing with data.

    per-run caps ─► autonomy mode (observe: stop) ─► other owners ─► fleet bounds ─► return-to-service gate

:func:`gate` runs them in that order and returns the target's :class:`NodeGroup` (with the mode
applied) and the first :class:`Refusal`, if any. The return-to-service gate keeps a node Warden
took out of service out until a diagnostic passed on it since (a ``verification`` record of
``run_gpu_diagnostic`` with ok) or an operator recorded an override (``warden act --override-resume
NODE --reason TEXT``); a node Warden remediated more than the allowed times in the repeat window
needs the operator in any case.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from agent.audit import AuditLog, AuditRecord
from agent.autonomy import AutonomyConfig, NodeGroup, node_group, other_owner
from agent.fleet import FleetBounds, Refusal, RunCounters, fleet_refusal, remediations
from tools.actions import ACTION_FACTS, WARDEN_PREFIX
from tools.actions.resubmit import ResizeJob, ResubmitFromCheckpoint
from tools.facts import Facts
from tools.models.findings import ActionSpec

__all__ = ["gate", "record_override", "OVERRIDE_EVENT", "target_of", "resubmit_as_owner"]

OVERRIDE_EVENT = "operator_override"


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


def target_of(spec: ActionSpec) -> str:
    """The action's target as one string: a node, a job, ``namespace/pod``."""
    kind = ACTION_FACTS[spec.type].resource
    if kind == "pod" or (spec.pod and not spec.job and not spec.node):
        return f"{spec.namespace or 'default'}/{spec.pod}"
    return (spec.node if kind == "node" else spec.job or spec.node) or "?"


def record_override(audit: AuditLog, node: str, operator: str, reason: str) -> AuditRecord:
    """Record an operator's decision that ``node`` may return to service without a passing diagnostic."""
    return audit.append("approval", {"event": OVERRIDE_EVENT, "node": node, "operator": operator,
                                     "reason": " ".join(reason.split())[:300]})


def _last_out(records: list[AuditRecord], node: str, facts: Facts | None) -> datetime | None:
    times = [_utc(r.ts) for r in records if r.kind == "execution" and r.payload.get("event") == "started"
             and r.payload.get("node") == node and str(r.payload.get("action")) in ACTION_FACTS
             and ACTION_FACTS[str(r.payload["action"])].takes_out_of_service]
    s = facts.node(node) if facts else None
    if s is not None and s.drained and (s.reason or "").startswith(WARDEN_PREFIX) and s.reason_time:
        times.append(_utc(s.reason_time))
    return max(times) if times else None


def _return_refusal(node: str, records: list[AuditRecord], facts: Facts | None, bounds: FleetBounds,
                    now: datetime) -> Refusal | None:
    since = _last_out(records, node, facts) or datetime.min.replace(tzinfo=timezone.utc)
    override = any(r.kind == "approval" and r.payload.get("event") == OVERRIDE_EVENT and r.payload.get("node") == node
                   and _utc(r.ts) >= since for r in records)
    if override:
        return None
    times = remediations(records, node, since=_utc(now) - timedelta(days=bounds.repeat_window_d))
    if times > bounds.max_remediations_per_node:
        return Refusal(bound="repeat-remediation", message=f"{node}: Warden took it out of service {times} times in "
                       f"{bounds.repeat_window_d:g} days; a person decides whether it returns (warden act "
                       f"--override-resume {node} --reason ...)", counts={"times": times})
    passed = any(r.kind == "verification" and r.payload.get("action") == "run_gpu_diagnostic"
                 and r.payload.get("node") == node and r.payload.get("passed") is True and _utc(r.ts) >= since
                 for r in records)
    if passed:
        return None
    return Refusal(bound="resume-needs-diagnostic", message=f"{node}: no passing GPU diagnostic since Warden took it "
                   f"out of service; run run_gpu_diagnostic first, or record an operator override "
                   f"(warden act --override-resume {node} --reason ...)")


def gate(spec: ActionSpec, plan_hash: str, *, facts: Facts | None, audit: AuditLog, counters: RunCounters,
         autonomy: AutonomyConfig, bounds: FleetBounds, condition: str | None,
         now: datetime) -> tuple[NodeGroup, Refusal | None]:
    """Run every gate for one planned action (see the module docstring)."""
    f = ACTION_FACTS[spec.type]
    node = spec.node if f.resource == "node" else None
    group = node_group(autonomy, facts, node, job=spec.job)
    target = target_of(spec)
    capped = counters.check(spec.type, target, plan_hash, bounds)
    if capped:
        return group, capped
    if group.mode == "observe":
        where = f"{group.kind} {group.name}" if group.name else "the fleet"
        return group, Refusal(bound="observe-mode", message=f"{spec.type} on {target}: {where} is in observe mode; "
                              "reported, not executed")
    owner = other_owner(spec.type, node, facts, autonomy)
    if owner:
        bound = "external-owner" if "external remediation" in owner else "owned-by-other"
        return group, Refusal(bound=bound, message=f"{spec.type} on {target}: {node} is held by {owner}; "
                              "reporting instead of acting")
    records = list(audit.records())
    already = []
    if facts is not None and f.takes_out_of_service:
        cutoff = _utc(facts.captured_at) - timedelta(hours=bounds.window_h)
        already = [n.name for n in facts.nodes if n.name in group.members and n.drained
                   and (n.reason or "").startswith(WARDEN_PREFIX) and n.reason_time and _utc(n.reason_time) >= cutoff]
    refusal = fleet_refusal(spec.type, target, node=node, group=group.name, group_kind=group.kind,
                            group_size=group.size, condition=condition, records=records, now=now, bounds=bounds,
                            already_out=already)
    if refusal:
        return group, refusal
    if f.returns_to_service and node is not None:
        return group, _return_refusal(node, records, facts, bounds, now)
    return group, None


def resubmit_as_owner(action: ResubmitFromCheckpoint | ResizeJob, facts: Facts | None,
                      me: str) -> tuple[ResubmitFromCheckpoint | ResizeJob, Refusal | None]:
    """A resubmission runs the owner's script as the owner: as Warden's Slurm identity ``me`` only
    for jobs that are its own, else with ``as_user`` (``sbatch --uid``, root only); when ``me`` is
    not root, refused (``owned-by-other``): the owner's script must never run as Warden."""
    job = facts.job(action.job) if facts else None
    acct = facts.acct_job(action.job) if facts and job is None else None
    owner = (job.user if job else None) or (acct.user if acct else None)
    if not owner or owner == me:
        return action, None
    if me != "root":
        return action, Refusal(bound="submit-as-owner", counts={"owner": owner, "slurm_user": me},
                               message=f"{action.action_type} of job {action.job}: it belongs to {owner} and Warden "
                               f"submits as {me}, so the script would run as {me}; only root may submit for another "
                               "user; nothing submitted")
    return action.model_copy(update={"as_user": owner}), None
