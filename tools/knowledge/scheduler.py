"""Slurm scheduler facts Warden reads from job state and reasons: holds, preemption, reservations.

Source: the squeue(1) "JOB REASON CODES" and "JOB STATE CODES" lists, scontrol(1) (``Priority=0`` on a held
job, ``Reason=launch_failed_requeued_held``, ``Restarts=``), slurm.conf(5) ``PreemptMode`` (CANCEL,
REQUEUE, SUSPEND) and the slurmctld / slurmstepd preemption messages (``*** JOB 42 ON gpu01 CANCELLED AT …
DUE TO PREEMPTION ***``, ``preempted JobId=42``).
"""

from __future__ import annotations

from tools.models.slurm import SlurmJob

__all__ = ["HELD_REASONS", "SYSTEM_HOLDS", "is_held", "hold_kind", "is_preempted_requeue"]

SYSTEM_HOLDS = ("launch failed requeued held", "job requeued in held state", "requeued held", "jobholdmaxrequeue")
"""Holds Slurm itself places after a failed launch or a requeue (the job waits for a release): squeue(1)'s
JobHoldMaxRequeue is a batch job requeued MaxBatchRequeue times and held there."""
HELD_REASONS = ("JobHeldUser", "JobHeldAdmin", *SYSTEM_HOLDS)


def hold_kind(job: SlurmJob) -> str | None:
    """``system`` (held by Slurm after a failed launch or requeue), ``admin``, ``user``, ``constraints``
    (BadConstraints after a requeue: the job can never start as it stands), ``reservation`` (its reservation was
    deleted: slurmctld sets Priority=0 with ReservationDeleted until someone releases it), or None when not held."""
    if (job.state or "") in ("SPECIAL_EXIT", "REQUEUE_HOLD"):
        # squeue(1): SPECIAL_EXIT is a job requeued held because its exit code matched RequeueExitHold (or an
        # EpilogSlurmctld set it); REQUEUE_HOLD a held job being requeued. Both wait for `scontrol release`.
        return "system"
    if (job.state or "") != "PENDING":
        return None
    reason = (job.reason or "").lower().replace("_", " ")
    if any(h in reason or h in reason.replace(" ", "") for h in SYSTEM_HOLDS):
        return "system"
    if "jobheldadmin" in reason.replace(" ", ""):
        return "admin"
    if "jobhelduser" in reason.replace(" ", ""):
        return "user"
    if "badconstraints" in reason.replace(" ", "") and (job.restarts or 0) > 0:
        return "constraints"
    if "reservationdeleted" in reason.replace(" ", "") or ("reservation" in reason and "deleted" in reason):
        return "reservation"  # slurmctld holds (Priority=0) the jobs of a reservation that was deleted
    if job.priority == 0 and reason.replace(" ", "") in ("", "none", "priority"):
        return "admin"  # Priority=0 with no other reason: `scontrol hold` by someone
    return None


def is_held(job: SlurmJob) -> bool:
    """True when the job is held (see ``hold_kind``)."""
    return hold_kind(job) is not None


def is_preempted_requeue(job: SlurmJob) -> bool:
    """A pending job that preemption sent back to the queue (PreemptMode=REQUEUE): reason names it."""
    return (job.state or "") == "PENDING" and "preempt" in (job.reason or "").lower()
