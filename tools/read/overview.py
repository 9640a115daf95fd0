"""Read tool: what evidence exists and the cluster's shape at a glance."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from tools.read.context import ReadContext
from tools.read.paging import top_counts

__all__ = ["ClusterOverview", "get_cluster_overview"]


class ClusterOverview(BaseModel):
    """Counts only: sizes stay constant whatever the cluster size."""

    captured_at: str
    cluster: str | None
    artifacts_by_format: dict[str, int]
    nodes: int
    nodes_by_state: dict[str, int]
    jobs_by_state: dict[str, int]
    kernel_events: int
    job_log_events: int
    gpu_series: int


def get_cluster_overview(ctx: ReadContext) -> ClusterOverview:
    """Capture time (UTC), which raw outputs were collected (by format id), node and job counts by
    state, and how many kernel/job-log events and GPU series were parsed."""
    f = ctx.facts
    return ClusterOverview(
        captured_at=f.captured_at.isoformat(), cluster=f.cluster,
        artifacts_by_format=dict(Counter(a.format for a in f.artifacts)),
        nodes=len(f.nodes), nodes_by_state=top_counts("+".join([n.state or "UNKNOWN", *n.flags]) for n in f.nodes),
        jobs_by_state=top_counts(j.state or "UNKNOWN" for j in f.jobs),
        kernel_events=len(f.kernel_events), job_log_events=len(f.job_log_events), gpu_series=len(f.gpu_samples))
