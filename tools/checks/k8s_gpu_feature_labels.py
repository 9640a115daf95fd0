"""check_k8s_gpu_feature_labels: a GPU node that GPU feature discovery left unlabelled — it serves GPUs, but has
none of the ``nvidia.com/gpu.product`` / ``gpu.count`` / ``cuda.*`` labels its peers carry, so pods selecting a
GPU model by label never land there, however idle it is.

GFD reads the GPUs through NVML; started before the driver was loaded it fails ("Failed to initialize NVML",
"No labels generated from any source") and keeps writing an empty label set (NVIDIA/gpu-feature-discovery #36,
#71, #75). Restarting the GFD pod (its DaemonSet recreates it) labels the node once NVML loads; the node itself
is fine and keeps serving its GPUs, so it is never cordoned for this.
"""

from __future__ import annotations

from pydantic import Field

from tools.checks.base import CheckConfig, log_evidence
from tools.checks.k8s_evidence import node_culprit, node_evidence, pod_culprit, pod_evidence, pod_log_events
from tools.checks.k8s_placement import free_gpus, pending_unscheduled, unmet_requirements
from tools.facts import Facts
from tools.knowledge.gpu_operator import GFD_LABELS, GFD_NO_LABELS, is_gfd_pod
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Finding
from tools.models.k8s import K8sNode, K8sPod

__all__ = ["K8sGpuLabelsConfig", "check_k8s_gpu_feature_labels"]

_PRODUCT = "nvidia.com/gpu.product"


class K8sGpuLabelsConfig(CheckConfig):
    """Which labels GPU feature discovery writes, and how many waiting pods to name."""

    labels: tuple[str, ...] = Field(default=GFD_LABELS)
    max_pod_culprits: int = 10


def _waiting_for_labels(facts: Facts, node: K8sNode, missing: set[str]) -> list[K8sPod]:
    """Pending pods that would fit on ``node`` but for labels it is missing (every requirement the node fails
    names a missing label)."""
    free = free_gpus(facts, node)
    out = []
    for pod in pending_unscheduled(facts):
        unmet = unmet_requirements(pod.placement, node)
        keys = {u.split("=", 1)[0].split(" ", 1)[0] for u in unmet}
        if unmet and keys <= missing and free >= pod.gpu_request:
            out.append(pod)
    return out


def check_k8s_gpu_feature_labels(facts: Facts, cfg: K8sGpuLabelsConfig) -> list[Finding]:
    """device_plugin_failure per Ready GPU node (GPUs in capacity) without ``nvidia.com/gpu.product`` while other
    GPU nodes have it, or whose GFD pod logs that it cannot read NVML. Culprits the node, its GFD pod and the
    Pending pods that would fit there but for the missing labels; action evict_pod of the GFD pod (restarted by
    its DaemonSet, it relabels the node). Never a cordon: the node serves its GPUs.

    Evidence strength: state (the node's labels against its peers'), corroborated by the GFD pod's own log lines
    or by pods waiting for exactly those labels. Sources: k8s-json nodes (labels, capacity) and pods (GFD pods,
    Pending pods' nodeSelector / affinity), the GFD pod's log (job-log recorded for ``namespace/pod``).
    """
    gpu_nodes = [n for n in facts.k8s_nodes if n.ready_status == "True" and n.capacity_gpu]
    findings = []
    for node in gpu_nodes:
        if _PRODUCT in node.labels:
            continue
        peers = [n for n in gpu_nodes if _PRODUCT in n.labels]
        gfd = [p for p in facts.pods_on(node.name) if is_gfd_pod(p)]
        said = [e for p in gfd for e in pod_log_events(facts, p) if GFD_NO_LABELS.search(e.message)]
        if not peers and not said:
            continue  # no GPU node is labelled and GFD says nothing: feature discovery is not deployed here
        missing = {lab for lab in cfg.labels if lab not in node.labels}
        have = sorted({lab for p in peers for lab in p.labels if lab in missing}, key=lambda lab: (lab != _PRODUCT, lab))
        waiting = _waiting_for_labels(facts, node, missing | set(have))
        parts = [f"node {node.name} advertises {node.allocatable_gpu or 0} of {node.capacity_gpu} GPU(s) but carries none "
                 f"of {', '.join(have[:3]) or _PRODUCT}" + (f", which {len(peers)} other GPU node(s) have" if peers else "")]
        if said:
            parts.append(f"its GPU feature discovery pod {gfd[0].ref} logs: {said[0].message[:120]}")
        elif gfd:
            parts.append(f"its GPU feature discovery pod {gfd[0].ref} is {gfd[0].phase} yet labels nothing")
        if waiting:
            parts.append(f"{len(waiting)} Pending pod(s) select those labels and would fit there "
                         f"({free_gpus(facts, node)} GPU(s) free)")
        findings.append(Finding(
            check="k8s_gpu_feature_labels", root_cause="device_plugin_failure",
            message="; ".join(parts),
            culprits=[node_culprit(node.name), *[pod_culprit(p) for p in gfd],
                      *[pod_culprit(p) for p in waiting[: cfg.max_pod_culprits]]],
            evidence=[node_evidence(node, extra=f"labels lack {', '.join(have[:2]) or _PRODUCT}"),
                      *[log_evidence(e) for e in said[:2]], *[pod_evidence(p) for p in waiting[:2]]][:5],
            strength="state", confidence=confidence("state", corroborated=bool(said or waiting)),
            suggested_actions=[ActionSpec(type="evict_pod", pod=p.name, namespace=p.namespace,
                                          reason="restart GPU feature discovery so it relabels the node")
                               for p in gfd if p.phase in ("Running", "Pending", "Unknown")][:1],
        ))
    return findings
