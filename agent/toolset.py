"""The read tools as the model sees them: thin wrappers over tools.read, one per tool.

Each wrapper's docstring is the tool description sent to the model, so it states units and bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import Field
from pydantic_ai import FunctionToolset, ModelRetry, RunContext

from agent.deps import WardenDeps
from tools import read
from tools.read.cost import GpuHoursLost
from tools.read.coverage import EvidenceCoverage
from tools.read.findings import FindingsSummary
from tools.read.gpu import GpuSummary
from tools.read.k8s import K8sKind, K8sObjectsSummary
from tools.read.logs import LogEventsSummary
from tools.read.lustre import LustreSummary
from tools.read.overview import ClusterOverview
from tools.read.slurm import AcctSummary, JobsSummary, NodesSummary, PendingJobsSummary

__all__ = ["read_toolset", "TOOL_NAMES"]

# Bounds live in the JSON schema the model is given (minimum/maximum, maxItems, maxLength), so an
# out-of-range argument is refused by validation and returned to the model as a retry, not clamped.
Limit100 = Annotated[int, Field(ge=1, le=100)]
Limit50 = Annotated[int, Field(ge=1, le=50)]
Name = Annotated[str, Field(max_length=200)]

read_toolset: FunctionToolset[WardenDeps] = FunctionToolset()
T = TypeVar("T")


def _call(ctx: RunContext[WardenDeps], name: str, fn: Callable[..., T], **kwargs: Any) -> T:
    """``ctx.deps.call``; a read tool's ValueError (an argument it refuses, such as a ``more`` that is
    not a cursor) goes back to the model as a retry naming the argument instead of ending the run."""
    try:
        return ctx.deps.call(name, fn, **kwargs)
    except ValueError as e:
        raise ModelRetry(str(e)) from e


@read_toolset.tool
def get_cluster_overview(ctx: RunContext[WardenDeps]) -> ClusterOverview:
    """Which raw outputs were collected (by format id), node and job counts by state, event counts. Start here."""
    return _call(ctx, "get_cluster_overview", read.get_cluster_overview)


@read_toolset.tool
def get_findings(ctx: RunContext[WardenDeps], limit: Limit50 = 15, culprit: Name | None = None,
                 more: Name | None = None) -> FindingsSummary:
    """Run Warden's deterministic checks over all evidence. Each finding has root_cause, culprits
    (node:/job:/fs:/user:/pod:), evidence (file:line or metric with unit), confidence 0–1 and suggested
    actions. Most confident first; limit 1–50. `culprit` keeps only findings about one job, node or
    pod (e.g. "job:4242", "4242", "gpu017") — use it for what the question names. A long list comes in
    pages: pass a result's `next` as `more` for the next one."""
    return _call(ctx, "get_findings", read.get_findings, limit=limit, culprit=culprit, more=more)


@read_toolset.tool
def get_evidence_coverage(ctx: RunContext[WardenDeps], subjects: list[str] | None = None) -> EvidenceCoverage:
    """What was read (records per evidence family), what could not be read and why, and for each of
    `subjects` (at most 10 job ids / node / pod names from the question) whether it is known and its state.
    Call it before answering healthy: healthy needs the evidence to have been read."""
    return _call(ctx, "get_evidence_coverage", read.get_evidence_coverage, subjects=subjects)


@read_toolset.tool
def get_jobs(ctx: RunContext[WardenDeps], job_id: Name | None = None, user: Name | None = None,
             state: Name | None = None, node: Name | None = None, limit: Limit100 = 20,
             more: Name | None = None) -> JobsSummary:
    """Jobs in the Slurm queue filtered by job id, user, state (PENDING, RUNNING, ...) or node; counts
    by state plus at most `limit` (1–100) jobs with elapsed/time limit in seconds. Paged: pass `next` as `more`."""
    return _call(ctx, "get_jobs", read.get_jobs, job_id=job_id, user=user, state=state, node=node, limit=limit,
                         more=more)


@read_toolset.tool
def get_pending_jobs(ctx: RunContext[WardenDeps], partition: Name | None = None, limit: Limit100 = 20,
                     more: Name | None = None) -> PendingJobsSummary:
    """Pending jobs: counts per pending reason and the `limit` (1–100) longest waiting, with seconds
    pending. Paged: pass `next` as `more`."""
    return _call(ctx, "get_pending_jobs", read.get_pending_jobs, partition=partition, limit=limit, more=more)


@read_toolset.tool
def get_nodes(ctx: RunContext[WardenDeps], node: Name | None = None, unhealthy_only: bool = True,
              limit: Limit100 = 20, more: Name | None = None) -> NodesSummary:
    """Slurm nodes: counts by state; lists unhealthy nodes (DOWN, DRAIN, NOT_RESPONDING) with reasons,
    or one node by name. limit 1–100; paged: pass `next` as `more`."""
    return _call(ctx, "get_nodes", read.get_nodes, node=node, unhealthy_only=unhealthy_only, limit=limit, more=more)


@read_toolset.tool
def get_accounting(ctx: RunContext[WardenDeps], job_id: Name | None = None, state: Name | None = None,
                   limit: Limit100 = 20, more: Name | None = None) -> AcctSummary:
    """Accounting (sacct) job rows filtered by job id or final state (FAILED, TIMEOUT, OUT_OF_MEMORY, ...);
    limit 1–100; paged: pass `next` as `more`."""
    return _call(ctx, "get_accounting", read.get_accounting, job_id=job_id, state=state, limit=limit, more=more)


@read_toolset.tool
def get_kernel_events(ctx: RunContext[WardenDeps], node: Name | None = None, kind: Name | None = None,
                      limit: Limit100 = 20, more: Name | None = None) -> LogEventsSummary:
    """Kernel log events (kinds: xid, fallen_off_bus, gpu_ecc, lustre_error, oom_kill, ib_link, hung_task)
    by node; counts plus at most `limit` (1–100) events with file and line. Paged: pass `next` as `more`."""
    return _call(ctx, "get_kernel_events", read.get_kernel_events, node=node, kind=kind, limit=limit, more=more)


@read_toolset.tool
def get_job_log_events(ctx: RunContext[WardenDeps], job: Name | None = None, kind: Name | None = None,
                       limit: Limit100 = 20, more: Name | None = None) -> LogEventsSummary:
    """Job log events (kinds: nccl_timeout, nccl_remote_error, cuda_oom, traceback, checkpoint_saved,
    checkpoint_load_failure, checkpoint_write_failure, nan_loss, enospc, slurm_message) by job; limit 1–100.
    Paged: pass `next` as `more`."""
    return _call(ctx, "get_job_log_events", read.get_job_log_events, job=job, kind=kind, limit=limit, more=more)


@read_toolset.tool
def get_gpu_metrics(ctx: RunContext[WardenDeps], node: Name | None = None, limit: Limit100 = 20,
                    more: Name | None = None) -> GpuSummary:
    """Per-node GPU means from DCGM: utilisation %, SM clock MHz, temperature C, power W, framebuffer MiB,
    last Xid, clock-event reason bits; lowest utilisation first; limit 1–100; paged: pass `next` as `more`."""
    return _call(ctx, "get_gpu_metrics", read.get_gpu_metrics, node=node, limit=limit, more=more)


@read_toolset.tool
def get_lustre_stats(ctx: RunContext[WardenDeps], limit: Limit50 = 5) -> LustreSummary:
    """Lustre MDT metadata load (ops, ops/s), busiest jobs by job_stats, fullest OST/MDT (blocks and inodes); limit 1–50."""
    return _call(ctx, "get_lustre_stats", read.get_lustre_stats, limit=limit)


@read_toolset.tool
def get_gpu_hours_lost(ctx: RunContext[WardenDeps], job_ids: Annotated[list[Name], Field(min_length=1, max_length=50)]) -> GpuHoursLost:
    """GPU-hours lost by these jobs (GPUs x hours since their last checkpoint, else elapsed); at most 50 jobs."""
    return _call(ctx, "get_gpu_hours_lost", read.get_gpu_hours_lost, job_ids=job_ids)


@read_toolset.tool
def get_k8s_objects(ctx: RunContext[WardenDeps], kind: K8sKind, namespace: Name | None = None, node: Name | None = None,
                    only_problems: bool = True, limit: Limit100 = 20, more: Name | None = None) -> K8sObjectsSummary:
    """Kubernetes nodes, pods or events (kind: node | pod | event) by namespace or node. Nodes give Ready
    status, cordon, taints and nvidia.com/gpu capacity (found) vs allocatable (healthy) vs requested; pods
    give phase, node, owner, restarts, GPUs requested and problems (unschedulable, CrashLoopBackOff,
    ImagePullBackOff, OOMKilled); events give type, reason, message, count, age in seconds. only_problems
    keeps what is wrong (Warning events only); limit 1–100; paged: pass `next` as `more`."""
    return _call(ctx, "get_k8s_objects", read.get_k8s_objects, kind=kind, namespace=namespace, node=node,
                         only_problems=only_problems, limit=limit, more=more)


TOOL_NAMES = tuple(read_toolset.tools)
