"""check_k8s_kubelet_refusals: a Kubernetes node whose kubelet takes pods and then cannot start them.

Two refusals name the node, not the pod: the kubelet's device manager admitting a pod to devices it no
longer has (``UnexpectedAdmissionError``: ``Pod Allocate failed due to requested number of devices
unavailable for nvidia.com/gpu. Requested: 4, Available: 0, which is unexpected`` — its checkpoint still
counts devices of pods deleted by force, or the device plugin re-registered with fewer), and a volume that
will not mount on this node while it does elsewhere (``FailedMount ... MountVolume.SetUp failed ... No such
device`` / ``unknown filesystem type``: the node lacks the file system's client or kernel module, e.g. it
rebooted into a kernel without the Lustre modules). A third names the node's configuration: its kubelet's
Topology Manager rejecting pods (``TopologyAffinityError``: ``Resources cannot be allocated with Topology
locality``) that the other nodes run — its ``topologyManagerPolicy`` (``single-numa-node``, say) or CPU/memory
manager settings differ from its peers' (a rebuilt node), which is node_config_mismatch. Sources: kubelet events
(kubectl get events, API JSON), pods for the node each event's pod was bound to and their status reasons.
"""

from __future__ import annotations

import re
from collections import defaultdict

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import event_evidence, event_pod_key, node_culprit, pod_culprit
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.findings import Evidence, Finding
from tools.models.k8s import K8sEvent
from tools.platform import evict_hurt, node_ref, take_out_of_service

__all__ = ["K8sKubeletRefusalsConfig", "check_k8s_kubelet_refusals"]

ADMISSION = re.compile(r"requested number of devices unavailable for (?P<res>\S+?)\.? Requested: \d+, Available: \d+",
                       re.IGNORECASE)
CLIENT_MISSING = re.compile(r"No such device|mount failed: exit status 19\b|unknown filesystem type|wrong fs type|modprobe: FATAL|"
                            r"mount(?:\.\w+)?: .*not found|not supported by the kernel|"
                            r"not found in the list of registered CSI drivers", re.IGNORECASE)
"""The node cannot mount the volume's file system at all: no kernel module or mount helper, or the CSI driver's
node plugin never registered with this kubelet (``driver name nfs.csi.k8s.io not found in the list of
registered CSI drivers``)."""


class K8sKubeletRefusalsConfig(CheckConfig):
    """How many pods to name per node."""

    max_pod_culprits: int = 4


def _node_of(facts: Facts, ev: K8sEvent) -> tuple[str | None, tuple[str, str]]:
    """The node the event's pod is bound to (else the kubelet that reported it), and the pod's key."""
    key = event_pod_key(facts, ev)
    by_key = facts.cached("pods_by_key", lambda: {(p.namespace, p.name): p for p in facts.k8s_pods})
    pod = by_key.get(key)
    return (pod.node if pod is not None and pod.node else ev.source_host), key


def check_k8s_kubelet_refusals(facts: Facts, cfg: K8sKubeletRefusalsConfig) -> list[Finding]:
    """device_plugin_failure per node whose kubelet refuses pods with UnexpectedAdmissionError (devices it
    counts as taken are gone); fs_client_fault per node where a volume fails to mount for want of the file
    system's client while no other node reports it. Culprits: the node, then the refused pods. Action: take the
    node out of service (cordon) so the controller's next pods land elsewhere."""
    admission: dict[str, list[tuple[K8sEvent, tuple[str, str], str]]] = defaultdict(list)
    mounts: dict[str, list[tuple[K8sEvent, tuple[str, str]]]] = defaultdict(list)
    for ev in facts.k8s_events:
        if ev.object_kind not in (None, "Pod"):
            continue
        if ev.reason == "UnexpectedAdmissionError" and (m := ADMISSION.search(ev.message)):
            node, key = _node_of(facts, ev)
            if node:
                admission[node].append((ev, key, m["res"]))
        elif ev.reason == "FailedMount" and CLIENT_MISSING.search(ev.message):
            node, key = _node_of(facts, ev)
            if node:
                mounts[node].append((ev, key))
    findings: list[Finding] = _topology_refusals(facts, cfg)
    for node, hits in sorted(admission.items()):
        res = hits[0][2]
        pods = list(dict.fromkeys(pod_culprit(k) for _, k, _ in hits))
        findings.append(Finding(
            check="k8s_kubelet_refusals", root_cause="device_plugin_failure",
            message=f"kubelet on {node} admits pods to {res} it cannot allocate (UnexpectedAdmissionError, "
                    f"{len(pods)} pod(s)): its device manager counts devices that are gone — restart the kubelet "
                    "or the device plugin there",
            culprits=[node_culprit(node), *pods[: cfg.max_pod_culprits]],
            evidence=[event_evidence(e) for e, _, _ in hits[:3]],
            strength="state", confidence=confidence("state", corroborated=len(pods) >= 2),
            suggested_actions=take_out_of_service(facts, node_ref(facts, node), f"kubelet cannot allocate {res}"),
        ))
    if len(mounts) == 1 or (mounts and len(mounts) <= max(1, len(facts.k8s_nodes) // 3)):
        for node, hits in sorted(mounts.items()):
            pods = list(dict.fromkeys(pod_culprit(k) for _, k in hits))
            findings.append(Finding(
                check="k8s_kubelet_refusals", root_cause="fs_client_fault",
                message=f"volumes fail to mount on {node} only ({len(pods)} pod(s)): the node lacks the file "
                        "system's client, kernel module or registered CSI node plugin",
                culprits=[node_culprit(node), *pods[: cfg.max_pod_culprits]],
                evidence=[event_evidence(e) for e, _ in hits[:3]]
                + [Evidence(text=f"no other node reports this mount failure ({len(facts.k8s_nodes)} node(s) read)")],
                strength="state", confidence=confidence("state", corroborated=len(hits) >= 2 or hits[0][0].count > 1),
                suggested_actions=take_out_of_service(facts, node_ref(facts, node), "file-system client missing")
                + evict_hurt([p for p in facts.pods_on(node) if (p.namespace, p.name) in {k for _, k in hits}], node,
                             "its volume cannot be mounted here; its controller places it elsewhere"),
            ))
    return findings


def _topology_refusals(facts: Facts, cfg: K8sKubeletRefusalsConfig) -> list[Finding]:
    """node_config_mismatch per node whose kubelet rejects pods with TopologyAffinityError while no more than a
    third of the nodes do (the others align the same requests): cordon it until its kubelet's topology settings
    match its peers'. Sources: events (reason TopologyAffinityError) and pods' ``status.reason``."""
    refused: dict[str, dict[tuple[str, str], object]] = defaultdict(dict)
    for ev in facts.k8s_events:
        if ev.reason == "TopologyAffinityError" and ev.object_kind in (None, "Pod"):
            node, key = _node_of(facts, ev)
            if node:
                refused[node].setdefault(key, ev)
    for pod in facts.k8s_pods:
        if pod.status_reason == "TopologyAffinityError" and pod.node:
            refused[pod.node].setdefault((pod.namespace, pod.name), pod)
    if not refused or len(refused) > max(1, len(facts.k8s_nodes) // 3):
        return []  # most nodes refuse: the request cannot be aligned anywhere, not one node's settings
    out: list[Finding] = []
    for node, hits in sorted(refused.items()):
        pods = [pod_culprit(k) for k in hits]
        first = next(iter(hits.values()))
        evidence = [event_evidence(e) if isinstance(e, K8sEvent) else
                    Evidence(text=f"pod {k[0]}/{k[1]} on {node}: status.reason TopologyAffinityError") for k, e in
                    list(hits.items())[:3]]
        out.append(Finding(
            check="k8s_kubelet_refusals", root_cause="node_config_mismatch",
            message=f"kubelet on {node} rejects {len(pods)} pod(s) with TopologyAffinityError (its Topology Manager "
                    "cannot align their GPUs/CPUs) while the other nodes run them: its topology or CPU/memory manager "
                    "policy differs from its peers'",
            culprits=[node_culprit(node), *pods[: cfg.max_pod_culprits]],
            evidence=evidence + [Evidence(text=f"{len(facts.k8s_nodes)} node(s) read; no other reports this")],
            strength="state", confidence=confidence("state", corroborated=len(pods) >= 2 or isinstance(first, K8sEvent)),
            suggested_actions=take_out_of_service(facts, node_ref(facts, node), "kubelet rejects pods: TopologyAffinityError"),
        ))
    return out
