"""check_k8s_driver_upgrade: nodes the GPU Operator's upgrade controller has taken out of service on purpose to
roll a new driver onto them — cordoned, operands stopped, no GPUs allocatable until the new driver validates —
and nodes where that upgrade failed.

An upgrade in progress (``nvidia.com/gpu-driver-upgrade-state`` cordon-required ... uncordon-required) is the
system working as designed: the controller uncordons the node itself once validation passes, so nobody (Warden
least of all: DESIGN's invariant 8) uncordons it. ``upgrade-failed``, or a new driver pod crash-looping
mid-upgrade (the controller's own test for a failed upgrade), is a node software fault.

Source: "GPU Driver Upgrades" (GPU Operator documentation) and NVIDIA/k8s-operator-libs' upgrade state machine
(tools.knowledge.gpu_operator).
"""

from __future__ import annotations

from collections import Counter

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import container_line, event_evidence, node_culprit, node_evidence, node_events, \
    pod_culprit, pod_evidence
from tools.facts import Facts
from tools.knowledge.gpu_operator import UPGRADE_FAILED, UPGRADE_IN_PROGRESS, UPGRADE_STATE_LABEL, is_driver_pod, upgrade_state
from tools.knowledge.precedence import confidence
from tools.models.findings import Finding
from tools.models.k8s import K8sNode, K8sPod
from tools.platform import node_ref, take_out_of_service

__all__ = ["K8sDriverUpgradeConfig", "check_k8s_driver_upgrade"]


class K8sDriverUpgradeConfig(CheckConfig):
    """When a new driver pod counts as failing mid-upgrade."""

    min_restarts: int = 3


def _failing_driver(facts: Facts, node: K8sNode, cfg: K8sDriverUpgradeConfig) -> tuple[K8sPod, str] | None:
    for pod in facts.pods_on(node.name):
        if not is_driver_pod(pod):
            continue
        for c in pod.containers:
            if (c.state == "waiting" and c.state_reason == "CrashLoopBackOff") or \
                    (not c.ready and c.restart_count >= cfg.min_restarts):
                return pod, container_line(c)
    return None


def check_k8s_driver_upgrade(facts: Facts, cfg: K8sDriverUpgradeConfig) -> list[Finding]:
    """Per node with a driver-upgrade state: ``healthy`` (normal operation, explained: what the controller is
    doing, how far the rollout is, that the cordon is the controller's) while the upgrade is in progress and its
    driver pod is not failing; node_software_fault (culprits the node and its driver pod; take the node out of
    service unless the controller already has) when the state is upgrade-failed or the new driver pod crash-loops.

    Sources: k8s-json nodes (the upgrade-state label, spec.unschedulable, allocatable), driver pods, the
    operator's GPUDriverUpgrade events.
    """
    states = Counter(s for n in facts.k8s_nodes if (s := upgrade_state(n)))
    rollout = ", ".join(f"{c} {s}" for s, c in sorted(states.items()))
    findings = []
    for node in facts.k8s_nodes:
        state = upgrade_state(node)
        if state not in UPGRADE_IN_PROGRESS and state != UPGRADE_FAILED:
            continue
        events = [e for e in node_events(facts, node.name) if e.reason == "GPUDriverUpgrade"
                  or "upgrade" in (e.source_component or "").lower() or "gpu-operator" in (e.source_component or "")]
        failing = _failing_driver(facts, node, cfg)
        evidence = [node_evidence(node, extra=f"{UPGRADE_STATE_LABEL}={state}"), *[event_evidence(e) for e in events[-2:]]]
        if state == UPGRADE_FAILED or failing:
            why = f"driver pod {failing[0].ref}: {failing[1]}" if failing else f"{UPGRADE_STATE_LABEL}={state}"
            findings.append(Finding(
                check="k8s_driver_upgrade", root_cause="node_software_fault",
                message=f"node {node.name}: the GPU Operator's driver upgrade failed ({why}); rollout: {rollout}",
                culprits=[node_culprit(node.name), *([pod_culprit(failing[0])] if failing else [])],
                evidence=evidence + ([pod_evidence(failing[0])] if failing else []), strength="state",
                confidence=confidence("state", corroborated=bool(failing) and state == UPGRADE_FAILED),
                suggested_actions=take_out_of_service(facts, node_ref(facts, node.name), "GPU driver upgrade failed")))
            continue
        cordon = "cordoned by the upgrade controller, which uncordons it after validation" if node.unschedulable \
            else "not cordoned"
        findings.append(Finding(
            check="k8s_driver_upgrade", root_cause="healthy",
            message=(f"node {node.name} is in the GPU Operator's rolling driver upgrade (state {state}; {cordon}; "
                     f"{node.allocatable_gpu or 0} of {node.capacity_gpu or 0} GPU(s) allocatable until the new driver "
                     f"validates); rollout: {rollout}: normal operation, leave the cordon to the controller"),
            culprits=[], evidence=evidence, strength="state", confidence=confidence("state", normal=True)))
    return findings
