"""check_k8s_plugin_absent: a Kubernetes node whose GPUs the host sees (nvidia-smi rows, the NVIDIA driver's
kernel lines, a DCGM page from it) but which advertises no ``nvidia.com/gpu`` at all, with no device-plugin pod
bound to it while the plugin runs on other nodes: the plugin's DaemonSet never placed a pod there. The usual
reason is placement: the node's taint (a new pool's ``dedicated=...:NoSchedule``) that the DaemonSet does not
tolerate, or a node selector / label (``nvidia.com/gpu.present``) the node lacks. GPU pods then wait on
``Insufficient nvidia.com/gpu`` although the GPUs are there.

Sources: k8s-json Nodes (capacity/allocatable, taints, labels), Pods (which node each plugin pod is bound to),
the DaemonSet (its pod template's tolerations and node selector) when recorded; nvidia-smi / kernel-log / DCGM
records of the node.
"""

from __future__ import annotations

from collections import Counter

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import is_gpu_infra_pod
from tools.checks.k8s_placement import untolerated
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.findings import Evidence, Finding

__all__ = ["K8sPluginAbsentConfig", "check_k8s_plugin_absent"]


class K8sPluginAbsentConfig(CheckConfig):
    """Nothing to tune."""


def _is_plugin(pod: object) -> bool:
    text = " ".join(filter(None, (getattr(pod, "name", ""), getattr(pod, "owner_name", "") or "")))
    return is_gpu_infra_pod(pod) and "device-plugin" in text  # type: ignore[arg-type]


def _host_sees_gpus(facts: Facts, node: str) -> str | None:
    """What shows the node has GPUs although Kubernetes lists none, or None (the per-node indexes are built once:
    a cluster's thousands of CPU nodes are each asked)."""
    smi = facts.cached("smi_gpus_by_node", lambda: Counter(g.node for g in facts.gpu_status if g.node and not g.lost))
    if smi.get(node):
        return f"nvidia-smi lists {smi[node]} GPU(s)"
    if node in facts.sampled_nodes():
        return "its DCGM exporter reports GPUs"
    if any(e.kind in ("gpu_driver", "xid") or "NVRM" in e.message for e in facts.kernel_events_on(node)):
        return "the NVIDIA driver logs on it"
    return None


def check_k8s_plugin_absent(facts: Facts, cfg: K8sPluginAbsentConfig) -> list[Finding]:
    """device_plugin_failure per Ready node whose host shows GPUs, that offers no ``nvidia.com/gpu`` (capacity
    and allocatable absent or 0) and has no device-plugin pod bound, while device-plugin pods run on other nodes;
    the DaemonSet's untolerated taints are named when its template was recorded. No action: the DaemonSet's
    tolerations or the node's labels are the fix, an owner's change."""
    plugin_nodes = {p.node for p in facts.k8s_pods if p.node and _is_plugin(p)}
    if not plugin_nodes:
        return []
    templates = [t for w in facts.k8s_workloads if w.kind == "DaemonSet" and "device-plugin" in w.name for t in w.templates]
    findings: list[Finding] = []
    bare = [n for n in facts.k8s_nodes if n.name not in plugin_nodes and not n.capacity_gpu and not n.allocatable_gpu
            and not n.unschedulable]
    for n in bare:
        seen = _host_sees_gpus(facts, n.name)
        if seen is None:
            continue
        blocked = untolerated(templates[0].placement, n) if templates else []
        # Nodes of the same pool (the same untolerated taints) lack the plugin for the same reason.
        pool = [m.name for m in bare if m is not n and blocked and untolerated(templates[0].placement, m) == blocked
                and _host_sees_gpus(facts, m.name) is None]
        taints = ", ".join(f"{t.key}={t.value or ''}:{t.effect}" for t in blocked)
        why = (f"the device-plugin DaemonSet does not tolerate its taint {taints}" if blocked else
               "no device-plugin pod was placed on it (its taints, labels or the DaemonSet's node selector)")
        findings.append(Finding(
            check="k8s_plugin_absent", root_cause="device_plugin_failure",
            message=f"{n.name}: {seen}, but it offers no nvidia.com/gpu and no device-plugin pod runs there (the plugin "
                    f"runs on {len(plugin_nodes)} other node(s)): {why}"
                    + (f"; {', '.join(pool[:4])} carry the same taint and offer no GPUs either" if pool else ""),
            culprits=[f"k8snode:{n.name}", *(f"k8snode:{m}" for m in pool[:8])], strength="state",
            confidence=confidence("state", corroborated=bool(blocked)),
            evidence=[Evidence(text=f"node {n.name}: no nvidia.com/gpu in capacity or allocatable; {seen}", metric="k8s")]
            + ([Evidence(text=f"node {n.name} taint(s) {taints} not tolerated by the device-plugin DaemonSet",
                         metric="k8s")] if blocked else [])))
    return findings
