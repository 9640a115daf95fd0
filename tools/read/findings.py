"""Read tool that runs the deterministic checks and returns their findings."""

from __future__ import annotations

from pydantic import BaseModel

from tools.models.findings import Finding
from tools.read.context import ReadContext
from tools.read.paging import page

__all__ = ["FindingsSummary", "get_findings"]


class FindingsSummary(BaseModel):
    """Findings of every check, most confident first, at most ``limit``."""

    total: int
    findings: list[Finding]
    truncated: bool
    next: str | None = None
    """Cursor of the next page (pass it back as ``more``); None when this is the last."""


def _about(f: Finding, subject: str) -> bool:
    """Whether a culprit of ``f`` is ``subject`` (``job:42``, ``42``, ``gpu017``, ``ns/pod`` or ``pod``)."""
    want = subject.lower()
    for c in f.culprits:
        name = c.split(":", 1)[-1].lower()
        if want in (c.lower(), name, name.rsplit("/", 1)[-1]):
            return True
    return False


def get_findings(ctx: ReadContext, *, limit: int = 15, culprit: str | None = None,
                 more: str | None = None) -> FindingsSummary:
    """Run all deterministic checks (Xid, interconnect, NCCL, stragglers, throttling, MDT load,
    storage, OOM, pending, node state, checkpoints, tracebacks, timeouts) over the collected
    evidence. Each finding has a root-cause id, culprits, evidence (file:line or metric), a
    confidence in [0, 1] and suggested actions. ``culprit`` keeps only findings about one job,
    node, pod or file system (``job:42``, ``42``, ``gpu017``); ``limit`` is 1–50, and a page stops
    short of 10,000 characters (``next`` then names the cursor to pass as ``more``)."""
    limit = max(1, min(limit, 50))
    found = ctx.findings
    if culprit:
        found = [f for f in found if _about(f, culprit)]
    shown, nxt = page(found, limit=limit, more=more)
    return FindingsSummary(total=len(found), findings=shown, truncated=nxt is not None, next=nxt)
