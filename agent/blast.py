"""Blast radius of one proposed action, computed from the evidence and the audit log.

The four numbers the Cedar policies compare against their limits (policies.PolicyRequest):

- ``warden_drained_last_hour``: nodes of the partition that Warden drained or cordoned in the last
  hour — executions recorded in the audit log, plus nodes the evidence shows drained with a
  ``warden:`` reason less than an hour before capture;
- ``partition_gpu_share_pct``: GPUs of the partition out of service (down or drained) including
  the target node, over all the partition's GPUs, percent (node counts when GPU counts are unknown);
- ``running_gpu_hours_killed``: GPUs x elapsed hours of running jobs the action ends (cancel,
  requeue, Kubernetes drain/evict cannot be measured from Slurm evidence and count 0);
- ``other_users_jobs_touched``: jobs of users other than the requester that the action stops,
  holds or changes.

Also here: the identity checks every target must pass before any policy sees it
(:func:`check_targets`): names of the expected shape (no hostlist ranges, spaces, shell or path
characters) that exist in the evidence, and checkpoints that the job's run (the job and earlier jobs with its user and name) logged saving.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from pydantic import BaseModel

from agent.audit import AuditLog
from tools.actions import ACTION_FACTS, WARDEN_PREFIX, actions_where
from tools.facts.queries import same_run_jobs
from tools.facts import Facts
from tools.models.findings import ActionSpec

__all__ = ["BlastRadius", "blast_radius", "check_targets", "resource_of", "DRAIN_ACTIONS", "NODE_RE", "JOB_RE"]

DRAIN_ACTIONS = actions_where(takes_out_of_service=True)
"""Actions that take a node out of service (drain_node, cordon_node, drain_k8s_node), from their facts."""
_KILLS = actions_where(kills_jobs=True, platform="slurm")
_TOUCHES_JOB = actions_where(touches_job=True)
NODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
"""A single node name: no hostlist brackets, commas, spaces or shell characters."""
JOB_RE = re.compile(r"^[0-9]{1,12}(?:_[0-9]{1,9})?$")
"""A Slurm job id, optionally an array task (``123_4``)."""
_DNS1123 = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
_CHECKPOINT_RE = re.compile(r"^/[A-Za-z0-9._/+-]{1,1000}$")


class BlastRadius(BaseModel):
    """What one action would affect (the PolicyRequest fields of the same names)."""

    partition: str | None = None
    warden_drained_last_hour: int = 0
    partition_gpu_share_pct: float = 0.0
    running_gpu_hours_killed: float = 0.0
    other_users_jobs_touched: int = 0


def resource_of(spec: ActionSpec) -> tuple[str, str]:
    """(Cedar resource type, id) of an action's target, from the action's declared resource kind."""
    kind = ACTION_FACTS[spec.type].resource
    if kind == "pod" or (spec.type == "notify_owner" and spec.pod and not spec.job):
        return "Pod", f"{spec.namespace or 'default'}/{spec.pod or ''}"
    if spec.type == "notify_owner" and spec.node and not spec.job:
        return "Node", spec.node  # the team that runs a server or service host (notify.node_owners)
    if kind == "node":
        return "Node", spec.node or ""
    return "Job", spec.job or ""


def check_targets(spec: ActionSpec, facts: Facts | None) -> list[str]:
    """Problems with an action's targets (empty when they are fine).

    A node or job must have the expected shape and, when Slurm evidence is present, exist in it;
    excluded nodes likewise; a checkpoint must be an absolute path of plain characters that the
    job's log reported saving. Cluster text can therefore never widen a target (``gpu[001-128]``),
    add arguments (``x,LD_PRELOAD=...``) or point at a path the evidence does not show.
    """
    problems: list[str] = []
    slurm = facts is not None and bool(facts.nodes or facts.jobs)
    kind, rid = resource_of(spec)
    if kind == "Node":
        if not NODE_RE.match(rid):
            problems.append(f"node {rid!r} is not a single node name")
        elif slurm and ACTION_FACTS[spec.type].platform == "slurm" and facts.node(rid) is None:
            problems.append(f"node {rid!r} is not in the evidence")
        elif (facts is not None and facts.k8s_nodes and ACTION_FACTS[spec.type].platform == "kubernetes"
              and rid not in {n.name for n in facts.k8s_nodes}):
            problems.append(f"Kubernetes node {rid!r} is not in the evidence")
    elif kind == "Job":
        if not JOB_RE.match(rid):
            problems.append(f"job {rid!r} is not a Slurm job id")
        elif slurm and facts.job(rid) is None and facts.acct_job(rid) is None:
            problems.append(f"job {rid!r} is not in the evidence")
    else:
        ns, _, pod = rid.partition("/")
        if not _DNS1123.match(ns) or not _DNS1123.match(pod):
            problems.append(f"pod {rid!r} is not namespace/name in DNS-1123 form")
    for n in spec.exclude_nodes:
        if not NODE_RE.match(n) or (slurm and facts.node(n) is None):
            problems.append(f"excluded node {n!r} is not a known single node name")
    if spec.checkpoint is not None:
        if not _CHECKPOINT_RE.match(spec.checkpoint) or ".." in spec.checkpoint.split("/"):
            problems.append(f"checkpoint {spec.checkpoint[:80]!r} is not a plain absolute path")
        elif facts is not None:
            run = set(same_run_jobs(facts, spec.job)) if spec.job else set()
            saved = {getattr(e, "path", None) for j in run for e in facts.job_events(j) if e.kind == "checkpoint_saved"}
            if spec.checkpoint not in saved:
                problems.append(f"checkpoint {spec.checkpoint!r} was not saved by job {spec.job}'s run per its logs")
    return problems


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


def _audit_drains(audit: AuditLog | None, partition: str | None, now: datetime) -> set[str]:
    if audit is None or partition is None:
        return set()
    since = _utc(now) - timedelta(hours=1)
    out = set()
    for r in audit.records():
        p = r.payload
        if (r.kind == "execution" and p.get("event") == "executed" and p.get("ok") and p.get("action") in DRAIN_ACTIONS
                and p.get("partition") == partition and _utc(r.ts) >= since and isinstance(p.get("node"), str)):
            out.add(p["node"])
    return out


def blast_radius(spec: ActionSpec, facts: Facts | None, *, requester: str, audit: AuditLog | None = None,
                 now: datetime | None = None) -> BlastRadius:
    """Compute the blast radius of ``spec`` (see the module docstring)."""
    now = _utc(now or datetime.now(timezone.utc))
    br = BlastRadius()
    if facts is None:
        return br
    node = facts.node(spec.node) if spec.node else None
    job = facts.job(spec.job) if spec.job else None
    br.partition = (node.partitions[0] if node and node.partitions else None) or (job.partition if job else None)
    if spec.type in DRAIN_ACTIONS and node is not None:
        members = [n for n in facts.nodes if br.partition in n.partitions] if br.partition else [node]
        recent = {n.name for n in members if n.drained and (n.reason or "").startswith(WARDEN_PREFIX)
                  and n.reason_time and _utc(facts.captured_at) - _utc(n.reason_time) <= timedelta(hours=1)}
        recent |= _audit_drains(audit, br.partition, now)
        recent.discard(node.name)
        br.warden_drained_last_hour = len(recent)
        out = {n.name for n in members if n.drained or (n.state or "").upper().startswith("DOWN") or n.not_responding}
        out |= recent | {node.name}
        if all(n.gpus_total for n in members):
            total = sum(n.gpus_total or 0 for n in members)
            down = sum(n.gpus_total or 0 for n in members if n.name in out)
        else:
            total, down = len(members), len([n for n in members if n.name in out])
        br.partition_gpu_share_pct = min(100.0, 100.0 * down / total) if total else 100.0
    if spec.type in _KILLS and job is not None and (job.state or "") in ("RUNNING", "COMPLETING"):
        gpus = job.num_gpus or sum((facts.node(n).gpus_total or 0) for n in job.nodes if facts.node(n))
        br.running_gpu_hours_killed = round(gpus * (job.elapsed_s or 0) / 3600, 2)
    if spec.type in _TOUCHES_JOB:
        owner = (job.user if job else None) or (facts.acct_job(spec.job).user if spec.job and facts.acct_job(spec.job) else None)
        br.other_users_jobs_touched = 1 if owner and owner != requester else 0
    return br
