"""check_job_stuck_completing: jobs that will not finish completing (unkillable processes)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from tools.checks.base import CheckConfig, kernel_evidence
from tools.facts import Facts
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import KernelEvent

__all__ = ["StuckCompletingConfig", "check_job_stuck_completing"]


class StuckCompletingConfig(CheckConfig):
    """How long COMPLETING may last."""

    max_completing_min: int = 10


_MONOTONIC = re.compile(r"^\[\s*(?P<s>\d+(?:\.\d+)?)\]$")


def _logged_at(facts: Facts, ev: KernelEvent) -> datetime | None:
    """When a kernel line was logged, as UTC (the snapshots' convention for zone-less times):
    ``dmesg -T`` / journalctl / ISO prefixes, or dmesg seconds since boot plus the node's
    BootTime; None when it cannot be told."""
    ts = (ev.timestamp or "").strip()
    m = _MONOTONIC.match(ts)
    if m:
        node = facts.node(ev.node or "")
        return node.boot_time + timedelta(seconds=float(m["s"])) if node and node.boot_time else None
    text = " ".join(ts.strip("[]").split())
    for fmt, year in (("%a %b %d %H:%M:%S %Y", ""), ("%b %d %H:%M:%S %Y", f" {facts.captured_at.year}")):
        try:
            return datetime.strptime(text.split(".")[0] + year, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def check_job_stuck_completing(facts: Facts, cfg: StuckCompletingConfig) -> list[Finding]:
    """job_stuck_completing per job in COMPLETING longer than ``max_completing_min`` (end time to
    capture time), or COMPLETING with hung (D-state) tasks on its nodes.

    Sources: squeue/scontrol job state, start and end time, node COMPLETING state and BootTime,
    kernel hung_task events (those logged before the job started do not count).
    """
    findings: list[Finding] = []
    for job in facts.jobs:
        if (job.state or "") != "COMPLETING":
            continue
        since = facts.captured_at - job.end_time if job.end_time else None
        # A hung-task report from before the job started is about some earlier work, not this job.
        hung = [e for e in facts.kernel_events if e.kind == "hung_task" and e.node in job.nodes
                and not (job.start_time and (t := _logged_at(facts, e)) and t < job.start_time)]
        too_long = since is not None and since > timedelta(minutes=cfg.max_completing_min)
        if not (too_long or hung):
            continue
        nodes = sorted({e.node for e in hung if e.node} or set(job.nodes))
        evidence = [Evidence(text=f"job {job.job_id} JobState=COMPLETING"
                                  + (f" for {since.total_seconds() / 60:.0f} min" if since else "")
                                  + f" on {','.join(job.nodes) or '?'}", metric="squeue")]
        evidence += [kernel_evidence(e) for e in hung[:3]]
        findings.append(Finding(
            check="job_stuck_completing", root_cause="job_stuck_completing",
            message=f"job {job.job_id} stuck completing"
            + (f" {since.total_seconds() / 60:.0f} min (threshold {cfg.max_completing_min} min)" if since else "")
            + (f"; {len(hung)} hung task(s) in D state" if hung else ""),
            culprits=[f"job:{job.job_id}", *[f"node:{n}" for n in nodes]],
            evidence=evidence, confidence=0.8 if (too_long and hung) else 0.65,
            suggested_actions=[ActionSpec(type="drain_node", node=n, reason=f"job {job.job_id} stuck completing")
                               for n in nodes],
        ))
    return findings
