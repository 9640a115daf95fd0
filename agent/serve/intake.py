"""From received alerts to queued investigations: match a runbook, group, cool down, queue.

Per request (one Alertmanager notification, or one generic webhook body)::

    firing alerts ─► first runbook that matches (none: counted as unmatched)
        ─► group by (runbook, its group_by label values)
        ─► per group: claim the cool-down of each node and condition not claimed yet
           (``alert:<runbook>:<alertname>:<node>``; an alert without a node is the cluster)
           nothing new claimed ─► cooled down (not re-investigated)
        ─► offer the job to the queue: queued, merged into a waiting job, or dropped (full:
           its claims are released so a later alert can try again)

Resolved alerts are counted and ignored. The report is returned to the sender as JSON.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from pydantic import BaseModel

from agent.runbooks.cooldown import Cooldowns
from agent.runbooks.model import Runbook
from agent.serve.alerts import Alert
from agent.serve.queue import MAX_NODES_PER_JOB, InvestigationQueue, Job

__all__ = ["IntakeReport", "Intake"]

log = logging.getLogger("warden.serve")


class IntakeReport(BaseModel):
    """What one request led to (counts)."""

    received: int = 0
    resolved: int = 0
    unmatched: int = 0
    groups: int = 0
    cooled_down: int = 0
    """Groups whose every node and condition was investigated within the cool-down."""
    queued: int = 0
    merged: int = 0
    dropped: int = 0
    runbooks: list[str] = []


class Intake:
    """Turns alerts into jobs for ``queue``, with cool-downs in ``cooldowns``."""

    def __init__(self, runbooks: list[Runbook], cooldowns: Cooldowns, queue: InvestigationQueue) -> None:
        self.runbooks, self.cooldowns, self.queue = runbooks, cooldowns, queue

    def _runbook(self, labels: dict[str, str]) -> Runbook | None:
        return next((rb for rb in self.runbooks if rb.matches(labels)), None)

    def receive(self, alerts: Iterable[Alert]) -> IntakeReport:
        """Match, group, cool down and queue ``alerts`` (see the module docstring)."""
        rep = IntakeReport()
        groups: dict[tuple[str, ...], tuple[Runbook, list[Alert]]] = {}
        for a in alerts:
            rep.received += 1
            if a.status != "firing":
                rep.resolved += 1
                continue
            rb = self._runbook(a.labels)
            if rb is None:
                rep.unmatched += 1
                continue
            key = (rb.name, *(a.labels.get(g, "") for g in rb.group_by))
            groups.setdefault(key, (rb, []))[1].append(a)
        rep.groups = len(groups)
        plans = []
        for key, (rb, group) in groups.items():
            named = {f"alert:{rb.name}:{a.alertname}:{rb.node_of(a.labels) or '-'}": rb.node_of(a.labels) or "-"
                     for a in group}
            plans.append((key, rb, group, named))
        claimed_all: set[str] = set()
        for cooldown_s in sorted({rb.cooldown_s for _, rb, _, _ in plans}):  # one transaction per cool-down length
            claimed_all.update(self.cooldowns.claim([k for _, rb, _, named in plans if rb.cooldown_s == cooldown_s
                                                     for k in named], cooldown_s, note="serve"))
        released: list[str] = []
        for key, rb, group, named in plans:
            claimed = [k for k in named if k in claimed_all]
            if not claimed:
                rep.cooled_down += 1
                continue
            fresh = {named[k] for k in claimed}
            first = group[0]
            nodes = [n for n in dict.fromkeys(named.values()) if n in fresh and n != "-"][:MAX_NODES_PER_JOB]
            job = Job(key=key, runbook=rb, alertname=first.alertname,
                      labels={g: first.labels.get(g, "") for g in rb.group_by} | dict(first.labels),
                      summary=first.annotations.get("summary") or first.annotations.get("description") or "",
                      nodes=nodes, claimed=claimed, alerts=len(group))
            offer = self.queue.offer(job)
            setattr(rep, offer, getattr(rep, offer) + 1)
            if offer == "dropped":
                released += claimed
            if rb.name not in rep.runbooks:
                rep.runbooks.append(rb.name)
        if released:
            self.cooldowns.release(released)
            log.warning("investigation queue full: dropped %d of %d alert groups (%d waiting, cap %d)", rep.dropped,
                        rep.groups, self.queue.waiting(), self.queue.max_queued)
        return rep
