"""Read tools over Slurm: jobs, pending jobs, nodes and accounting — small summaries for a model."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from tools.read.context import ReadContext
from tools.read.paging import page, top_counts

__all__ = [
    "JobBrief", "JobsSummary", "PendingJobsSummary", "NodeBrief", "NodesSummary", "AcctBrief", "AcctSummary",
    "get_jobs", "get_pending_jobs", "get_nodes", "get_accounting",
]


class JobBrief(BaseModel):
    """A job in a few fields."""

    job_id: str
    name: str | None = None
    user: str | None = None
    partition: str | None = None
    state: str | None = None
    reason: str | None = None
    nodes: list[str] = Field(default_factory=list)
    num_gpus: int | None = None
    elapsed_s: int | None = None
    time_limit_s: int | None = None
    pending_s: int | None = None
    """Seconds since submission for pending jobs."""


class JobsSummary(BaseModel):
    """Counts by state over all matching jobs, and the first ``limit`` of them."""

    total: int
    by_state: dict[str, int]
    jobs: list[JobBrief]
    truncated: bool
    next: str | None = None
    """Cursor of the next page (pass it back as ``more``); None when this is the last."""


def _since(now: datetime, t: datetime | None) -> int | None:
    return int((now - t).total_seconds()) if t else None


def _brief(ctx: ReadContext, j) -> JobBrief:
    now = ctx.facts.captured_at
    return JobBrief(job_id=j.job_id, name=(j.name or "")[:80] or None, user=j.user, partition=j.partition,
                    state=j.state, reason=(j.reason or "")[:200] or None, nodes=j.nodes[:16], num_gpus=j.num_gpus, elapsed_s=j.elapsed_s,
                    time_limit_s=j.time_limit_s,
                    pending_s=_since(now, j.submit_time) if j.state == "PENDING" else None)


def get_jobs(ctx: ReadContext, *, job_id: str | None = None, user: str | None = None, state: str | None = None,
             node: str | None = None, limit: int = 20, more: str | None = None) -> JobsSummary:
    """Jobs in the queue (squeue / scontrol show job), filtered by job id, user, state or node.

    Returns counts by state over all matches and at most ``limit`` (1–100) jobs; node lists are
    cut at 16 entries and names at 80 characters; a page stops short of 10,000 characters
    (``next`` is then the cursor to pass as ``more``).
    """
    limit = max(1, min(limit, 100))
    jobs = [j for j in ctx.facts.jobs
            if (job_id is None or j.job_id == job_id) and (user is None or j.user == user)
            and (state is None or (j.state or "") == state.upper()) and (node is None or node in j.nodes)]
    shown, nxt = page(jobs, limit=limit, more=more, brief=lambda j: _brief(ctx, j))
    return JobsSummary(total=len(jobs), by_state=top_counts(j.state or "UNKNOWN" for j in jobs),
                       jobs=shown, truncated=nxt is not None, next=nxt)


class PendingJobsSummary(BaseModel):
    """Pending jobs grouped by reason, longest waits first."""

    total: int
    by_reason: dict[str, int]
    longest: list[JobBrief]
    next: str | None = None
    """Cursor of the next page (pass it back as ``more``); None when this is the last."""


def get_pending_jobs(ctx: ReadContext, *, partition: str | None = None, limit: int = 20,
                     more: str | None = None) -> PendingJobsSummary:
    """Pending jobs (squeue reason column), counts per reason (the 20 most) and the ``limit``
    (1–100) longest waiting; a page stops short of 10,000 characters (``next`` -> ``more``)."""
    limit = max(1, min(limit, 100))
    pend = [j for j in ctx.facts.jobs if j.state == "PENDING" and (partition is None or j.partition == partition)]
    pend.sort(key=lambda j: j.submit_time or ctx.facts.captured_at)
    shown, nxt = page(pend, limit=limit, more=more, brief=lambda j: _brief(ctx, j))
    return PendingJobsSummary(total=len(pend), by_reason=top_counts(j.reason or "None" for j in pend),
                              longest=shown, next=nxt)


class NodeBrief(BaseModel):
    """A node in a few fields."""

    name: str
    state: str
    reason: str | None = None
    partitions: list[str] = Field(default_factory=list)
    gpus_total: int | None = None
    gpus_used: int | None = None


class NodesSummary(BaseModel):
    """Counts by state and the nodes that are not healthy (down, drained, not responding) first."""

    total: int
    by_state: dict[str, int]
    nodes: list[NodeBrief]
    truncated: bool
    next: str | None = None
    """Cursor of the next page (pass it back as ``more``); None when this is the last."""


def get_nodes(ctx: ReadContext, *, node: str | None = None, unhealthy_only: bool = True, limit: int = 20,
              more: str | None = None) -> NodesSummary:
    """Nodes (sinfo / scontrol show node / sinfo -R). By default only unhealthy ones are listed
    (DOWN, DRAIN, NOT_RESPONDING, FAIL); counts cover all. ``limit`` is 1–100; a page stops short
    of 10,000 characters (``next`` -> ``more``)."""
    limit = max(1, min(limit, 100))
    reasons = {n: r.reason for r in ctx.facts.node_reasons for n in r.nodes}
    def state(n) -> str:
        return "+".join([n.state or "UNKNOWN", *n.flags])
    nodes = [n for n in ctx.facts.nodes if node is None or n.name == node]
    bad = [n for n in nodes if n.drained or n.not_responding or (n.state or "") in ("DOWN", "FAIL", "UNKNOWN")]
    shown = nodes if (node or not unhealthy_only) else bad
    briefs, nxt = page(shown, limit=limit, more=more, brief=lambda n: NodeBrief(
        name=n.name, state=state(n), reason=(n.reason or reasons.get(n.name) or "")[:200] or None,
        partitions=n.partitions[:8], gpus_total=n.gpus_total, gpus_used=n.gpus_used))
    return NodesSummary(total=len(nodes), by_state=top_counts(state(n) for n in nodes), nodes=briefs,
                        truncated=nxt is not None, next=nxt)


class AcctBrief(BaseModel):
    """An accounting row in a few fields."""

    job_id: str
    name: str | None = None
    user: str | None = None
    state: str | None = None
    exit_code: str | None = None
    elapsed_s: int | None = None
    nodes: list[str] = Field(default_factory=list)


class AcctSummary(BaseModel):
    """Finished and running jobs from accounting: counts by state and the matching rows."""

    total: int
    by_state: dict[str, int]
    rows: list[AcctBrief]
    truncated: bool
    next: str | None = None
    """Cursor of the next page (pass it back as ``more``); None when this is the last."""


def get_accounting(ctx: ReadContext, *, job_id: str | None = None, state: str | None = None,
                   limit: int = 20, more: str | None = None) -> AcctSummary:
    """Job rows (not steps) from sacct, filtered by job id or state (e.g. FAILED, TIMEOUT); ``limit``
    1–100; a page stops short of 10,000 characters (``next`` -> ``more``)."""
    limit = max(1, min(limit, 100))
    rows = [r for r in ctx.facts.acct if not r.is_step and (job_id is None or r.job_id == job_id)
            and (state is None or (r.state or "").startswith(state.upper()))]
    shown, nxt = page(rows, limit=limit, more=more, brief=lambda r: AcctBrief(
        job_id=r.job_id, name=(r.name or "")[:80] or None, user=r.user, state=r.state, exit_code=r.exit_code,
        elapsed_s=r.elapsed_s, nodes=r.nodes[:16]))
    return AcctSummary(total=len(rows), by_state=top_counts((r.state or "UNKNOWN").split()[0] for r in rows),
                       rows=shown, truncated=nxt is not None, next=nxt)
