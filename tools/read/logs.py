"""Read tools over kernel logs and job logs: events counted, the first few quoted."""

from __future__ import annotations

from pydantic import BaseModel

from tools.read.context import ReadContext
from tools.read.paging import page, top_counts

__all__ = ["LogEventBrief", "LogEventsSummary", "get_kernel_events", "get_job_log_events"]


class LogEventBrief(BaseModel):
    """One event: where it is and what it says (text cut at 300 characters)."""

    file: str
    line: int
    kind: str
    node: str | None = None
    job: str | None = None
    rank: int | None = None
    text: str


class LogEventsSummary(BaseModel):
    """Counts by kind and by node/job, and at most ``limit`` events."""

    total: int
    by_kind: dict[str, int]
    by_subject: dict[str, int]
    """Events per node or job: the 20 most, the rest summed as ``other``."""
    events: list[LogEventBrief]
    truncated: bool
    next: str | None = None
    """Cursor of the next page (pass it back as ``more``); None when this is the last."""


def _cut(s: str) -> str:
    return s if len(s) <= 300 else s[:299] + "…"


def get_kernel_events(ctx: ReadContext, *, node: str | None = None, kind: str | None = None,
                      limit: int = 20, more: str | None = None) -> LogEventsSummary:
    """Kernel log events (dmesg: NVRM Xid, fallen off the bus, Lustre, OOM killer, IB link) by node
    and kind; ``limit`` 1–100 (a page stops short of 10,000 characters; ``next`` -> ``more``)."""
    limit = max(1, min(limit, 100))
    evs = [e for e in ctx.facts.kernel_events if (node is None or e.node == node) and (kind is None or e.kind == kind)]
    shown, nxt = page(evs, limit=limit, more=more, brief=lambda e: LogEventBrief(
        file=e.file, line=e.line, kind=e.kind, node=e.node, text=_cut(e.message)))
    return LogEventsSummary(
        total=len(evs), by_kind=top_counts(e.kind for e in evs), by_subject=top_counts(e.node or "?" for e in evs),
        events=shown, truncated=nxt is not None, next=nxt)


def get_job_log_events(ctx: ReadContext, *, job: str | None = None, kind: str | None = None,
                       limit: int = 20, more: str | None = None) -> LogEventsSummary:
    """Job log events (NCCL, CUDA OOM, tracebacks, checkpoint save/load, NaN loss, Slurm messages)
    by job and kind; ``limit`` 1–100 (a page stops short of 10,000 characters; ``next`` -> ``more``)."""
    limit = max(1, min(limit, 100))
    evs = [e for e in ctx.facts.job_log_events if (job is None or e.job == job) and (kind is None or e.kind == kind)]
    shown, nxt = page(evs, limit=limit, more=more, brief=lambda e: LogEventBrief(
        file=e.file, line=e.line, kind=e.kind, job=e.job, rank=e.rank, text=_cut(e.message)))
    return LogEventsSummary(
        total=len(evs), by_kind=top_counts(e.kind for e in evs), by_subject=top_counts(e.job or "?" for e in evs),
        events=shown, truncated=nxt is not None, next=nxt)
