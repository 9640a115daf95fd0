"""check_throughput_held: a job whose steps got longer while it trains as many samples per second as its
previous run did — each step covers a bigger global batch, nothing slowed down."""

from __future__ import annotations

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.facts.queries import same_run_jobs
from tools.models.findings import Evidence, Finding
from tools.models.logs import ProgressEvent

__all__ = ["ThroughputConfig", "check_throughput_held"]


class ThroughputConfig(CheckConfig):
    """How close two runs' rates must be to call the speed unchanged."""

    same_within: float = 0.1
    """Relative difference of samples/s (or tokens/s) between the runs at or below which they run at
    the same speed."""
    longer_steps: float = 1.3
    """Step-time ratio (this run / the previous) from which the steps count as longer: what the asker saw."""


def _rate(p: ProgressEvent) -> tuple[float, str] | None:
    if p.samples_per_s:
        return p.samples_per_s, "samples/s"
    if p.tokens_per_s:
        return p.tokens_per_s, "tokens/s"
    return None


def check_throughput_held(facts: Facts, cfg: ThroughputConfig) -> list[Finding]:
    """healthy per job whose latest progress line prints a training rate within ``same_within`` of the
    previous run's (same user and job name or working directory), while its step time grew by
    ``longer_steps`` or its global batch changed: a slower step that does more work is not a slowdown.
    Runs whose rate fell are left to the checks that find why.

    Sources: job-log progress lines (HF Trainer log dicts, Megatron iteration lines, tqdm bars) and
    start banners (global batch); squeue/scontrol and sacct for which jobs belong to one run.
    """
    progress: dict[str, ProgressEvent] = {}
    for e in facts.job_events_of("progress"):
        if e.job and isinstance(e, ProgressEvent) and _rate(e) is not None:
            progress[e.job] = e
    batch = {s.job: s.global_batch for s in facts.job_logs if s.job and s.global_batch}
    findings: list[Finding] = []
    for job, now in sorted(progress.items()):
        rate, unit = _rate(now) or (0.0, "")
        for before_id in same_run_jobs(facts, job)[1:]:
            before = progress.get(before_id)
            then = _rate(before) if before else None
            if before is None or then is None or then[1] != unit or not _earlier(facts, before_id, job):
                continue
            if abs(rate - then[0]) > cfg.same_within * then[0]:
                continue
            steps = (now.step_time_s / before.step_time_s if now.step_time_s and before.step_time_s else None)
            batches = (batch.get(before_id), batch.get(job))
            grew = steps is not None and steps >= cfg.longer_steps
            if not grew and not (all(batches) and batches[0] != batches[1]):
                continue
            why = (f"; each step now covers a global batch of {batches[1]:,} instead of {batches[0]:,}"
                   if all(batches) and batches[0] != batches[1] else "")
            took = (f"its steps take {now.step_time_s:g} s instead of {before.step_time_s:g} s"
                    if steps is not None else "its step count per hour changed")
            findings.append(Finding(
                check="throughput_held", root_cause="healthy",
                message=f"job {job} trains {rate:,.1f} {unit}, as its previous run {before_id} did "
                        f"({then[0]:,.1f} {unit}): {took}{why} — the same speed, not a slowdown",
                culprits=[f"job:{job}"], strength="state", confidence=0.3,
                evidence=[log_evidence(now), log_evidence(before)]
                + [Evidence(text=f"job {j} global batch {b:,}", metric="job log") for j, b in
                   ((before_id, batches[0]), (job, batches[1])) if b]))
            break
    return findings


def _earlier(facts: Facts, before: str, now: str) -> bool:
    """Job ``before`` started before job ``now`` (squeue/scontrol or sacct start; else the lower job id,
    Slurm's submission order)."""
    def start(jid: str) -> float | None:
        j, a = facts.job(jid), facts.acct_job(jid)
        t = (j.start_time if j else None) or (a.start_time if a else None)
        return t.timestamp() if t else None
    b, n = start(before), start(now)
    if b is not None and n is not None:
        return b < n
    return before.isdigit() and now.isdigit() and int(before) < int(now)
