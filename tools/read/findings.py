"""Read tool that runs the deterministic checks and returns their findings."""

from __future__ import annotations

from pydantic import BaseModel

from tools.checks import run_checks
from tools.models.findings import Finding
from tools.read.context import ReadContext

__all__ = ["FindingsSummary", "get_findings"]


class FindingsSummary(BaseModel):
    """Findings of every check, most confident first, at most ``limit``."""

    total: int
    findings: list[Finding]
    truncated: bool


def get_findings(ctx: ReadContext, *, limit: int = 15) -> FindingsSummary:
    """Run all deterministic checks (Xid, interconnect, NCCL, stragglers, throttling, MDT load,
    storage, OOM, pending, node state, checkpoints, tracebacks, timeouts) over the collected
    evidence. Each finding has a root-cause id, culprits, evidence (file:line or metric), a
    confidence in [0, 1] and suggested actions. ``limit`` is 1–50."""
    limit = max(1, min(limit, 50))
    found = run_checks(ctx.facts, ctx.checks)
    return FindingsSummary(total=len(found), findings=found[:limit], truncated=len(found) > limit)
