"""check_k8s_device_plugin: the node's GPU stack (NVIDIA device plugin, driver, toolkit) is down,
so the kubelet offers no GPUs even though the node has them."""

from __future__ import annotations

from collections import defaultdict

from pydantic import Field

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import (
    HARDWARE_XIDS,
    container_line,
    event_evidence,
    is_gpu_infra_pod,
    is_gpu_monitoring_pod,
    k8s_node,
    node_culprit,
    node_evidence,
    pod_culprit,
    pod_evidence,
    pod_events,
    pod_log_events,
    unregistered_plugins,
    xid_evidence,
)
from tools.facts import Facts
from tools.knowledge.gpu_operator import DRIVER_INSTALL_FAILED, is_driver_pod, upgrade_in_progress
from tools.knowledge.gpu_stack import stack_problem
from tools.knowledge.precedence import confidence as strength_confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.k8s import GPU_RESOURCE, MIG_RESOURCE_PREFIX, K8sNode, K8sPod

__all__ = ["K8sDevicePluginConfig", "check_k8s_device_plugin"]

_BAD_WAITING = frozenset({"CrashLoopBackOff", "Error", "CreateContainerError", "CreateContainerConfigError",
                          "RunContainerError", "ErrImagePull", "ImagePullBackOff", "InvalidImageName"})


class K8sDevicePluginConfig(CheckConfig):
    """When a GPU-stack pod counts as failing."""

    min_restarts: int = 3
    """A not-ready GPU-stack container with this many restarts is failing even between back-offs."""
    hardware_xids: frozenset[int] = Field(default=HARDWARE_XIDS)
    """A node with 0 allocatable GPUs and one of these Xids is a GPU fault, not a plugin failure."""


def _failing(pod: K8sPod, cfg: K8sDevicePluginConfig) -> str | None:
    """Why a GPU-stack pod is failing, or None."""
    if pod.phase in ("Failed", "Unknown"):
        return f"phase {pod.phase}" + (f" ({pod.status_reason})" if pod.status_reason else "")
    if pod.phase == "Succeeded":
        return None
    for c in pod.containers:
        if c.state == "waiting" and c.state_reason in _BAD_WAITING:
            return container_line(c)
        if not c.ready and not c.init and c.restart_count >= cfg.min_restarts:
            return container_line(c)
    return None


def _mig_profile(node: K8sNode) -> str | None:
    """The MIG resource the node's ``nvidia.com/mig.config`` asks for (``all-3g.40gb`` ->
    ``nvidia.com/mig-3g.40gb``), or None for no config, ``all-disabled`` or a custom mix."""
    config = node.labels.get("nvidia.com/mig.config", "")
    if not config.startswith("all-") or config in ("all-disabled", "all-enabled", "all-balanced"):
        return None
    return MIG_RESOURCE_PREFIX + config[4:]


def _mig_problem(node: K8sNode) -> str | None:
    """Why the node's MIG layout is not served: the MIG manager reports ``mig.config.state=failed``, or the
    configured profile is not advertised once the manager says ``success``."""
    state = node.labels.get("nvidia.com/mig.config.state")
    config = node.labels.get("nvidia.com/mig.config", "?")
    if state == "failed":
        return f"the MIG manager failed to apply {config} (label nvidia.com/mig.config.state=failed)"
    profile = _mig_profile(node)
    if state == "success" and profile and not node.allocatable_mig.get(profile):
        return f"{config} applied but no {profile} advertised"
    return None


def _waiting_for(facts: Facts, node: K8sNode, no_gpus: bool) -> list[K8sPod]:
    """Pending pods the scheduler turned away for lack of what this node should offer: whole GPUs when it
    offers none, or its configured MIG profile."""
    wanted = {GPU_RESOURCE} if no_gpus else set()
    if (profile := _mig_profile(node)) is not None and not node.allocatable_mig.get(profile):
        wanted.add(profile)
    return [p for p in facts.k8s_pods if p.phase == "Pending" and not p.node and p.scheduled_message
            and any(f"Insufficient {r}" in p.scheduled_message for r in wanted)] if wanted else []


def _below_plugin(facts: Facts, failing: list[tuple[K8sPod, str]]) -> str | None:
    """What under the device plugin the failing GPU-stack pods say is broken: the driver stack's own errors in
    their termination messages or logs, or the driver container itself failing (every operand waits for it)."""
    said = " ".join(m for p, _ in failing for c in p.containers for m in (c.state_message, c.last_terminated_message) if m)
    below = stack_problem(said)
    if below:
        return below
    for pod, why in failing:
        if is_driver_pod(pod):
            logged = next((e.message for e in pod_log_events(facts, pod) if DRIVER_INSTALL_FAILED.search(e.message)), None)
            return (f"the NVIDIA driver container {pod.ref} fails ({why})"
                    + (f": '{logged[:100]}' — no driver for the running kernel" if logged else ""))
    return None


def check_k8s_device_plugin(facts: Facts, cfg: K8sDevicePluginConfig) -> list[Finding]:
    """device_plugin_failure per Ready node where a GPU-stack pod (nvidia-device-plugin, driver or
    container-toolkit daemonset, operator validator) is crash-looping or not ready, or where a GPU
    node (GPUs in capacity, or labelled by GPU feature discovery) has 0 allocatable nvidia.com/gpu.
    Culprits the node and the failing pods; action cordon_node, so no new GPU pod lands there.

    node_software_fault instead when what fails is under the plugin: the pods' messages name a broken driver
    stack (Fabric Manager down, NVML mismatch, no driver), or the driver container itself fails (every other
    operand waits for it in its driver-validation init container). A plugin that runs but logs that it cannot
    register with the kubelet is named as a culprit and restarted (evict_pod: its DaemonSet recreates it and it
    registers again) instead of cordoning the node.

    A node with 0 allocatable GPUs and a hardware Xid (kernel log, DCGM, node events) is left to
    k8s_gpu_capacity / gpu_xid: there the plugin is doing its job. NotReady nodes are left to
    k8s_node_not_ready, nodes the GPU Operator's upgrade controller is upgrading to k8s_driver_upgrade.

    Sources: k8s-json pods (container states, owner, node) and nodes (capacity, allocatable, labels);
    BackOff events; the GPU-stack pods' own logs (job-log recorded for namespace/pod); kernel-log / DCGM Xids.
    """
    per_node: dict[str | None, list[tuple[K8sPod, str]]] = defaultdict(list)
    for pod in facts.k8s_pods:
        if is_gpu_infra_pod(pod) and not is_gpu_monitoring_pod(pod):  # a dcgm-exporter does not serve GPUs
            why = _failing(pod, cfg)
            if why:
                per_node[pod.node].append((pod, why))
    zero = {n.name for n in facts.k8s_nodes
            if n.is_gpu_node and n.ready_status == "True" and not n.serves_gpus
            and not xid_evidence(facts, n.name, hardware_xids=cfg.hardware_xids)}
    mig = {n.name: why for n in facts.k8s_nodes if n.ready_status == "True" and (why := _mig_problem(n))}
    findings: list[Finding] = []
    for name in sorted(set(per_node) | zero | set(mig), key=lambda n: n or ""):
        node = k8s_node(facts, name) if name else None
        if node is not None and (node.ready_status in ("False", "Unknown") or upgrade_in_progress(node)):
            continue  # NotReady: k8s_node_not_ready's; a driver upgrade under way: k8s_driver_upgrade's
        failing = per_node.get(name, [])
        evidence: list[Evidence] = []
        parts = []
        if node is not None and name in zero:
            if node.capacity_gpu is None:
                parts.append("no nvidia.com/gpu advertised although GPU feature discovery labels it a GPU node "
                             f"({node.gpu_product or 'nvidia.com/gpu.present'}; threshold: > 0 allocatable)")
            else:
                parts.append(f"allocatable nvidia.com/gpu {node.allocatable_gpu or 0} of capacity {node.capacity_gpu} "
                             f"(threshold: > 0 on a GPU node)")
            evidence.append(node_evidence(node))
        if node is not None and name in mig:
            parts.append(mig[name])
            evidence.append(node_evidence(node))
        for pod, why in failing[:3]:
            parts.append(f"pod {pod.ref} {why}")
            evidence.append(pod_evidence(pod))
            evidence += [event_evidence(e) for e in pod_events(facts, pod.namespace, pod.name) if e.reason == "BackOff"][:1]
        where = f"node {name}" if name else "unscheduled GPU-stack pods"
        # A node that still serves GPUs and only misses its MIG layout keeps serving them: no cordon.
        cordon = name is not None and not (node is not None and node.unschedulable) \
            and (bool(failing) or name in zero)
        # A validator or plugin failing because the node's driver stack is broken (Fabric Manager down,
        # no driver, NVML mismatch, the driver container itself failing) points under the plugin: the node's software.
        below = _below_plugin(facts, failing)
        if below:
            parts.append(f"the GPU stack pods report: {below}")
        # A plugin that runs but cannot register with the kubelet is restarted (its DaemonSet recreates it and it
        # registers again); the node is fine.
        unregistered = unregistered_plugins(facts, name) if name and name in zero and not below else []
        for pod, line in unregistered[:1]:
            parts.append(f"device plugin {pod.ref} runs but cannot register with the kubelet: {line[:140]}")
        waiting = _waiting_for(facts, node, name in zero) if node is not None else []
        if waiting:
            parts.append(f"{len(waiting)} pod(s) Pending for the GPUs it does not offer")
        # The plugin serves the GPUs under another name (time-slicing or MPS sharing with renameByDefault:
        # nvidia.com/gpu.shared): a configuration the pods and the plugin disagree on, not a broken node.
        renamed = {k: v for k, v in (node.allocatable_devices if node is not None else {}).items()
                   if k.startswith(GPU_RESOURCE + ".") and v} if name in zero and not failing else {}
        if renamed:
            parts.append("it advertises " + ", ".join(f"{v} x {k}" for k, v in renamed.items()) + " instead "
                         "(the device plugin's sharing config renames the resource: renameByDefault): request that "
                         f"name or set renameByDefault: false; cordoning changes nothing")
            cordon = False
        findings.append(Finding(
            check="k8s_device_plugin", root_cause="node_software_fault" if below else "device_plugin_failure",
            message=f"{where}: " + "; ".join(parts),
            culprits=([node_culprit(name)] if name else []) + [pod_culprit(p) for p, _ in failing]
            + [pod_culprit(p) for p, _ in unregistered] + [pod_culprit(p) for p in waiting[:8]],
            evidence=evidence[:5],
            strength="state", confidence=strength_confidence("state", corroborated=bool(failing) and name in zero),
            suggested_actions=[ActionSpec(type="evict_pod", pod=p.name, namespace=p.namespace,
                                          reason="restart the device plugin so it registers with the kubelet again")
                               for p, _ in unregistered[:1]]
            or ([ActionSpec(type="cordon_node", node=name, reason="GPU device plugin not serving GPUs")] if cordon else [])
            or [ActionSpec(type="notify_owner", pod=p.name, namespace=p.namespace,
                           reason=f"the GPUs are offered as {next(iter(renamed))}: request that resource")
                for p in waiting[:2] if renamed],
        ))
    return findings
