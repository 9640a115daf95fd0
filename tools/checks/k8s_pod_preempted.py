"""check_k8s_pod_preempted: pods the kube-scheduler preempted for higher-priority pods (PriorityClass).

The scheduler evicts lower-priority pods to place a higher-priority one (``Preempted`` event: ``Preempted by
pod <uid> on node <node>``, older ``by <namespace>/<pod>``). A distributed training job then loses a worker;
its controller recreates it, and the new pod waits on ``Insufficient nvidia.com/gpu`` while the preemptors
hold the GPUs. That wait is the preemption's consequence, not a shortage to fix, and no node is at fault.
Source: Kubernetes docs, Pod Priority and Preemption; kube-scheduler's event reasons.
"""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import event_evidence, event_pod_key, pod_culprit
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Finding

__all__ = ["K8sPodPreemptedConfig", "check_k8s_pod_preempted"]

_ON_NODE = re.compile(r"\bon node (?P<node>[\w.-]{1,253})")


class K8sPodPreemptedConfig(CheckConfig):
    """How many preempted pods to name."""

    max_pods: int = 8


_KUEUE_PREEMPTED = re.compile(r"Preempted to accommodate a workload|preempted (?:in|by) (?:the )?(?:ClusterQueue|cohort)",
                              re.IGNORECASE)
"""Kueue's eviction of an admitted workload (``Preempted to accommodate a workload (UID: …) due to reclamation within
the cohort``): the job is suspended and requeued, its pods deleted — the queue's policy, not a fault."""
_DELETED_POD = re.compile(r"Deleted pod: (?P<pod>[a-z0-9][a-z0-9.-]{0,252})")


def _queue_preempted(facts: Facts) -> list[Finding]:
    """job_preempted per job (PyTorchJob, Job, RayJob …) that Kueue preempted: the event on the job object itself
    (reason ``Stopped`` / ``Preempted`` with Kueue's message). Its owner is told through its first deleted pod."""
    out: list[Finding] = []
    for e in facts.k8s_events:
        if e.object_kind in (None, "Pod", "Workload", "Node") or not e.object_name or not _KUEUE_PREEMPTED.search(e.message):
            continue
        ns = e.object_namespace or e.namespace or "default"
        job = f"{ns}/{e.object_name}"
        if any(f"job:{job}" in f.culprits for f in out):
            continue
        deleted = [m["pod"] for d in facts.k8s_events if (d.object_name == e.object_name and (d.reason or "")
                   == "SuccessfulDeletePod") for m in [_DELETED_POD.search(d.message)] if m]
        out.append(Finding(
            check="k8s_pod_preempted", root_cause="job_preempted",
            message=f"{e.object_kind} {job} was preempted by its queue (Kueue): {e.message[:160]}; it is suspended and "
                    "requeued, its pods deleted — the queue's policy (borrowed quota reclaimed or a higher priority), "
                    "not a node or network fault",
            culprits=[f"job:{job}"], evidence=[event_evidence(e)], strength="state", confidence=confidence("state"),
            suggested_actions=[ActionSpec(type="notify_owner", pod=deleted[0], namespace=ns,
                                          reason="preempted by its queue and requeued: it resumes when quota frees; "
                                          "resume from its last checkpoint")] if deleted else []))
    return out


def check_k8s_pod_preempted(facts: Facts, cfg: K8sPodPreemptedConfig) -> list[Finding]:
    """job_preempted for the pods Kubernetes events say were preempted; culprits the pods (and their workload's
    recreated pod when it is Pending again), no action — a priority decision, not a fault to repair.

    Sources: Kubernetes events (reason ``Preempted``, core/v1 or events.k8s.io/v1), pods (phase, scheduling
    message).
    """
    hits = [e for e in facts.k8s_events if e.reason == "Preempted" and e.object_kind in (None, "Pod")]
    if not hits:
        return _queue_preempted(facts)
    pods = list(dict.fromkeys(event_pod_key(facts, e) for e in hits))
    nodes = sorted({m["node"] for e in hits if (m := _ON_NODE.search(e.message))})
    pending = [p for p in facts.k8s_pods if (p.namespace, p.name) in set(pods) and p.phase == "Pending"]
    return [Finding(
        check="k8s_pod_preempted", root_cause="job_preempted",
        message=f"{len(pods)} pod(s) preempted by higher-priority pods" + (f" on {', '.join(nodes[:3])}" if nodes else "")
                + (f"; {len(pending)} recreated and Pending while the preemptors hold the GPUs" if pending else "")
                + ": a PriorityClass decision, not a fault (raise the job's priority or reserve capacity for it)",
        culprits=[pod_culprit(k) for k in pods[: cfg.max_pods]],
        evidence=[event_evidence(e) for e in hits[:3]],
        strength="state", confidence=confidence("state", corroborated=bool(pending)),
        suggested_actions=[],
    )]
