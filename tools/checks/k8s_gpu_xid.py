"""check_k8s_gpu_xid: a GPU hardware Xid on a Kubernetes node, named the Kubernetes way.

check_gpu_xid reads the same kernel lines but speaks Slurm (``node:``, drain_node). On a node the
API knows, the culprits are ``k8snode:<name>`` and the GPU pods that ran there, and the reversible
step is ``kubectl cordon`` so no new pod lands on the faulty GPU while it is repaired.
"""

from __future__ import annotations

from pydantic import Field

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import HARDWARE_XIDS, node_culprit, node_evidence, pod_culprit, xids_on
from tools.facts import Facts
from tools.models.findings import ActionSpec, Finding

__all__ = ["K8sGpuXidConfig", "check_k8s_gpu_xid"]

_AFFECTED = ("Pending", "Running", "Unknown", "Failed", None)


class K8sGpuXidConfig(CheckConfig):
    """Which Xids mean the GPU itself is bad (check_gpu_xid's catalogue), and how many it takes."""

    hardware_xids: frozenset[int] = Field(default=HARDWARE_XIDS)
    min_events: int = 1
    max_pod_culprits: int = 10


def check_k8s_gpu_xid(facts: Facts, cfg: K8sGpuXidConfig) -> list[Finding]:
    """gpu_hardware_fault per Kubernetes node (one the API listed) with hardware Xids — NVRM Xid
    lines, a GPU fallen off the bus, uncorrectable ECC, DCGM Xid counters, node events naming an
    Xid. Culprits: the node, then pods with GPU requests bound to it that are running or failed.
    Action cordon_node unless already cordoned. States whether the device plugin has already
    withdrawn GPUs (allocatable < capacity).

    Sources: k8s-json nodes and pods; kernel-log and dcgm-prometheus-text of the node; node events.
    """
    hw = set(cfg.hardware_xids)
    findings: list[Finding] = []
    for node in facts.k8s_nodes:
        seen = [(x, ev) for x, ev in xids_on(facts, node.name) if x in hw]
        if len(seen) < cfg.min_events:
            continue
        xids = sorted({x for x, _ in seen})
        pods = [p for p in facts.k8s_pods if p.node == node.name and p.gpu_request and p.phase in _AFFECTED]
        plugin = ""
        if node.capacity_gpu is not None:
            plugin = (f"; device plugin already withdrew {node.capacity_gpu - (node.allocatable_gpu or 0)} of "
                      f"{node.capacity_gpu} GPUs" if (node.allocatable_gpu or 0) < node.capacity_gpu
                      else f"; device plugin still advertises all {node.capacity_gpu} GPUs")
        findings.append(Finding(
            check="k8s_gpu_xid", root_cause="gpu_hardware_fault",
            message=(f"{len(seen)} GPU hardware error event(s) on Kubernetes node {node.name}: "
                     f"{', '.join(f'Xid {x}' for x in xids)} (threshold {cfg.min_events}){plugin}; "
                     f"{len(pods)} GPU pod(s) ran there"),
            culprits=[node_culprit(node.name), *[pod_culprit(p) for p in pods[: cfg.max_pod_culprits]]],
            evidence=[ev for _, ev in seen[:4]] + [node_evidence(node)],
            confidence=0.96,
            suggested_actions=[] if node.unschedulable else [ActionSpec(
                type="cordon_node", node=node.name, reason=f"GPU hardware fault ({', '.join(f'Xid {x}' for x in xids)})")],
        ))
    return findings
