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
from tools.models.findings import Finding

__all__ = ["K8sPodPreemptedConfig", "check_k8s_pod_preempted"]

_ON_NODE = re.compile(r"\bon node (?P<node>[\w.-]{1,253})")


class K8sPodPreemptedConfig(CheckConfig):
    """How many preempted pods to name."""

    max_pods: int = 8


def check_k8s_pod_preempted(facts: Facts, cfg: K8sPodPreemptedConfig) -> list[Finding]:
    """job_preempted for the pods Kubernetes events say were preempted; culprits the pods (and their workload's
    recreated pod when it is Pending again), no action — a priority decision, not a fault to repair.

    Sources: Kubernetes events (reason ``Preempted``, core/v1 or events.k8s.io/v1), pods (phase, scheduling
    message).
    """
    hits = [e for e in facts.k8s_events if e.reason == "Preempted" and e.object_kind in (None, "Pod")]
    if not hits:
        return []
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
