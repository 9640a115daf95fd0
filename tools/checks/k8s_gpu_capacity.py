"""check_k8s_gpu_capacity: pods Pending on ``Insufficient nvidia.com/gpu`` — and whether the
shortage is real or GPUs the device plugin has marked unhealthy.

Reasoning (as in public-incidents K8S-02): the device plugin advertises every GPU in ``capacity``
and only healthy ones in ``allocatable``. When a node's allocatable is below its capacity and the
missing GPUs are what a pending pod needs, the pods are a symptom: with an Xid on that node the GPU
itself is faulty (gpu_hardware_fault); without one the device plugin is the suspect
(device_plugin_failure). Only when no degraded node would fit the pod is the cluster simply full.
"""

from __future__ import annotations

import re

from pydantic import Field

from tools.checks.base import CheckConfig, clip
from tools.checks.k8s_evidence import (
    HARDWARE_XIDS,
    active_pods_on,
    event_evidence,
    event_pod_key,
    node_culprit,
    node_evidence,
    node_events,
    other_xids,
    pod_culprit,
    pod_evidence,
    pod_events,
    unregistered_plugins,
    xid_evidence,
)
from tools.facts import Facts
from tools.knowledge.precedence import confidence as strength_confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.knowledge.autoscaler import scale_up_in_progress
from tools.models.k8s import GPU_RESOURCE, K8sNode

__all__ = ["K8sGpuCapacityConfig", "check_k8s_gpu_capacity"]

_INSUFFICIENT = f"Insufficient {GPU_RESOURCE}"


class K8sGpuCapacityConfig(CheckConfig):
    """Which Xids mean the GPU itself is faulty, and how many pods to name."""

    hardware_xids: frozenset[int] = Field(default=HARDWARE_XIDS)
    """check_gpu_xid's catalogue (48 DBE, 79 off the bus, 94/95 ECC, ...). Other Xids (e.g. 69) can make
    the device plugin mark a GPU unhealthy without showing that the GPU is bad."""
    max_pod_culprits: int = 10


class _Waiting:
    """A pod waiting for GPUs: from its PodScheduled condition or a FailedScheduling event."""

    def __init__(self, namespace: str, name: str, gpus: int | None, evidence: list[Evidence], message: str) -> None:
        self.namespace, self.name, self.gpus, self.evidence, self.message = namespace, name, gpus, evidence, message


_EXCLUDED = re.compile(r"volume node affinity conflict", re.IGNORECASE)
"""FailedScheduling saying nodes are out because the pod's volume is bound elsewhere (a zonal PV): nodes with free
GPUs may be exactly those. (Taints and selectors are named for control-plane and CPU nodes on every cluster.)"""


def _waiting_pods(facts: Facts) -> list[_Waiting]:
    out: dict[tuple[str, str], _Waiting] = {}
    known = {(p.namespace, p.name): p for p in facts.k8s_pods}
    for p in facts.k8s_pods:
        if p.phase == "Pending" and not p.node and _INSUFFICIENT in (p.scheduled_message or ""):
            evs = [e for e in pod_events(facts, p.namespace, p.name) if e.reason == "FailedScheduling"]
            out[(p.namespace, p.name)] = _Waiting(p.namespace, p.name, p.gpu_request or None,
                                                  [pod_evidence(p, extra=f"PodScheduled: {p.scheduled_message}")]
                                                  + [event_evidence(e) for e in evs[:1]], p.scheduled_message or "")
    for e in facts.k8s_events:
        if e.object_kind != "Pod" or e.reason != "FailedScheduling" or _INSUFFICIENT not in e.message:
            continue
        key = event_pod_key(facts, e)
        pod = known.get(key)
        if key in out or (pod is not None and (pod.node or pod.phase != "Pending")):
            continue  # already counted, or scheduled since
        out[key] = _Waiting(key[0], key[1], pod.gpu_request if pod else None, [event_evidence(e)], e.message)
    return list(out.values())


def _blocked_by(node: K8sNode, used: int, need: int | None) -> bool:
    """Would this pod fit on ``node`` if its unhealthy GPUs were healthy (and does it not fit now)?"""
    if node.ready_status != "True" or node.unschedulable:
        return False
    cap, alloc = node.capacity_gpu or 0, node.allocatable_gpu or 0
    need = need or 1
    return cap - used >= need > alloc - used


def _capacity_finding(pods: list[_Waiting], cfg: K8sGpuCapacityConfig, strength: str, message: str,
                      advice: str, *, corroborated: bool = False) -> Finding:
    return Finding(
        check="k8s_gpu_capacity", root_cause="insufficient_gpu_capacity", message=message,
        culprits=[pod_culprit((w.namespace, w.name)) for w in pods[: cfg.max_pod_culprits]],
        evidence=[ev for w in pods[:3] for ev in w.evidence][:5], strength=strength,  # type: ignore[arg-type]
        confidence=strength_confidence(strength, corroborated=corroborated),  # type: ignore[arg-type]
        suggested_actions=[ActionSpec(type="notify_owner", pod=w.name, namespace=w.namespace,
                                      reason=f"pod waits for {w.gpus or 'more'} GPU(s): {advice}") for w in pods[:5]],
    )


def check_k8s_gpu_capacity(facts: Facts, cfg: K8sGpuCapacityConfig) -> list[Finding]:
    """Findings for pods Pending with ``Insufficient nvidia.com/gpu``.

    Per degraded node (allocatable nvidia.com/gpu < capacity, Ready, not cordoned) whose unhealthy
    GPUs are what keeps a pending pod out: gpu_hardware_fault when a hardware Xid is seen on the node
    (kernel log, DCGM, node events; action cordon_node for repair), else device_plugin_failure
    (action run_gpu_diagnostic: confirm the GPU before the plugin is restarted to re-advertise it);
    culprits the node then the pods. Pending pods no degraded node explains: insufficient_gpu_capacity with
    notify_owner per pod — at high confidence when a pod requests more GPUs than any node's capacity
    (it can never fit), otherwise with the cluster's free-GPU totals.

    Sources: k8s-json pods (phase, PodScheduled condition, GPU requests) and nodes (capacity,
    allocatable); FailedScheduling events; kernel-log / DCGM Xids.
    """
    used = {n.name: sum(p.gpu_request for p in active_pods_on(facts, n.name)) for n in facts.k8s_nodes}
    open_nodes = [n for n in facts.k8s_nodes if n.ready_status == "True" and not n.unschedulable]
    # A pod that fits on a schedulable node now (GPUs freed since the scheduler's last try) is about
    # to be placed; its FailedScheduling message is stale, not a fault.
    # Unless the scheduler said nodes are out because the pod's volume is bound to another zone's nodes: then the
    # GPUs that would fit are not the pod's to take.
    waiting = [w for w in _waiting_pods(facts)
               if _EXCLUDED.search(w.message)
               or not any((n.allocatable_gpu or 0) - used[n.name] >= (w.gpus or 1) for n in open_nodes)]
    findings: list[Finding] = []
    # The autoscaler is adding a node for it: waiting for capacity that is on its way is normal.
    scaling = {(w.namespace, w.name): ev for w in waiting
               if (ev := scale_up_in_progress(pod_events(facts, w.namespace, w.name), facts.captured_at))}
    if scaling:
        findings.append(Finding(
            check="k8s_gpu_capacity", root_cause="healthy",
            message=f"{len(scaling)} pod(s) Pending for GPUs while the cluster autoscaler adds a node for them: "
                    + clip(next(iter(scaling.values())).message, 160),
            culprits=[], evidence=[event_evidence(e) for e in list(scaling.values())[:3]],
            strength="state", confidence=0.3))
        waiting = [w for w in waiting if (w.namespace, w.name) not in scaling]
    if not waiting:
        return findings
    degraded = [n for n in facts.k8s_nodes
                if n.capacity_gpu is not None and (n.allocatable_gpu or 0) < n.capacity_gpu]
    explained: set[tuple[str, str]] = set()
    for node in degraded:
        blocked = [w for w in waiting if _blocked_by(node, used[node.name], w.gpus)]
        if not blocked:
            continue
        explained |= {(w.namespace, w.name) for w in blocked}
        xids = xid_evidence(facts, node.name, hardware_xids=cfg.hardware_xids)
        soft = other_xids(facts, node.name, hardware_xids=cfg.hardware_xids)
        lost = (node.capacity_gpu or 0) - (node.allocatable_gpu or 0)
        if xids:
            cause, why = "gpu_hardware_fault", "after a GPU hardware Xid"
            actions = [] if node.unschedulable else [ActionSpec(type="cordon_node", node=node.name,
                                                                reason=f"{lost} GPU(s) unhealthy after hardware Xid")]
        elif (plugins := unregistered_plugins(facts, node.name)) and not node.allocatable_gpu:
            # The plugin is not registered with the kubelet: no GPU was judged at all, none is suspect.
            cause, why = "device_plugin_failure", f"its device plugin {plugins[0][0].ref} cannot register with the kubelet"
            actions = [ActionSpec(type="evict_pod", pod=plugins[0][0].name, namespace=plugins[0][0].namespace,
                                  reason="restart the device plugin so it registers with the kubelet again")]
        else:
            cause = "device_plugin_failure"
            why = (f"after Xid {', '.join(map(str, soft))}, not a hardware Xid" if soft
                   else "with no Xid seen")
            actions = [ActionSpec(type="run_gpu_diagnostic", node=node.name,
                                  reason="confirm the GPU is healthy before the device plugin re-advertises it")]
        findings.append(Finding(
            check="k8s_gpu_capacity", root_cause=cause,
            message=(f"{len(blocked)} pod(s) Pending on {_INSUFFICIENT}; node {node.name} advertises "
                     f"{node.allocatable_gpu or 0} allocatable of {node.capacity_gpu} GPUs ("
                     + (f"{lost} withheld: {why}" if why.startswith("its device plugin") else
                        f"{lost} marked unhealthy by the device plugin {why}")
                     + f"); with them healthy the pod would fit ({used[node.name]} in use)"),
            culprits=[node_culprit(node.name), *[pod_culprit((w.namespace, w.name)) for w in blocked[: cfg.max_pod_culprits]]],
            evidence=[node_evidence(node, extra=f"{lost} GPU(s) not allocatable"), *xids[:3],
                      *[ev for w in blocked[:2] for ev in w.evidence]],
            strength="direct" if xids else "state",
            confidence=strength_confidence("direct" if xids else "state", corroborated=bool(xids or soft)),
            suggested_actions=actions,
        ))
    rest = [w for w in waiting if (w.namespace, w.name) not in explained]
    biggest = max((n.capacity_gpu or 0 for n in facts.k8s_nodes), default=0)
    never = [w for w in rest if facts.k8s_nodes and (w.gpus or 0) > biggest]
    if never:
        findings.append(_capacity_finding(
            never, cfg, "state", corroborated=True, message=
            f"{len(never)} pod(s) Pending on {_INSUFFICIENT} request more GPUs than any node has: "
            f"{max(w.gpus or 0 for w in never)} requested, largest node capacity {biggest} "
            f"(threshold {biggest}); they can never be scheduled as written",
            advice="the pod asks for more GPUs than any single node has; split it across pods/nodes"))
    rest = [w for w in rest if w not in never]
    if rest:
        ready = [n for n in facts.k8s_nodes if n.ready_status == "True" and not n.unschedulable and n.allocatable_gpu]
        free = sum(max((n.allocatable_gpu or 0) - used[n.name], 0) for n in ready)
        largest = max((max((n.allocatable_gpu or 0) - used[n.name], 0) for n in ready), default=0)
        need = max((w.gpus or 0 for w in rest), default=0)
        totals = (f"; schedulable nodes have {free} free GPU(s), at most {largest} on one node, "
                  f"largest request {need}") if facts.k8s_nodes else "; node objects not collected"
        held = _cordoned_unexplained(facts, used, need)
        if held:
            findings.append(_held_by_cordon(facts, held, rest, used))
            return findings  # the capacity is there, behind a cordon nobody explained: that is the question
        findings.append(_capacity_finding(
            rest, cfg, "state" if facts.k8s_nodes else "heuristic", message=
            f"{len(rest)} pod(s) Pending on {_INSUFFICIENT} (threshold 1){totals}: {rest[0].message[:160]}",
            advice="the GPUs it needs are in use; it starts when they free up"))
    return findings


def _cordoned_unexplained(facts: Facts, used: dict[str, int], need: int) -> list[K8sNode]:
    """Ready nodes that are cordoned (spec.unschedulable) with enough free GPUs for the largest waiting request,
    and nothing read that says why: no taint besides the cordon's own, no node event naming a reason."""
    out: list[K8sNode] = []
    for n in facts.k8s_nodes:
        if n.ready_status != "True" or not n.unschedulable or (n.allocatable_gpu or 0) - used[n.name] < max(need, 1):
            continue
        taints = [t for t in n.taints if t.key != "node.kubernetes.io/unschedulable"]
        said = [e for e in node_events(facts, n.name) if e.reason not in ("NodeNotSchedulable", "NodeSchedulable")]
        if not taints and not said:
            out.append(n)
    return out


def _held_by_cordon(facts: Facts, held: list[K8sNode], waiting: list[_Waiting], used: dict[str, int]) -> Finding:
    """inconclusive: the waiting pods would fit on cordoned nodes, and why those were cordoned is not recorded
    (a GPU fault someone saw, or a person's mistake): read-only, nothing uncordoned on a guess."""
    crashed = [(p, c) for n in held for p in facts.pods_on(n.name) for c in p.containers
               if (c.exit_code not in (None, 0) and c.state == "terminated")
               or c.last_terminated_exit_code not in (None, 0)]
    names = ", ".join(n.name for n in held[:3])
    free = sum((n.allocatable_gpu or 0) - used[n.name] for n in held)
    return Finding(
        check="k8s_gpu_capacity", root_cause="inconclusive",
        message=f"{len(waiting)} pod(s) Pending on {_INSUFFICIENT} would fit on {names}, cordoned with {free} free "
                "GPU(s), and nothing read says who cordoned it or why (no taint, reason or node event)"
                + (f"; a container on it ended non-zero before: {crashed[0][0].namespace}/{crashed[0][0].name}"
                   if crashed else "")
                + ": check its GPUs and ask who cordoned it before uncordoning",
        culprits=[node_culprit(n.name) for n in held[:3]],
        evidence=[node_evidence(n) for n in held[:3]] + [ev for w in waiting[:2] for ev in w.evidence][:3],
        strength="state", confidence=strength_confidence("state"),
    )
