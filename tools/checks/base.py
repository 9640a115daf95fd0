"""What every check shares: the signature, config base, and evidence helpers.

A check is ``def check_<subject>_<condition>(facts: Facts, cfg: <Config>) -> list[Finding]``. It
reads parsed facts only (never fetches), so replay runs it unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from tools.facts import Facts
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import JobLogEvent, KernelEvent

__all__ = [
    "CheckConfig",
    "CheckSpec",
    "kernel_evidence",
    "log_evidence",
    "affected_jobs",
    "resubmit_specs",
    "newest_checkpoint",
    "same_run_jobs",
    "job_culprits",
    "is_slurm_job_id",
    "kernel_event_time",
]

C = TypeVar("C", bound=BaseModel)


class CheckConfig(BaseModel):
    """Base of every check's arguments: validated, never evaluated; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class CheckSpec(Generic[C]):
    """A registered check: its function and the config model its arguments validate against."""

    fn: Callable[[Facts, C], list[Finding]]
    config: type[C]
    description: str


def _clip(text: str, n: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def kernel_evidence(ev: KernelEvent) -> Evidence:
    """Evidence citing a kernel log event (file and line)."""
    return Evidence(text=_clip(ev.message), file=ev.file, line=ev.line)


def log_evidence(ev: JobLogEvent) -> Evidence:
    """Evidence citing a job log event (file and line)."""
    prefix = f"[rank {ev.rank}] " if ev.rank is not None else ""
    return Evidence(text=_clip(prefix + ev.message), file=ev.file, line=ev.line)


_MONOTONIC = re.compile(r"^\[\s*(?P<s>\d+(?:\.\d+)?)\]$")


def kernel_event_time(facts: Facts, ev: KernelEvent) -> datetime | None:
    """When a kernel line was logged, as UTC (the snapshots' convention for zone-less times):
    ``dmesg -T`` / journalctl / ISO prefixes, or dmesg seconds since boot plus the node's
    BootTime; None when it cannot be told."""
    ts = (ev.timestamp or "").strip()
    m = _MONOTONIC.match(ts)
    if m:
        node = facts.node(ev.node or "")
        if not node or not node.boot_time:
            return None
        try:
            return node.boot_time + timedelta(seconds=float(m["s"]))
        except OverflowError:  # an absurd uptime in a damaged or hostile line
            return None
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


_ACTIVE = ("RUNNING", "COMPLETING", "SUSPENDED")
_ENDED_BADLY = ("FAILED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED")


def affected_jobs(facts: Facts, nodes: Iterable[str], *, since: datetime | None = None) -> list[str]:
    """Ids of jobs hurt by faults on ``nodes``: running there now, or ended badly there (sacct).

    ``since``, when the fault was first logged: a job that had already ended more than a minute
    before it (one cancelled there hours earlier) lost nothing to this fault and is left out.

    Sources: squeue/scontrol (allocation) and sacct (job rows, not steps). Order: as reported.
    """
    wanted = set(nodes)

    def ended_before(state: str, end: datetime | None) -> bool:
        return since is not None and end is not None and state not in _ACTIVE and end < since - timedelta(minutes=1)

    ids: list[str] = []
    for j in facts.jobs:
        state = j.state or ""
        if state in _ACTIVE + _ENDED_BADLY and wanted & set(j.nodes) and not ended_before(state, j.end_time):
            ids.append(j.job_id)
    for r in facts.acct:
        state = (r.state or "").split(" ")[0]
        if not r.is_step and state in _ACTIVE + _ENDED_BADLY and wanted & set(r.nodes) \
                and not ended_before(state, r.end_time) and r.job_id not in ids:
            ids.append(r.job_id)
    return ids


_SLURM_JOB_ID = re.compile(r"\d{1,12}(?:_\d{1,9})?")


def is_slurm_job_id(job_id: str) -> bool:
    """True for a Slurm job id (``4242``, array task ``4242_7``). Lustre job_stats name work by
    its jobid_var: with ``jobid_name=%e.%u`` or no Slurm job the id is ``procname.uid``
    (``rsync.1000``, ``dd.0``), a process, not a job anyone can notify or resubmit."""
    return bool(_SLURM_JOB_ID.fullmatch(job_id))


def job_culprits(job_ids: Iterable[str]) -> list[str]:
    """``job:<id>`` culprits for job ids, de-duplicated, order kept."""
    out: list[str] = []
    for j in job_ids:
        c = f"job:{j}"
        if c not in out:
            out.append(c)
    return out


def _home_like(path: str | None, user: str | None) -> bool:
    p = (path or "").rstrip("/")
    return not p or p in ("/root", "/tmp") or (user is not None and p.endswith(f"/{user}") and p.count("/") <= 2)


def same_run_jobs(facts: Facts, job_id: str) -> list[str]:
    """The job and the other jobs of the same training run: the same user and either the same job
    name or the same working directory (other than a home directory) in squeue/scontrol or sacct —
    a resubmission chain writes its checkpoints to one place."""
    def ident(jid: str) -> tuple[str | None, str | None, str | None]:
        j, a = facts.job(jid), facts.acct_job(jid)
        user = (j.user if j else None) or (a.user if a else None)
        name = (j.name if j else None) or (a.name if a else None)
        work = j.work_dir if j else None
        return user, name, None if _home_like(work, user) else work

    user, name, work = ident(job_id)
    ids = [job_id]
    if user:
        for jid in [j.job_id for j in facts.jobs] + [r.job_id for r in facts.acct if not r.is_step]:
            u, n, w = ident(jid)
            if jid not in ids and u == user and ((name and n == name) or (work and w == work)):
                ids.append(jid)
    return ids


def newest_checkpoint(facts: Facts, job_id: str, *, bad: Iterable[str] = ()) -> str | None:
    """The newest checkpoint saved by the job's training run (job-log checkpoint_saved events of
    the job and of earlier jobs of the same run), skipping paths in ``bad`` and paths that a
    checkpoint write failure names; None when no log names one."""
    run = set(same_run_jobs(facts, job_id))
    failed = [e.message for e in facts.job_log_events
              if e.job in run and e.kind in ("checkpoint_write_failure", "enospc")]
    skip = set(bad)
    saved = [e for e in facts.job_log_events
             if e.job in run and e.kind == "checkpoint_saved" and e.fields.get("path")
             and e.fields["path"] not in skip and not any(e.fields["path"] in m for m in failed)]
    if not saved:
        return None

    def order(e: JobLogEvent) -> tuple:
        step = e.fields.get("step")
        return (int(step) if step and step.isdigit() else -1, e.timestamp.timestamp() if e.timestamp else 0.0, e.line)

    return max(saved, key=order).fields["path"]


def resubmit_specs(facts: Facts, job_ids: Iterable[str], exclude_nodes: list[str], reason: str) -> list[ActionSpec]:
    """resubmit_from_checkpoint proposals for jobs whose work was lost on ``exclude_nodes``, each
    from its run's newest saved checkpoint; where no log names a checkpoint, the owner is told too
    (the resubmitted job starts over, which is the owner's call to make)."""
    out: list[ActionSpec] = []
    for j in job_ids:
        ckpt = newest_checkpoint(facts, j)
        out.append(ActionSpec(type="resubmit_from_checkpoint", job=j, exclude_nodes=sorted(exclude_nodes),
                              checkpoint=ckpt, reason=reason))
        if ckpt is None:
            out.append(ActionSpec(type="notify_owner", job=j,
                                  reason=f"{reason}; no saved checkpoint found in the job's logs"))
    return out
