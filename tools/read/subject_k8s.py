"""What the evidence says about one Kubernetes workload or pod the question names: its pods, their nodes, and
which of those nodes' GPU metrics could not be read because their metrics exporter is down. Shared by the
evidence-coverage read tool.

A node is counted unread only on positive evidence that its exporter is down — its DCGM exporter pod is not
running and ready, or Prometheus answers ``up == 0`` for it — while other nodes' GPU metrics were read; a node
nobody collected is not a gap. (dcgm-exporter runs as a DaemonSet, one pod per GPU node, and needs the kubelet's
pod-resources socket: NVIDIA/dcgm-exporter's Kubernetes docs.)
"""

from __future__ import annotations

from collections import Counter

from tools.facts import Facts
from tools.models.k8s import K8sPod
from tools.read.subject_job import exporter_down

__all__ = ["workload_pods", "unmonitored_nodes", "workload_state"]

_OWNER_LABELS = ("training.kubeflow.org/job-name", "job-name", "batch.kubernetes.io/job-name", "app.kubernetes.io/name",
                 "app")


def workload_pods(facts: Facts, name: str) -> list[K8sPod]:
    """Pods of the workload called ``name`` (a Deployment, StatefulSet, Job or operator job): owned by it, labelled
    with it, or named ``<name>-...`` as controllers name their pods; one per namespace/name."""
    low = name.lower()
    out: dict[tuple[str, str], K8sPod] = {}
    for p in facts.k8s_pods:
        if (p.owner_name or "").lower() == low or p.name.lower().startswith(f"{low}-") or \
                any(p.labels.get(k, "").lower() == low for k in _OWNER_LABELS):
            out.setdefault((p.namespace, p.name), p)
    return list(out.values())


def _serving(p: K8sPod) -> bool:
    """Running and ready (the Ready condition, else every container's ready flag)."""
    ready = p.ready if p.ready is not None else bool(p.containers) and all(c.ready for c in p.containers)
    return p.phase == "Running" and ready


def _monitoring_down(facts: Facts, node: str) -> bool:
    """The node's DCGM exporter pod exists and none of its exporter pods is running and ready."""
    pods = [p for p in facts.pods_on(node) if "dcgm" in (p.name + " " + (p.owner_name or "")).lower()
            or any("dcgm-exporter" in (c.image or "") for c in p.containers)]
    return bool(pods) and not any(_serving(p) for p in pods)


def unmonitored_nodes(facts: Facts, nodes: list[str]) -> list[str]:
    """Those of ``nodes`` (at most 16) with no GPU metric read whose exporter is down, while other nodes' GPU
    metrics were read."""
    sampled = facts.cached("k8s_sampled_nodes", lambda: {s.node for s in facts.gpu_samples if s.node and s.name != "up"})
    if not sampled:
        return []
    return [n for n in dict.fromkeys(nodes) if n not in sampled and (_monitoring_down(facts, n) or exporter_down(facts, n))][:16]


def workload_state(pods: list[K8sPod]) -> str:
    """``4 pod(s): 4 Running``."""
    phases = Counter(p.phase or "Unknown" for p in pods)
    return f"{len(pods)} pod(s): " + ", ".join(f"{n} {s}" for s, n in phases.most_common())
