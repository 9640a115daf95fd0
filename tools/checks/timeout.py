"""check_job_timeout_without_checkpoint: a job hit its time limit having saved nothing to resume from."""

from __future__ import annotations

from datetime import datetime

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.facts.queries import same_run_jobs
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.platform import resubmit_specs

__all__ = ["TimeoutConfig", "check_job_timeout_without_checkpoint"]


class TimeoutConfig(CheckConfig):
    """Minimum run time that makes the loss worth reporting."""

    min_elapsed_min: int = 30
    planned_save_min: int = 30
    """A save this close to the limit is the planned last save (``--signal=USR1@600`` and a trap): the job ended
    as designed. An older last save lost the work since it."""


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
        saves = [e for e in facts.job_events(job) if e.kind == "checkpoint_saved"]
        later = _resumed_later(facts, job) if job in logged else []
        lost = _lost_min(facts, job, saves)
        if (saves and lost is not None and lost <= cfg.planned_save_min) or (later and lost is None):
            # The limit ended a job that had just saved its work (or its run went on from a save): a segment of
            # a chained run, by design; said so that an asked-about TIMEOUT is explained, never a cause.
            findings.append(_by_design(job, evidence, saves, later))
            continue
        signal = next((s.time_signal for s in facts.job_logs if s.job == job and s.time_signal), None)
        every = _save_interval_min(saves)
        # Lost past the plan: the script asked for a signal to save on and no save came near the limit, or the
        # saves stopped well before it (more than 1.5 of their own cadence). Within one cadence of periodic
        # saves, the loss is what the job was built to risk.
        if saves and lost is not None and lost >= cfg.min_elapsed_min and (
                signal is not None or (every is not None and lost > 1.5 * every)):
            findings.append(_lost_since_save(facts, job, evidence, saves[-1], lost, signal))
            continue
        if saves or later:
            continue  # saved, but when against its end is unknown: nothing to claim either way
        if job not in logged:
            continue  # no log was read: whether it saved a checkpoint is unknown, not "nothing"
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


def _resumed_later(facts: Facts, job: str) -> list[str]:
    """Other jobs of the same run (same user and name or working directory) that logged resuming from a checkpoint."""
    others = set(same_run_jobs(facts, job)) - {job}
    return sorted({s.job for s in facts.job_logs if s.job in others and s.resumed}) if others else []


def _ended(facts: Facts, job: str) -> datetime | None:
    """When the job ended: sacct End, else squeue/scontrol EndTime, else its log's ``CANCELLED AT`` time."""
    a, j = facts.acct_job(job), facts.job(job)
    end = (a.end_time if a else None) or (j.end_time if j and (j.state or "") == "TIMEOUT" else None)
    if end is None:
        cancels = [e.timestamp for e in facts.job_events(job)
                   if e.kind == "slurm_message" and e.timestamp and "time limit" in e.message.lower()]
        end = max(cancels) if cancels else None
    return end


def _lost_min(facts: Facts, job: str, saves: list) -> float | None:
    """Minutes between the job's last timed save and its end (None when either is unknown)."""
    timed = [e.timestamp for e in saves if e.timestamp]
    if not timed:
        return None
    end = _ended(facts, job)
    return (end - max(timed)).total_seconds() / 60 if end else None


def _save_interval_min(saves: list) -> float | None:
    """The median minutes between the job's timed saves (None with fewer than two)."""
    times = sorted(e.timestamp for e in saves if e.timestamp)
    gaps = sorted((b - a).total_seconds() / 60 for a, b in zip(times, times[1:]))
    return gaps[len(gaps) // 2] if gaps else None


def _lost_since_save(facts: Facts, job: str, evidence: list[Evidence], last: object, lost: float,
                     signal: str | None) -> Finding:
    path = getattr(last, "path", None)
    reason = f"time limit reached {lost:.0f} min after its last checkpoint"
    return Finding(
        check="job_timeout_without_checkpoint", root_cause="timeout_without_checkpoint",
        message=f"job {job} reached its time limit {lost:.0f} min after its last checkpoint"
                f"{f' ({path})' if path else ''}: the work since it is lost ("
                + (f"its script asked for --signal={signal} and no save followed: the program never received it, "
                   "or has no handler" if signal else "its saves had stopped") + ")",
        culprits=[f"job:{job}"], evidence=evidence[:2] + [log_evidence(last)], strength="state",  # type: ignore[arg-type]
        confidence=confidence("state", corroborated=True),
        suggested_actions=resubmit_specs(facts, [job], [], reason) + [ActionSpec(
            type="notify_owner", job=job, reason=f"{reason}: save on the time-limit signal (sbatch --signal=B:USR1@<s> "
                                                 "reaches only the batch shell unless it traps and forwards it)")])


def _by_design(job: str, evidence: list[Evidence], saves: list, later: list[str]) -> Finding:
    last = saves[-1] if saves else None
    saved = f"saved a checkpoint{f' ({last.path})' if last is not None and getattr(last, 'path', None) else ''} " \
            "before its limit" if last is not None else "left a checkpoint its run resumed from"
    went_on = f"; job {later[0]} of the same run resumed from a checkpoint" if later else ""
    return Finding(
        check="job_timeout_without_checkpoint", root_cause="healthy",
        message=f"job {job} reached its time limit and {saved}{went_on}: a segment of a chained run ending as "
                "planned, nothing to resubmit",
        culprits=[f"job:{job}"], strength="state", confidence=0.3,
        evidence=evidence[:2] + [log_evidence(e) for e in saves[-1:]])
