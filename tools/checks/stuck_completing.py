"""check_job_stuck_completing: jobs that will not finish completing (unkillable processes)."""

from __future__ import annotations

from datetime import timedelta

from tools.checks.base import CheckConfig, kernel_evidence
from tools.facts import Facts
from tools.facts.queries import kernel_event_time
from tools.knowledge.precedence import confidence
from tools.platform import node_ref, take_out_of_service
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["StuckCompletingConfig", "check_job_stuck_completing"]


class StuckCompletingConfig(CheckConfig):
    """How long COMPLETING may last."""

    max_completing_min: int = 10


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
        hung = [e for n in job.nodes for e in facts.kernel_events_on(n) if e.kind == "hung_task"
                and not (job.start_time and (t := kernel_event_time(facts, e)) and t < job.start_time)]
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
            evidence=evidence, strength="state", confidence=confidence("state", corroborated=too_long and bool(hung)),
            suggested_actions=[a for n in nodes for a in take_out_of_service(
                facts, node_ref(facts, n), f"job {job.job_id} stuck completing")],
        ))
    return findings
