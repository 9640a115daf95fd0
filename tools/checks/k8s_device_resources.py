"""check_k8s_device_resources: a node whose device plugin registered an empty pool of a device resource its
peers offer (RDMA shared devices, SR-IOV VFs, AMD or other accelerators), so pods that need it cannot land.

A device plugin advertises what it found when it started. One that starts before its driver is loaded (after a
reboot the RDMA shared device plugin can start before the MOFED driver container has loaded mlx5; an SR-IOV
plugin before the VFs exist) finds nothing, registers the resource with 0 devices and keeps running: the node
is Ready, its GPUs free, and the scheduler answers ``Insufficient <resource>``. Restarting the plugin pod
(its DaemonSet recreates it) makes it discover the devices again. Whole GPUs and MIG slices are
k8s_device_plugin's.
"""

from __future__ import annotations

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import node_culprit, node_evidence, pod_culprit, pod_evidence
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.k8s import K8sPod

__all__ = ["K8sDeviceResourcesConfig", "check_k8s_device_resources"]

_PLUGIN_WORDS = ("device-plugin", "dev-plugin", "deviceplugin", "-dp-", "-dp")


class K8sDeviceResourcesConfig(CheckConfig):
    """How many peers must offer a resource before one node's zero stands out."""

    min_peers: int = 1


def _words(pod: K8sPod) -> str:
    return " ".join([pod.name, pod.owner_name or "", pod.labels.get("app", ""),
                     pod.labels.get("app.kubernetes.io/name", ""), *(c.image or "" for c in pod.containers)]).lower()


def _plugin_pods(facts: Facts, node: str, resource: str) -> list[K8sPod]:
    """The device-plugin pods on ``node`` that serve ``resource``: DaemonSet pods named or built as a device
    plugin, those that also name the resource's domain or name first (``rdma`` for ``rdma/rdma_shared_device_a``)."""
    domain, _, name = resource.partition("/")
    tokens = {t for t in (domain.split(".")[0], name.split("_")[0]) if len(t) >= 3}
    plugins = [p for p in facts.pods_on(node) if p.owner_kind == "DaemonSet" and p.phase == "Running"
               and any(w in _words(p) for w in _PLUGIN_WORDS)]
    return sorted(plugins, key=lambda p: not any(t in _words(p) for t in tokens))


def check_k8s_device_resources(facts: Facts, cfg: K8sDeviceResourcesConfig) -> list[Finding]:
    """device_plugin_failure per Ready node that advertises 0 allocatable of a device-plugin resource that at
    least ``min_peers`` other nodes offer (or that Pending pods are turned away for). Culprits: the node, and
    the pods Pending on ``Insufficient <resource>``; action: evict (restart) the node's plugin pod for that
    resource, else cordon the node.

    Sources: k8s-json nodes (allocatable, Ready), pods (owner, images, phase, scheduling message).
    """
    offered: dict[str, int] = {}
    for n in facts.k8s_nodes:
        for res, count in n.allocatable_devices.items():
            if count > 0:
                offered[res] = offered.get(res, 0) + 1
    findings: list[Finding] = []
    for node in facts.k8s_nodes:
        if node.ready_status != "True":
            continue  # NotReady: k8s_node_not_ready's
        for res, count in sorted(node.allocatable_devices.items()):
            if count > 0:
                continue
            waiting = [p for p in facts.k8s_pods if p.phase == "Pending" and not p.node
                       and f"Insufficient {res}" in (p.scheduled_message or "")]
            if offered.get(res, 0) < cfg.min_peers and not waiting:
                continue
            plugins = _plugin_pods(facts, node.name, res)
            evidence: list[Evidence] = [node_evidence(node)] + [pod_evidence(p) for p in plugins[:1] + waiting[:2]]
            message = (f"node {node.name} offers 0 {res} while {offered.get(res, 0)} other node(s) offer it: its "
                       "device plugin registered an empty pool (started before its driver or devices were ready)")
            if plugins:
                message += f"; plugin pod {plugins[0].ref} runs there: restart it so it discovers the devices again"
            if waiting:
                message += f"; {len(waiting)} pod(s) Pending on Insufficient {res}"
            action = (ActionSpec(type="evict_pod", pod=plugins[0].name, namespace=plugins[0].namespace,
                                 reason=f"restart the {res} device plugin so it discovers the node's devices")
                      if plugins else ActionSpec(type="cordon_node", node=node.name, reason=f"no {res} offered"))
            findings.append(Finding(
                check="k8s_device_resources", root_cause="device_plugin_failure", message=message,
                culprits=[node_culprit(node.name), *(pod_culprit(p) for p in waiting[:4])], evidence=evidence[:4],
                strength="state", confidence=confidence("state", corroborated=bool(waiting) and offered.get(res, 0) > 0),
                suggested_actions=[action],
            ))
    return findings
