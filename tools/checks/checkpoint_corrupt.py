"""check_checkpoint_load_failure: a job cannot resume because its newest checkpoint is unreadable."""

from __future__ import annotations

from tools.checks.base import CheckConfig, job_culprits, log_evidence
from tools.facts import Facts
from tools.facts.queries import job_state, newest_checkpoint, same_run_jobs
from tools.knowledge.checkpoints import loader_refused
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Finding
from tools.platform import log_owner
from tools.models.logs import CheckpointEvent, JobLogEventBase

__all__ = ["CheckpointConfig", "check_checkpoint_load_failure"]


class CheckpointConfig(CheckConfig):
    """No thresholds: one failed load is enough."""

    min_failures: int = 1


def _ckpt_path(ev: JobLogEventBase) -> str | None:
    return ev.path if isinstance(ev, CheckpointEvent) else None


def check_checkpoint_load_failure(facts: Facts, cfg: CheckpointConfig) -> list[Finding]:
    """checkpoint_corrupt per job whose log shows a checkpoint that fails to load (truncated zip,
    unexpected EOF, state_dict mismatch). Proposes resubmitting from the newest *other* checkpoint
    the log says was saved.

    Sources: job-log events checkpoint_load_failure and checkpoint_saved (fields path, step).
    """
    findings: list[Finding] = []
    jobs = {e.job for e in facts.job_events_of("checkpoint_load_failure")}
    for job in sorted(j for j in jobs if j):
        events = facts.job_events(job)
        # A file the loader refuses (a state_dict that does not match the model, torch >= 2.6's weights_only
        # default rejecting a pickled class) is the code's or the environment's: an older checkpoint fails alike.
        failures = [e for e in events if e.kind == "checkpoint_load_failure" and not loader_refused(e.message)]
        if len(failures) < cfg.min_failures:
            continue
        run = set(same_run_jobs(facts, job))
        wrote_badly = any(e.kind == "checkpoint_write_failure" for j in run for e in facts.job_events(j))
        # newest_checkpoint skips what a failed load names itself (a pointer such as ``latest``: the save behind it)
        bad: set[str] = set()
        if not any(_ckpt_path(e) for e in failures) and not wrote_badly:
            # Nothing names the broken file: a resume loads the newest save, so that one is suspect.
            newest = newest_checkpoint(facts, job)
            bad = {newest} if newest else set()
        newest_good = newest_checkpoint(facts, job, bad=bad)
        # A copy of the run already queued would load the same broken checkpoint: hold it until it is fixed.
        queued = [j for j in run if j != job and job_state(facts, j) == "PENDING"]
        # The job of the run that saved the broken checkpoint (its newest save is not the good one) lost it.
        writers = [j for j in run if j != job and (saved := [e.path for e in facts.job_events(j)
                                                             if e.kind == "checkpoint_saved" and getattr(e, "path", None)])
                   and saved[-1] != newest_good and newest_good not in saved[-1:]]
        findings.append(Finding(
            check="checkpoint_load_failure", root_cause="checkpoint_corrupt",
            message=f"job {job}: {len(failures)} checkpoint load failure(s)"
            + (f"; older checkpoint {newest_good} was saved" if newest_good else ""),
            culprits=job_culprits([job, *writers[-1:]]),
            evidence=[log_evidence(e) for e in failures[:3]],
            strength="symptom", confidence=confidence("symptom", corroborated=True),
            # A Kubernetes pod restarts by itself onto the same file: its owner points it at the older checkpoint.
            suggested_actions=[log_owner(facts, job, "newest checkpoint is corrupt (truncated): resume from "
                                         + (newest_good or "an older verified one"))[1]] if "/" in job else
            [ActionSpec(type="resubmit_from_checkpoint", job=job, checkpoint=newest_good,
                        reason="newest checkpoint is corrupt; resume from an older verified one")]
            + [a for q in queued[:3] for a in (
                ActionSpec(type="hold_job", job=q, reason=f"queued resume of job {job} would load the same corrupt checkpoint"),
                ActionSpec(type="notify_owner", job=q, reason="held: it would resume from the corrupt checkpoint; point "
                           "it at " + (newest_good or "an older verified checkpoint") + ", then release it"))],
        ))
    return findings
