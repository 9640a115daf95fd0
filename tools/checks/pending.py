"""check_job_pending_blocked: pending jobs that will not start soon, and why."""

from __future__ import annotations

from datetime import timedelta

from tools.checks.base import CheckConfig
from tools.checks.gpu_peers import utilisation
from tools.facts import Facts
from tools.facts.queries import same_job_name
from tools.knowledge.precedence import confidence
from tools.knowledge.scheduler import is_held, is_preempted_requeue
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.slurm import SlurmJob, SlurmQos

__all__ = ["PendingConfig", "check_job_pending_blocked", "BLOCKING", "QUEUE_ORDER"]

QUEUE_ORDER = ("Priority", "Resources", "None", "BurstBufferResources", "BurstBufferStageIn")
"""Reasons that mean "waiting its turn" (for nodes, for a burst buffer's space or stage-in): normal until the
wait is long. BeginTime (the owner asked
for a later start) and Dependency (waiting for another job to finish, however long it runs) wait
by design, like a hold, and are not reported; a dependency that can no longer be met shows as
DependencyNeverSatisfied, which blocks."""
BLOCKING = (
    "ReqNodeNotAvail", "ReservationDeleted", "QOS", "Assoc", "PartitionTimeLimit", "PartitionNodeLimit", "PartitionConfig",
    "PartitionDown", "PartitionInactive", "NodeDown", "BadConstraints", "DependencyNeverSatisfied",
    "InvalidQOS", "InvalidAccount", "MaxGRES", "MaxCpu", "MaxNode", "MaxJobs", "MaxSubmit", "GrpTRES", "Licenses",
)
"""Reason prefixes/fragments that block a job until something changes (squeue %r). A job held by
its user or an admin (JobHeldUser/JobHeldAdmin) waits by someone's choice and is not reported, as
does one whose requested reservation has not started yet (Reason=Reservation); one whose
reservation is gone (ReservationDeleted) is held by slurmctld and reported by job_held. Licenses: every token of a license the job asks for
(``-L fluent:4``) is held by running jobs; free nodes do not help until one ends."""
NEVER_AS_SUBMITTED = (
    "PartitionTimeLimit", "PartitionNodeLimit", "PartitionConfig", "BadConstraints", "DependencyNeverSatisfied",
    "InvalidQOS", "InvalidAccount", "PerJob",
)
"""Reasons that cannot clear while the job stays as submitted (it asks for more than the partition has
or allows, or names what does not exist; a QOS/association ``…PerJob…`` limit it exceeds on its own): reported at
once, without waiting ``blocked_after_min``."""
_PER_USER = ("peruser", "assoc")
"""Limits counted over the user's (or association's) jobs: the user's other work is the cause."""


def _usage_cap(reason: str) -> bool:
    """A limit on the user's or association's running total, which clears as their other jobs end."""
    low = reason.lower().replace(" ", "")
    return any(p in low for p in _PER_USER) and "perjob" not in low


class PendingConfig(CheckConfig):
    """How long a wait is too long."""

    blocked_after_min: int = 10
    """A blocking reason is reported after this many minutes pending."""
    queue_wait_after_h: float = 6.0
    """A Priority/Resources wait is reported only after this many hours."""
    begin_notice_h: float = 6.0
    """A BeginTime wait is reported when the begin time lies this far past the submission: a clock time
    given to ``--begin`` that had already passed that day means the same time the next day."""


def _blocking(reason: str) -> bool:
    return any(b.lower() in reason.lower() for b in BLOCKING)


def _qos_actions(job: SlurmJob, reason: str, qos: SlurmQos | None) -> list[ActionSpec] | None:
    """update_job to the job's QOS per-job limit (sacctmgr show qos) that its reason names, or None when the
    limit is not known: ``QOSMaxNodePerJobLimit`` -> MaxTRES node, ``QOSMaxWallDurationPerJobLimit`` -> MaxWall."""
    low = reason.lower()
    if qos is None or not low.startswith("qos") or "perjob" not in low:
        return None
    printed = qos.max_tres_per_job.get("node", "")
    nodes = int(printed) if printed.isdigit() else None
    if "maxnode" in low and nodes and job.num_nodes and job.num_nodes > nodes:
        return [ActionSpec(type="update_job", job=job.job_id, num_nodes=nodes,
                           reason=f"ask for no more nodes than QOS {qos.name} allows a job (MaxTRES node={nodes})")]
    if "wallduration" in low and qos.max_wall_s and (job.time_limit_s or 0) > qos.max_wall_s:
        return [ActionSpec(type="update_job", job=job.job_id, time_limit_min=qos.max_wall_s // 60,
                           reason=f"ask for no more time than QOS {qos.name} allows a job (MaxWall)")]
    return None


def _actions(job: SlurmJob, reason: str, partition_nodes: int | None = None,
             partition_time_s: int | None = None, qos: SlurmQos | None = None) -> list[ActionSpec]:
    low = reason.lower()
    if (by_qos := _qos_actions(job, reason, qos)) is not None:
        return by_qos
    if "partitiontimelimit" in low.replace(" ", ""):
        fit = partition_time_s // 60 if partition_time_s and (job.time_limit_s or 0) > partition_time_s else None
        return [ActionSpec(type="update_job", job=job.job_id, time_limit_min=fit,
                           reason="ask for no more time than the partition allows")]
    if "reserved for" in low or "maint" in low or "timelimit" in low.replace(" ", "") or "wallduration" in low \
            or "maxwall" in low:
        # Only the owner knows whether the work fits a shorter limit or can wait for the window to pass.
        return [ActionSpec(type="update_job", job=job.job_id,
                           reason="shorten the time limit so the job ends before the reservation starts"),
                ActionSpec(type="notify_owner", job=job.job_id,
                           reason=f"{reason}: the time limit runs into a reservation; shorten it or wait until after it")]
    if "nodelimit" in low.replace(" ", "") or "partitionconfig" in low.replace(" ", ""):
        fit = partition_nodes if partition_nodes and job.num_nodes and job.num_nodes > partition_nodes else None
        return [ActionSpec(type="update_job", job=job.job_id, num_nodes=fit,
                           reason="ask for no more nodes than the partition allows")]
    if "nodenotavail" in low.replace(" ", ""):
        # The job pins nodes that are down or drained (--nodelist / ReqNodeList): only its owner can
        # choose other nodes; update_job changes time limits and node counts, not node lists.
        return [ActionSpec(type="notify_owner", job=job.job_id,
                           reason="requested nodes are unavailable; change --nodelist/--exclude")]
    if low.startswith("licenses"):
        return []  # the tokens come back when their holders end; nothing to change on the job
    return [ActionSpec(type="notify_owner", job=job.job_id, reason=f"job blocked: {reason}")]


def _partition_size(facts: Facts, partition: str | None) -> int | None:
    """The most nodes a job may use in ``partition``: its JOB_SIZE limit, else the nodes the node list
    shows (None when unknown)."""
    if not partition:
        return None
    sizes = facts.cached("partition_sizes", lambda: _sizes(facts))
    return sizes.get(partition) or None


def _partition_time(facts: Facts, partition: str | None) -> int | None:
    """The partition's time limit in seconds as sinfo shows it (None when unknown or unlimited)."""
    if not partition:
        return None
    limits = facts.cached("partition_times", lambda: {p: n.partition_max_time_s for n in facts.nodes
                                                      for p in n.partitions if n.partition_max_time_s})
    return limits.get(partition)


def _sizes(facts: Facts) -> dict[str, int]:
    """Per partition: the job-size limit sinfo shows (JOB_SIZE), else the nodes it lists."""
    out: dict[str, int] = {}
    limits: dict[str, int] = {}
    for node in facts.nodes:
        for p in node.partitions:
            out[p] = out.get(p, 0) + 1
            if node.partition_max_nodes:
                limits[p] = min(limits.get(p, node.partition_max_nodes), node.partition_max_nodes)
    return {**out, **limits}


def check_job_pending_blocked(facts: Facts, cfg: PendingConfig) -> list[Finding]:
    """scheduler_wait per pending job that is blocked (reservation, QOS/association limit, nodes not
    available, partition limits) or has waited on Priority/Resources past ``queue_wait_after_h``.

    Sources: squeue / scontrol show job (state, reason, submit time, time limit, node count).
    """
    findings: list[Finding] = []
    for job in facts.jobs:
        if (job.state or "") != "PENDING" or not job.reason or is_held(job) or is_preempted_requeue(job):
            continue  # held and preempted jobs are job_held's and job_preempted's to explain
        waited = facts.captured_at - job.submit_time if job.submit_time else None
        reason = job.reason
        if reason == "Dependency" and "singleton" in (job.dependency or ""):
            if (single := _singleton_wait(facts, job)) is not None:
                findings.append(single)
            continue
        if reason == "BeginTime":
            if (late := _late_begin(facts, job, cfg)) is not None:
                findings.append(late)
            continue
        blocked = _blocking(reason)
        if blocked:
            permanent = any(r.lower() in reason.lower() for r in NEVER_AS_SUBMITTED)
            if not permanent and waited is not None and waited < timedelta(minutes=cfg.blocked_after_min):
                continue
            strength = "state"
        elif reason.split(",")[0].strip() in QUEUE_ORDER:
            if waited is None or waited < timedelta(hours=cfg.queue_wait_after_h):
                continue
            strength = "heuristic"
        else:
            continue
        wait_txt = f"{waited.total_seconds() / 3600:.1f} h" if waited is not None else "unknown time"
        limit = f", TimeLimit={job.time_limit_s // 60} min" if job.time_limit_s else ""
        qos = facts.qos_named(job.qos) if reason.lower().startswith("qos") else None
        findings.append(Finding(
            check="job_pending_blocked", root_cause="scheduler_wait",
            message=f"job {job.job_id} pending {wait_txt} with reason ({reason})"
            + (f" — blocked until something changes (threshold {cfg.blocked_after_min} min)" if blocked
               else f" (threshold {cfg.queue_wait_after_h} h)"),
            culprits=[f"job:{job.job_id}"] + ([f"user:{job.user}"] if job.user and any(
                p in reason.lower().replace(" ", "") for p in _PER_USER) else [])
            # A per-user cap is used up by the same user's running jobs: those are what holds it.
            + [f"job:{j}" for j in _holding_user_cap(facts, job, reason)],
            evidence=[Evidence(text=f"job {job.job_id} State=PENDING Reason={reason} NumNodes={job.num_nodes}{limit}",
                               metric="squeue")] + ([_qos_evidence(qos)] if qos else []),
            # Waiting its turn is the scheduler working as designed: explained, never a fault on its own.
            # A user's or association's usage cap reached (AssocGrpCpuLimit, QOSMaxJobsPerUserLimit) is the limit
            # working: it answers a question about that job or user, not a sweep of the cluster.
            strength=strength, confidence=confidence(strength, normal=strength == "heuristic",
                                                     informational=blocked and _usage_cap(reason)),
            suggested_actions=_actions(job, reason, _partition_size(facts, job.partition),
                                       _partition_time(facts, job.partition), qos),
        ))
    return findings


def _holding_user_cap(facts: Facts, job: SlurmJob, reason: str) -> list[str]:
    """The job's user's RUNNING jobs that hold a per-user QOS limit (QOSMaxGRESPerUser, QOSMaxJobsPerUserLimit …)
    while their GPUs sit idle (mean utilisation under 5 % on every node they hold: a forgotten salloc, a stuck
    session): those are what to end. Busy ones are the user's own work using the quota as meant; at most 6."""
    if not job.user or not reason.lower().replace(" ", "").startswith("qos") or "peruser" not in reason.lower():
        return []
    _, util = utilisation(facts)
    return [j.job_id for j in facts.jobs_of_user(job.user) if j.job_id != job.job_id and j.state == "RUNNING"
            and j.nodes and all(n in util and util[n] < _IDLE_UTIL_PCT for n in j.nodes)][:6]


_IDLE_UTIL_PCT = 5.0


def _singleton_wait(facts: Facts, job: SlurmJob) -> Finding | None:
    """scheduler_wait for a job held by ``--dependency=singleton``: it starts only when no other job of its user
    and name runs; names that job (often one the user forgot: an interactive session of the same name), its
    owner told. Answered when asked (a chained run's next segment waits like this by design)."""
    blockers = [j for j in facts.jobs_of_user(job.user) if j.job_id != job.job_id and j.name and job.name
                and same_job_name(j.name, job.name)
                and (j.state or "") in ("RUNNING", "SUSPENDED", "COMPLETING")] if job.user else []
    if not blockers:
        return None
    b = blockers[0]
    ran = f"has run {b.elapsed_s // 3600} h" if b.elapsed_s else "is running"
    limit = f" of its {b.time_limit_s // 3600} h limit" if b.time_limit_s else ""
    return Finding(
        check="job_pending_blocked", root_cause="scheduler_wait",
        message=f"job {job.job_id} waits on --dependency=singleton: job {b.job_id} of the same user and name "
                f"({max((job.name or '', b.name or ''), key=len)}) {ran}{limit}; it starts only when that job ends",
        culprits=[f"job:{job.job_id}", f"job:{b.job_id}"],
        evidence=[Evidence(text=f"job {job.job_id} State=PENDING Reason=Dependency Dependency={job.dependency}",
                           metric="scontrol"),
                  Evidence(text=f"job {b.job_id} {b.name} {b.state} RunTime={(b.elapsed_s or 0) // 3600} h", metric="squeue")],
        strength="state", confidence=confidence("state", informational=True),
        suggested_actions=[ActionSpec(type="notify_owner", job=b.job_id,
                                      reason=f"its run blocks job {job.job_id} (--dependency=singleton, same name)")])


def _qos_evidence(qos: SlurmQos) -> Evidence:
    limits = {"MaxTRES": ",".join(f"{k}={v}" for k, v in qos.max_tres_per_job.items()),
              "MaxTRESPU": ",".join(f"{k}={v}" for k, v in qos.max_tres_per_user.items()),
              "MaxJobsPU": qos.max_jobs_per_user, "MaxWall": f"{qos.max_wall_s // 60} min" if qos.max_wall_s else None}
    shown = " ".join(f"{k}={v}" for k, v in limits.items() if v) or "no per-job or per-user limit printed"
    return Evidence(text=f"sacctmgr show qos {qos.name}: {shown}", metric="sacctmgr")


def _late_begin(facts: Facts, job: SlurmJob, cfg: PendingConfig) -> Finding | None:
    """scheduler_wait for a job waiting for a begin time (StartTime of a BeginTime job) that lies more than
    ``begin_notice_h`` after its submission: as asked, but worth saying, with the begin time to change."""
    begin, submitted = job.start_time, job.submit_time
    if begin is None or submitted is None or begin - submitted < timedelta(hours=cfg.begin_notice_h):
        return None
    wait = begin - facts.captured_at
    rolled = begin.date() > submitted.date() and begin.time() <= submitted.time()
    return Finding(
        check="job_pending_blocked", root_cause="scheduler_wait",
        message=f"job {job.job_id} waits for its begin time {begin:%Y-%m-%d %H:%M} ({wait.total_seconds() / 3600:.1f} h "
                f"from now), submitted {submitted:%Y-%m-%d %H:%M}"
                + (": a --begin clock time already past at submission means the next day" if rolled else "")
                + "; nothing else holds it",
        culprits=[f"job:{job.job_id}"],
        evidence=[Evidence(text=f"job {job.job_id} State=PENDING Reason=BeginTime StartTime={begin:%Y-%m-%dT%H:%M:%S} "
                                f"SubmitTime={submitted:%Y-%m-%dT%H:%M:%S}", metric="scontrol")],
        strength="state", confidence=confidence("state", informational=True),
        suggested_actions=[ActionSpec(type="update_job", job=job.job_id, start_time="now",
                                      reason="start it now if the later begin time was not meant (owner to confirm)")],
    )
