"""check_job_held: pending jobs that are held (Priority=0) and will never start on their own."""

from __future__ import annotations

from tools.checks.base import CheckConfig
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.knowledge.scheduler import hold_kind
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.slurm import SlurmJob

__all__ = ["JobHeldConfig", "check_job_held"]

_WHY = {
    "system": "held by Slurm after its launch failed and it was requeued",
    "max_requeue": "held by Slurm after it was requeued MaxBatchRequeue times (JobHoldMaxRequeue)",
    "admin": "held by an administrator",
    "user": "held by its owner",
    "constraints": "requeued and now asks for features no node has (BadConstraints)",
    "reservation": "held by Slurm because the reservation it was submitted to was deleted",
    "special_exit": "requeued and held by Slurm because its exit code matched RequeueExitHold (state SPECIAL_EXIT; "
                    "JobHeldUser is how Slurm marks that hold, not a person's)",
}


class JobHeldConfig(CheckConfig):
    """Which holds to report: a user's own hold is reported only when the question names the job."""

    report_user_holds: bool = True


def _actions(job: SlurmJob, kind: str, reason: str) -> list[ActionSpec]:
    job_id = job.job_id
    if kind == "system":
        return [ActionSpec(type="release_job", job=job_id, reason="launch failed and Slurm held the requeued job")]
    if kind == "reservation":
        # Released, it runs outside any reservation, on the partition's nodes like any job (scontrol release).
        return [ActionSpec(type="release_job", job=job_id, reason="its reservation was deleted; release it to run "
                           "outside the reservation"),
                ActionSpec(type="notify_owner", job=job_id, reason=f"job held: {reason}")]
    if kind == "constraints":
        # After a node-failure requeue Slurm can keep constraints of the lost allocation; re-setting the
        # node count (scontrol update NumNodes=) makes it evaluate the job afresh (SchedMD bug reports).
        return [ActionSpec(type="update_job", job=job_id, num_nodes=job.num_nodes,
                           reason="requeued job stuck on BadConstraints: re-set its node count"),
                ActionSpec(type="notify_owner", job=job_id, reason=f"job held: {reason}")]
    return [ActionSpec(type="notify_owner", job=job_id, reason=f"job is {_WHY[kind]} ({reason})")]


def check_job_held(facts: Facts, cfg: JobHeldConfig) -> list[Finding]:
    """job_held per pending job that is held: ``launch failed requeued held`` (Slurm's own hold after a
    failed launch: release it once the node is fixed), ``JobHeldAdmin`` / ``JobHeldUser`` (a person's hold,
    Priority=0), ``BadConstraints`` after a requeue (update the constraint).

    Sources: squeue / scontrol show job (state, reason, priority, restarts, features).
    """
    findings: list[Finding] = []
    for job in facts.jobs:
        kind = hold_kind(job)
        if kind is None or (kind == "user" and not cfg.report_user_holds):
            continue
        reason = job.reason or "Priority=0"
        why = "max_requeue" if kind == "system" and "maxrequeue" in reason.lower().replace("_", "") else kind
        why = "special_exit" if job.state in ("SPECIAL_EXIT", "REQUEUE_HOLD") else why
        text = (f"job {job.job_id} State={job.state} Reason={reason} Priority={job.priority}"
                + (f" Restarts={job.restarts}" if job.restarts else "")
                + (f" Features={job.constraint}" if job.constraint else ""))
        findings.append(Finding(
            check="job_held", root_cause="job_held",
            message=f"job {job.job_id} is {_WHY[why]}: it will not start until released" if kind != "constraints"
            else f"job {job.job_id} {_WHY[kind]}: it will not start as submitted",
            culprits=[f"job:{job.job_id}"], evidence=[Evidence(text=text, metric="scontrol show job")],
            # A person's hold is their choice, not a fault: it answers a question about the job, no more.
            strength="state", confidence=confidence("state", corroborated=job.priority == 0,
                                                    informational=kind in ("user", "admin")),
            suggested_actions=_actions(job, kind, reason),
        ))
    return findings
