"""Run one queued job: ask the runbook's question about the target, post where it says.

The investigation goes through agent/runbooks/investigate.py in the runbook's autonomy mode (capped
by config.yaml's), so every plan is decided by the policy, audited, and — where it needs approval —
posted to Slack with Approve / Deny buttons that the Slack app (mounted on the same server) handles.
A failed investigation releases the job's cool-down claims, so the next alert can try again.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from agent.runbooks.cooldown import Cooldowns
from agent.runbooks.investigate import investigate
from agent.runbooks.post import Delivery, deliver
from agent.runbooks.target import Target
from agent.serve.queue import Job
from agent.settings import WardenSettings

__all__ = ["JobResult", "Runner"]

log = logging.getLogger("warden.serve")


class JobResult(BaseModel):
    """What one job did (``/status`` shows the latest ones)."""

    runbook: str
    alertname: str
    nodes: int
    alerts: int
    root_cause: str | None = None
    run_id: str | None = None
    approvals: list[str] = []
    deliveries: list[Delivery] = []
    error: str | None = None
    latency_s: float = 0.0
    """From the first alert's arrival to the last post."""


class Runner:
    """Callable the queue runs per job."""

    def __init__(self, target: Target, cooldowns: Cooldowns, *, slack: Callable[[], Any] | None = None,
                 settings: Callable[[], WardenSettings] = WardenSettings.load) -> None:
        self.target, self.cooldowns, self.slack, self.settings = target, cooldowns, slack, settings
        self.results: collections.deque[JobResult] = collections.deque(maxlen=100)

    def __call__(self, job: Job) -> None:
        rb = job.runbook
        res = JobResult(runbook=rb.name, alertname=job.alertname, nodes=len(job.nodes), alerts=job.alerts)
        question = rb.question_for(job.nodes, job.alertname, job.labels, job.summary, len(job.nodes) or job.alerts)
        try:
            inv = investigate(self.target, question, settings=self.settings(), requester=rb.requester,
                              mode=rb.autonomy, read=rb.read, model=rb.model)
        except Exception as e:
            self.cooldowns.release(job.claimed)
            res.error = f"{type(e).__name__}: {e}"[:500]
            self.results.append(res)
            raise
        shown = ", ".join(job.nodes[:5]) + (f" and {len(job.nodes) - 5} more" if len(job.nodes) > 5 else "")
        note = f"alert {job.alertname} ({job.alerts} alert(s){', ' + shown if shown else ''}) · runbook {rb.name}"
        res.deliveries = [deliver(inv, p, runbook=rb.name, note=note, slack=self.slack, images=rb.images)
                          for p in rb.post]
        for d in res.deliveries:
            if not d.ok:
                log.warning("runbook %s: post to %s failed: %s", rb.name, d.where, d.detail)
        res.root_cause, res.run_id = inv.diagnosis.root_cause, inv.diagnosis.run_id
        res.approvals = [o.approval_id for o in inv.outcomes if o.approval_id]
        res.latency_s = round(time.time() - job.received_at, 3)
        self.results.append(res)
