"""Fleet bounds: limits on what Warden does across the fleet, checked before any policy or command.

The per-plan policy (Cedar) cannot see the hour before; these bounds read the audit log (every
execution is recorded there before it runs) and the run's own counters, and each refusal comes
back as data (:class:`Refusal`: which bound, the counts, one line for people), e.g.
``rate limited: 3 drains in the last 1 h on partition gpu (limit 3)``.

Per run (issue: a hostile model's 2,000 ``run_gpu_diagnostic``):
  identical plans are deduplicated; at most ``max_plans_per_run`` plans, ``max_per_type_per_run``
  of one action type and ``max_per_target_per_type_per_run`` of one type on one target — read-only
  actions included.
Over time (from the audit log):
  at most ``max_out_per_group`` nodes of a node group (or partition) taken out of service by Warden
  within ``window_h``, and at most ``max_out_pct_per_group`` percent of its nodes; at most
  ``max_disruptive_per_hour`` state-changing actions overall; one state-changing action of a type
  per target and condition per ``cooldown_s`` (a diagnostic to confirm a repair is not held back); a node Warden took out of service more than
  ``max_remediations_per_node`` times within ``repeat_window_d`` days goes to a human (no automatic
  execution, never resumed without an operator).
What each action is (disruptive, takes a node out of service) comes from its declared facts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from pydantic import BaseModel, ConfigDict, Field

from agent.audit import AuditRecord
from tools.actions import ACTION_FACTS

__all__ = ["FleetBounds", "Refusal", "RunCounters", "fleet_refusal", "remediations", "MAX_PLANS_PER_DIAGNOSIS"]

MAX_PLANS_PER_DIAGNOSIS = 20
"""Proposed actions a Diagnosis keeps (after deduplication); the rest are dropped, and said so."""


class FleetBounds(BaseModel):
    """The fleet bounds (``fleet:`` in $WARDEN_HOME/config.yaml); every field has a safe default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window_h: float = Field(default=1.0, gt=0, le=24 * 7)
    max_out_per_group: int = Field(default=3, ge=0)
    """Nodes of one group Warden may drain or cordon within ``window_h``."""
    max_out_pct_per_group: float = Field(default=25.0, ge=0, le=100)
    """Share of a group's nodes (percent, this one included) Warden may have drained or cordoned within the window."""
    max_disruptive_per_hour: int = Field(default=10, ge=0)
    """State-changing (not read-only) actions per hour, fleet-wide."""
    cooldown_s: float = Field(default=3600.0, ge=0, le=7 * 86400)
    """One action of a type per target and condition per cool-down."""
    repeat_window_d: float = Field(default=7.0, gt=0, le=90)
    max_remediations_per_node: int = Field(default=1, ge=0)
    """Times Warden may take one node out of service within ``repeat_window_d`` before a human decides."""
    max_plans_per_run: int = Field(default=MAX_PLANS_PER_DIAGNOSIS, ge=1, le=1000)
    max_per_type_per_run: int = Field(default=8, ge=1)
    max_per_target_per_type_per_run: int = Field(default=1, ge=1)


class Refusal(BaseModel):
    """A bound that refused an action, as data."""

    bound: str
    """``duplicate-plan``, ``run-cap``, ``type-cap``, ``target-cap``, ``rate-limit``, ``group-share``,
    ``disruptive-rate``, ``cooldown``, ``repeat-remediation``, ``owned-by-other``, ``external-owner``,
    ``no-owner-contact``, ``resume-needs-diagnostic``, ``observe-mode``, ``submit-as-owner``."""
    message: str
    counts: dict[str, float | int | str] = Field(default_factory=dict)


@dataclass
class RunCounters:
    """What one run has already planned (for the per-run caps)."""

    hashes: set[str] = field(default_factory=set)
    plans: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    by_target: Counter[tuple[str, str]] = field(default_factory=Counter)

    def check(self, action: str, target: str, plan_hash: str, b: FleetBounds) -> Refusal | None:
        """Refuse a duplicate or over-cap plan; otherwise count it."""
        if plan_hash in self.hashes:
            return Refusal(bound="duplicate-plan", message=f"{action} on {target}: identical plan already handled "
                           "in this run", counts={"plan_hash": plan_hash})
        caps = [(self.plans, b.max_plans_per_run, "run-cap", "plans in this run"),
                (self.by_type[action], b.max_per_type_per_run, "type-cap", f"{action} plans in this run"),
                (self.by_target[(action, target)], b.max_per_target_per_type_per_run, "target-cap",
                 f"{action} plans on {target} in this run")]
        for seen, limit, bound, what in caps:
            if seen >= limit:
                return Refusal(bound=bound, message=f"{action} on {target}: refused, {seen} {what} (limit {limit})",
                               counts={"seen": seen, "limit": limit})
        self.hashes.add(plan_hash)
        self.plans += 1
        self.by_type[action] += 1
        self.by_target[(action, target)] += 1
        return None


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


def _executions(records: Iterable[AuditRecord]) -> list[AuditRecord]:
    """Executions Warden started (recorded before the command ran, so a crash still counts)."""
    return [r for r in records if r.kind == "execution" and r.payload.get("event") == "started"]


def remediations(records: Iterable[AuditRecord], node: str, *, since: datetime) -> int:
    """Times Warden took ``node`` out of service (drain/cordon executions) since ``since``."""
    return sum(1 for r in _executions(records)
               if r.payload.get("node") == node and _utc(r.ts) >= since
               and ACTION_FACTS.get(str(r.payload.get("action")), None) is not None
               and ACTION_FACTS[str(r.payload["action"])].takes_out_of_service)


def fleet_refusal(action: str, target: str, *, node: str | None, group: str | None, group_size: int,
                  group_kind: str = "partition",
                  condition: str | None, records: list[AuditRecord], now: datetime, bounds: FleetBounds,
                  already_out: Iterable[str] = ()) -> Refusal | None:
    """The first time-window bound ``action`` on ``target`` would break, or None.

    Args:
        group: the node group (autonomy rule's group, else the partition) of the target node;
            ``group_kind`` says which ("partition" or "node group") for the message.
        group_size: nodes in that group.
        condition: the diagnosed root cause the action answers (cool-downs are per condition).
        records: the audit log's records.
        already_out: nodes of the group the evidence shows drained by Warden (``warden:`` reason)
            that the audit log may not hold (another Warden instance, an older log).
    """
    facts = ACTION_FACTS[action]
    now = _utc(now)
    runs = _executions(records)
    if facts.disruptive:
        hour = [r for r in runs if _utc(r.ts) >= now - timedelta(hours=1)
                and str(r.payload.get("action")) in ACTION_FACTS and ACTION_FACTS[str(r.payload["action"])].disruptive]
        if len(hour) >= bounds.max_disruptive_per_hour:
            return Refusal(bound="disruptive-rate", message=f"rate limited: {len(hour)} disruptive actions in the last "
                           f"hour (limit {bounds.max_disruptive_per_hour})",
                           counts={"last_hour": len(hour), "limit": bounds.max_disruptive_per_hour})
    if bounds.cooldown_s > 0 and facts.disruptive:  # read-only ones are bounded by the per-run caps
        since = now - timedelta(seconds=bounds.cooldown_s)
        for r in runs:
            p = r.payload
            if (p.get("action") == action and p.get("target") == target and p.get("condition") == condition
                    and _utc(r.ts) >= since):
                ago = int((now - _utc(r.ts)).total_seconds() // 60)
                return Refusal(bound="cooldown", message=f"cool-down: {action} on {target} for {condition or 'this'} "
                               f"ran {ago} min ago (cool-down {bounds.cooldown_s / 60:g} min)",
                               counts={"minutes_ago": ago, "cooldown_s": bounds.cooldown_s})
    if facts.takes_out_of_service and node is not None:
        since = now - timedelta(hours=bounds.window_h)
        out = {str(r.payload.get("node")) for r in runs if _utc(r.ts) >= since and r.payload.get("group") == group
               and ACTION_FACTS.get(str(r.payload.get("action"))) is not None
               and ACTION_FACTS[str(r.payload["action"])].takes_out_of_service}
        out |= set(already_out)
        out.discard(node)
        where = f"{group_kind} {group or '?'}"
        if len(out) >= bounds.max_out_per_group:
            return Refusal(bound="rate-limit", message=f"rate limited: {len(out)} drains in the last {bounds.window_h:g} h "
                           f"on {where} (limit {bounds.max_out_per_group})",
                           counts={"drained": len(out), "limit": bounds.max_out_per_group, "group": group or ""})
        pct = 100.0 * (len(out) + 1) / max(group_size, 1)
        if pct > bounds.max_out_pct_per_group:
            return Refusal(bound="group-share", message=f"rate limited: draining {node} would put {len(out) + 1} of "
                           f"{group_size} nodes of {where} ({pct:.0f}%) out by Warden within {bounds.window_h:g} h "
                           f"(limit {bounds.max_out_pct_per_group:g}%)",
                           counts={"out": len(out) + 1, "size": group_size, "pct": round(pct, 1)})
    return None
