"""check_job_preempted: jobs killed or requeued by preemption (a policy decision, not a fault)."""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.facts.queries import job_nodes, job_state, newest_checkpoint
from tools.knowledge.precedence import confidence
from tools.knowledge.scheduler import is_preempted_requeue
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import SlurmMessageEvent
from tools.platform import resubmit_specs

__all__ = ["JobPreemptedConfig", "check_job_preempted"]


class JobPreemptedConfig(CheckConfig):
    """No thresholds: one preemption explains a job's end."""

    min_events: int = 1


_FAILED_SINCE = ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT", "BOOT_FAIL")


def check_job_preempted(facts: Facts, cfg: JobPreemptedConfig) -> list[Finding]:
    """job_preempted per job that ended PREEMPTED (sacct / squeue), whose log shows ``CANCELLED … DUE TO
    PREEMPTION``, or that preemption sent back to the queue (PreemptMode=REQUEUE). The owner is told, with
    the checkpoint a requeued or resubmitted run resumes from; nothing is resubmitted for them.

    Sources: sacct and squeue/scontrol job states and reasons; job-log slurm_message events.
    """
    evidence: dict[str, list[Evidence]] = defaultdict(list)
    requeued: set[str] = set()
    for r in facts.acct_jobs():
        if (r.state or "").startswith("PREEMPTED"):
            evidence[r.job_id].append(Evidence(text=f"sacct: job {r.job_id} State={r.state} End={r.end_time}",
                                               metric="sacct"))
    for j in facts.jobs:
        if (j.state or "") == "PREEMPTED":
            evidence[j.job_id].append(Evidence(text=f"job {j.job_id} JobState=PREEMPTED", metric="squeue"))
        elif is_preempted_requeue(j):
            requeued.add(j.job_id)
            evidence[j.job_id].append(Evidence(text=f"job {j.job_id} State=PENDING Reason={j.reason} "
                                                    f"Restarts={j.restarts or 0}", metric="scontrol show job"))
    suspended: dict[str, list[str]] = {}
    for j in facts.jobs:
        if (j.state or "") == "SUSPENDED":  # PreemptMode=SUSPEND (or gang scheduling): another job has its nodes
            nodes = set(job_nodes(facts, j.job_id))
            by = [o.job_id for n in sorted(nodes) for o in facts.jobs_on_node(n)
                  if o.job_id != j.job_id and (o.state or "") == "RUNNING"]
            suspended[j.job_id] = list(dict.fromkeys(by))
            evidence[j.job_id].append(Evidence(
                text=f"job {j.job_id} JobState=SUSPENDED on {', '.join(sorted(nodes)) or '?'}"
                     + (f"; running there now: {', '.join(suspended[j.job_id][:3])}" if by else ""),
                metric="squeue"))
    for e in facts.job_events_of("slurm_message"):
        if isinstance(e, SlurmMessageEvent) and e.job and "PREEMPT" in (e.reason or "").upper():
            evidence[e.job].append(log_evidence(e))
    findings: list[Finding] = []
    for job, ev in evidence.items():
        if len(ev) < cfg.min_events:
            continue
        ckpt = newest_checkpoint(facts, job)
        back = "requeued by preemption" if job in requeued else "ended by preemption"
        if job in suspended:
            by = suspended[job]
            back = ("suspended by preemption: " + ", ".join(by[:3]) + " took its nodes and it resumes when they end"
                    if by else "suspended (PreemptMode=SUSPEND or scontrol suspend); it resumes when released")
        # Requeued (PreemptMode=REQUEUE): Slurm runs it again by itself. Cancelled: it is gone, and a new
        # job from its newest checkpoint is what gets the work going again (none excluded: no node is at fault).
        # Preempted, requeued, and the run after it ended badly: that later failure is the problem now, the
        # preemption its history (it may be what left a checkpoint half-written).
        later = job_state(facts, job)
        history = later in _FAILED_SINCE
        if history:
            back += f", and its next run then ended {later}"
        if later in ("RUNNING", "COMPLETING", "COMPLETED") and job not in suspended:
            # Requeued by PreemptMode=REQUEUE and running (or done) again: the policy worked; nothing to fix.
            findings.append(Finding(
                check="job_preempted", root_cause="healthy",
                message=f"job {job} was preempted ({len(ev)} record(s)), requeued by Slurm and is {later} again: "
                        "preemption working as configured, nothing to restart or move"
                        + (f"; newest checkpoint {ckpt}" if ckpt else ""),
                culprits=[f"job:{job}"], evidence=ev[:4], strength="state", confidence=confidence("state", normal=True)))
            continue
        again = [] if history or job in requeued or job in suspended or later == "PENDING" else resubmit_specs(
            facts, [job], [], f"job {back}")
        findings.append(Finding(
            check="job_preempted", root_cause="job_preempted",
            message=f"job {job} was {back}" + ("" if job in suspended else " (a higher-priority job took its nodes)")
            + ", not by a fault"
            + (f"; newest checkpoint {ckpt}" if ckpt else "; no checkpoint named in its logs"),
            culprits=[f"job:{job}"], evidence=ev[:4],
            strength="state", confidence=confidence("state", informational=history,
                                                    corroborated=len(ev) >= 2 or bool(suspended.get(job))),
            suggested_actions=again + ([] if any(a.type == "notify_owner" for a in again) else [ActionSpec(
                type="notify_owner", job=job, checkpoint=ckpt, reason=f"job {back}" + (f"; resume from {ckpt}" if ckpt else ""))]),
        ))
    return findings
