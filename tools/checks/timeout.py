"""check_job_timeout_without_checkpoint: a job hit its time limit having saved nothing to resume from."""

from __future__ import annotations

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.facts.queries import same_run_jobs
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["TimeoutConfig", "check_job_timeout_without_checkpoint"]


class TimeoutConfig(CheckConfig):
    """Minimum run time that makes the loss worth reporting."""

    min_elapsed_min: int = 30


def check_job_timeout_without_checkpoint(facts: Facts, cfg: TimeoutConfig) -> list[Finding]:
    """timeout_without_checkpoint per job that ended TIMEOUT (sacct) or was cancelled "DUE TO TIME
    LIMIT" (job log), with no checkpoint saved in its log.

    Sources: sacct job state and elapsed; squeue/scontrol job state (TIMEOUT shows there before
    accounting has it); job-log slurm_message and checkpoint_saved events.
    """
    timed_out: dict[str, list[Evidence]] = {}
    elapsed = {r.job_id: r.elapsed_s for r in facts.acct_jobs() if r.elapsed_s is not None}
    elapsed.update({j.job_id: j.elapsed_s for j in facts.jobs if j.elapsed_s and j.job_id not in elapsed})
    short = {j for j, s in elapsed.items() if s is not None and s < cfg.min_elapsed_min * 60}
    for r in facts.acct_jobs():
        if (r.state or "").startswith("TIMEOUT"):
            if r.job_id in short:
                continue
            timed_out.setdefault(r.job_id, []).append(Evidence(
                text=f"sacct: job {r.job_id} State=TIMEOUT Elapsed={(r.elapsed_s or 0) // 60} min "
                     f"Timelimit={(r.time_limit_s or 0) // 60} min", metric="sacct"))
    for j in facts.jobs:  # squeue/scontrol know the end state before accounting records it
        if (j.state or "") == "TIMEOUT" and j.job_id not in short and j.job_id not in timed_out:
            timed_out.setdefault(j.job_id, []).append(Evidence(
                text=f"job {j.job_id} JobState=TIMEOUT RunTime={(j.elapsed_s or 0) // 60} min "
                     f"TimeLimit={(j.time_limit_s or 0) // 60} min", metric="scontrol show job"))
    for e in facts.job_events_of("slurm_message"):
        if e.job and e.job not in short and "time limit" in e.message.lower():
            timed_out.setdefault(e.job, []).append(log_evidence(e))
    findings: list[Finding] = []
    logged = {s.job for s in facts.job_logs if s.job}
    for job, evidence in timed_out.items():
        if any(e.kind == "checkpoint_saved" for e in facts.job_events(job)):
            continue
        if job not in logged:
            continue  # no log was read: whether it saved a checkpoint is unknown, not "nothing"
        if _resumed_later(facts, job):
            continue  # the run's next job resumed from a checkpoint: this one saved it (the lines were not read)
        findings.append(Finding(
            check="job_timeout_without_checkpoint", root_cause="timeout_without_checkpoint",
            message=f"job {job} reached its time limit with no checkpoint saved: all its work is lost"
            + (f" (ran {elapsed[job] // 60} min; threshold {cfg.min_elapsed_min} min)" if elapsed.get(job) else ""),
            culprits=[f"job:{job}"], evidence=evidence[:3], strength="state",
            confidence=confidence("state", corroborated=len(evidence) >= 2),
            suggested_actions=[ActionSpec(type="notify_owner", job=job,
                                          reason="time limit reached without a checkpoint; add checkpointing or a longer limit")],
        ))
    return findings


def _resumed_later(facts: Facts, job: str) -> bool:
    """Another job of the same run (same user and name or working directory) logged resuming from a checkpoint."""
    others = set(same_run_jobs(facts, job)) - {job}
    return bool(others) and any(s.resumed for s in facts.job_logs if s.job in others)
