"""GPU-hours lost: what the culprit jobs' failed or stalled work has cost so far."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from tools.facts import Facts
from tools.read.context import ReadContext

__all__ = ["JobCost", "GpuHoursLost", "get_gpu_hours_lost", "job_cost"]


class JobCost(BaseModel):
    """One job's lost GPU-hours and how they were computed."""

    job_id: str
    gpus: int
    hours: float
    gpu_hours: float
    basis: str
    """``since last checkpoint``, ``elapsed`` or ``unknown``."""


class GpuHoursLost(BaseModel):
    """Sum over jobs, and each job's share."""

    total_gpu_hours: float
    jobs: list[JobCost]


def _gpus(facts: Facts, job_id: str) -> int:
    j = facts.job(job_id)
    a = facts.acct_job(job_id)
    for n in (j.num_gpus if j else None, a.num_gpus if a else None):
        if n:
            return n
    nodes = (j.nodes if j else []) or (a.nodes if a else [])
    per_node = [facts.node(n).gpus_total for n in nodes if facts.node(n) and facts.node(n).gpus_total]
    return sum(per_node)


def _end(facts: Facts, job_id: str) -> datetime:
    a = facts.acct_job(job_id)
    return a.end_time if a and a.end_time else facts.captured_at


def job_cost(facts: Facts, job_id: str) -> JobCost:
    """GPU-hours a job lost: GPUs x hours since its last saved checkpoint (job log), else its elapsed
    run time (squeue/sacct), up to its end or the capture time."""
    gpus = _gpus(facts, job_id)
    end = _end(facts, job_id)
    saved = [e.timestamp for e in facts.job_log_events if e.job == job_id and e.kind == "checkpoint_saved" and e.timestamp]
    j = facts.job(job_id)
    a = facts.acct_job(job_id)
    if saved:
        hours, basis = max(0.0, (end - max(saved)).total_seconds() / 3600), "since last checkpoint"
    elif j and j.elapsed_s is not None:
        hours, basis = j.elapsed_s / 3600, "elapsed"
    elif a and a.elapsed_s is not None:
        hours, basis = a.elapsed_s / 3600, "elapsed"
    elif j and j.start_time:
        hours, basis = max(0.0, (end - j.start_time).total_seconds() / 3600), "elapsed"
    else:
        hours, basis = 0.0, "unknown"
    return JobCost(job_id=job_id, gpus=gpus, hours=round(hours, 2), gpu_hours=round(gpus * hours, 1), basis=basis)


def get_gpu_hours_lost(ctx: ReadContext, *, job_ids: list[str]) -> GpuHoursLost:
    """GPU-hours lost by the given jobs (at most 50): GPUs x hours since the last checkpoint, or x
    elapsed time when no checkpoint is known. Pending jobs lose nothing."""
    costs = [job_cost(ctx.facts, j) for j in job_ids[:50]
             if not (ctx.facts.job(j) and ctx.facts.job(j).state == "PENDING")]
    return GpuHoursLost(total_gpu_hours=round(sum(c.gpu_hours for c in costs), 1), jobs=costs)
