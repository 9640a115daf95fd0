"""Read tool over Kubernetes objects: small summaries of nodes, pods or events, problems first."""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, Field

from tools.models.k8s import K8sEvent, K8sNode, K8sPod
from tools.read.context import ReadContext
from tools.read.paging import page, top_counts

__all__ = ["K8sKind", "K8sNodeBrief", "K8sPodBrief", "K8sEventBrief", "K8sObjectsSummary", "get_k8s_objects"]

K8sKind = Literal["node", "pod", "event"]
_TEXT = 200
_OK_WAITING = ("ContainerCreating", "PodInitializing")


def _clip(text: str | None) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split())
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "…"


class K8sNodeBrief(BaseModel):
    """One node: readiness, cordon, taints, GPUs advertised (capacity) vs healthy (allocatable)."""

    name: str
    ready: str | None
    """Ready condition status: True, False, Unknown."""
    reason: str | None = None
    """Ready condition reason and message when not Ready."""
    cordoned: bool = False
    taints: list[str] = Field(default_factory=list)
    gpu_capacity: int | None = None
    gpu_allocatable: int | None = None
    gpu_requested: int = 0
    """nvidia.com/gpu requested by unfinished pods bound to the node."""
    gpu_product: str | None = None
    problems: list[str] = Field(default_factory=list)


class K8sPodBrief(BaseModel):
    """One pod: phase, node, owner, restarts, GPUs requested, and what is wrong with it."""

    pod: str
    """``namespace/name``."""
    phase: str | None
    node: str | None = None
    owner: str | None = None
    """``Kind/name`` of the controller."""
    restarts: int = 0
    gpu_request: int = 0
    problems: list[str] = Field(default_factory=list)


class K8sEventBrief(BaseModel):
    """One event, message clipped to 200 chars; age_s is seconds before capture when known."""

    namespace: str | None
    object: str
    type: str | None
    reason: str | None
    message: str
    count: int
    age_s: float | None = None
    source: str | None = None


class K8sObjectsSummary(BaseModel):
    """Counts and at most ``limit`` objects of one kind; ``truncated`` when more matched."""

    kind: K8sKind
    total: int
    """Objects of this kind collected (before filters)."""
    matched: int
    counts: dict[str, int] = Field(default_factory=dict)
    """Nodes by Ready status, pods by phase, events by type."""
    nodes: list[K8sNodeBrief] = Field(default_factory=list)
    pods: list[K8sPodBrief] = Field(default_factory=list)
    events: list[K8sEventBrief] = Field(default_factory=list)
    truncated: bool = False
    next: str | None = None
    """Cursor of the next page (pass it back as ``more``); None when this is the last."""


def _node_brief(n: K8sNode, requested: int) -> K8sNodeBrief:
    problems = []
    if n.ready_status != "True":
        problems.append(f"Ready={n.ready_status or 'missing'}")
    if n.unschedulable:
        problems.append("cordoned")
    if n.capacity_gpu is not None and (n.allocatable_gpu or 0) < n.capacity_gpu:
        problems.append(f"{n.capacity_gpu - (n.allocatable_gpu or 0)} GPU(s) not allocatable")
    elif n.is_gpu_node and not n.allocatable_gpu:
        problems.append("GPU node advertises no nvidia.com/gpu")
    problems += [f"{c.type}={c.status}" for c in n.conditions if c.status == "True"]
    return K8sNodeBrief(
        name=n.name, ready=n.ready_status, cordoned=n.unschedulable,
        reason=_clip(f"{n.ready_reason}: {n.ready_message}") if n.ready_status != "True" and n.ready_reason else None,
        taints=[f"{t.key}:{t.effect}" for t in n.taints][:5], gpu_capacity=n.capacity_gpu,
        gpu_allocatable=n.allocatable_gpu, gpu_requested=requested, gpu_product=n.gpu_product, problems=problems,
    )


def _pod_brief(p: K8sPod) -> K8sPodBrief:
    problems = []
    if p.scheduled_status == "False":
        problems.append(_clip(f"unschedulable: {p.scheduled_message or p.scheduled_reason}") or "")
    if p.status_reason:
        problems.append(p.status_reason)
    for c in p.containers:
        if c.state == "waiting" and c.state_reason and c.state_reason not in _OK_WAITING:
            problems.append(f"{c.name}: {c.state_reason}")
        elif c.state == "terminated" and c.state_reason not in (None, "Completed"):
            problems.append(f"{c.name}: terminated {c.state_reason} (exit {c.exit_code})")
        if c.last_terminated_reason and c.last_terminated_reason != "Completed" and c.restart_count:
            problems.append(f"{c.name}: last exit {c.last_terminated_exit_code} ({c.last_terminated_reason}), "
                            f"{c.restart_count} restarts")
    if p.phase in ("Failed", "Unknown"):
        problems.append(f"phase {p.phase}")
    return K8sPodBrief(pod=p.ref, phase=p.phase, node=p.node, restarts=p.restarts, gpu_request=p.gpu_request,
                       owner=f"{p.owner_kind}/{p.owner_name}" if p.owner_kind else None, problems=problems[:4])


def _event_brief(e: K8sEvent, ctx: ReadContext) -> K8sEventBrief:
    age = (ctx.facts.captured_at - e.last_timestamp).total_seconds() if e.last_timestamp else e.last_seen_s
    return K8sEventBrief(namespace=e.namespace, object=f"{(e.object_kind or '?').lower()}/{e.object_name}",
                         type=e.type, reason=e.reason, message=_clip(e.message) or "", count=e.count,
                         age_s=round(age, 1) if age is not None else None,
                         source=", ".join(x for x in (e.source_component, e.source_host) if x) or None)


def get_k8s_objects(ctx: ReadContext, *, kind: K8sKind, namespace: str | None = None, node: str | None = None,
                    only_problems: bool = True, limit: int = 20, more: str | None = None) -> K8sObjectsSummary:
    """Kubernetes nodes, pods or events (``kind``: node | pod | event), filtered by namespace
    (pods, events) and node (nodes: that node; pods: bound to it; events: about it or from its
    kubelet). ``only_problems`` keeps NotReady/cordoned/GPU-short nodes, pods with a problem
    (unschedulable, CrashLoopBackOff, ImagePullBackOff, OOMKilled, ...) and Warning events.
    Nodes report nvidia.com/gpu capacity (GPUs found), allocatable (healthy) and requested by pods.
    Problem objects first; at most ``limit`` (1–100) items, a page stopping short of 10,000
    characters (``next`` is then the cursor to pass as ``more``); event messages clipped to 200 chars."""
    limit = max(1, min(limit, 100))
    kind = str(kind).lower().rstrip("s")  # type: ignore[assignment]  # "Pods" -> "pod"
    if kind not in ("node", "pod", "event"):
        raise ValueError(f"kind must be node, pod or event, not {kind!r}")
    facts = ctx.facts
    summary = K8sObjectsSummary(kind=kind, total=0, matched=0)
    if kind == "node":
        used = Counter()
        for p in facts.k8s_pods:
            if p.node and p.phase in ("Pending", "Running", "Unknown", None):
                used[p.node] += p.gpu_request
        briefs = [_node_brief(n, used[n.name]) for n in facts.k8s_nodes if not node or n.name == node]
        summary.total, summary.counts = len(facts.k8s_nodes), top_counts(n.ready_status or "?" for n in facts.k8s_nodes)
        briefs = [b for b in briefs if b.problems or not only_problems]
        briefs.sort(key=lambda b: (not b.problems, b.name))
        summary.matched = len(briefs)
        summary.nodes, summary.next = page(briefs, limit=limit, more=more)
    elif kind == "pod":
        pods = [p for p in facts.k8s_pods if (not namespace or p.namespace == namespace) and (not node or p.node == node)]
        summary.total, summary.counts = len(facts.k8s_pods), top_counts(p.phase or "?" for p in facts.k8s_pods)
        pbriefs = [_pod_brief(p) for p in pods]
        pbriefs = [b for b in pbriefs if b.problems or not only_problems]
        pbriefs.sort(key=lambda b: (not b.problems, -b.restarts, b.pod))
        summary.matched = len(pbriefs)
        summary.pods, summary.next = page(pbriefs, limit=limit, more=more)
    else:
        evs = [e for e in facts.k8s_events
               if (not namespace or (e.object_namespace or e.namespace) == namespace)
               and (not node or (e.object_kind == "Node" and e.object_name == node) or e.source_host == node)
               and (e.type == "Warning" or not only_problems)]
        summary.total, summary.counts = len(facts.k8s_events), top_counts(e.type or "?" for e in facts.k8s_events)
        seen: set[tuple] = set()
        ebriefs = []
        for e in evs:  # the same event recorded as API JSON and as a kubectl table counts once
            key = (e.object_kind, e.object_name, e.reason, e.message[:_TEXT])
            if key not in seen:
                seen.add(key)
                ebriefs.append(_event_brief(e, ctx))
        ebriefs.sort(key=lambda b: (b.type != "Warning", b.age_s if b.age_s is not None else 1e12))
        summary.matched = len(ebriefs)
        summary.events, summary.next = page(ebriefs, limit=limit, more=more)
    summary.truncated = summary.next is not None
    return summary
