"""check_k8s_node_not_ready: a Kubernetes node whose kubelet is NotReady or stopped reporting."""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import active_pods_on, event_evidence, node_culprit, node_evidence, node_events, pod_culprit
from tools.facts import Facts
from tools.facts.queries import kernel_event_time
from tools.knowledge.precedence import confidence as strength_confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.k8s import K8sEvent

__all__ = ["K8sNodeNotReadyConfig", "check_k8s_node_not_ready"]


class K8sNodeNotReadyConfig(CheckConfig):
    """How long a node must have been NotReady before it is reported."""

    min_not_ready_s: float = 60.0
    """Seconds since the Ready condition's lastTransitionTime (kubelet heartbeats can blip)."""
    max_pod_culprits: int = 10


def _from_events(facts: Facts, cfg: K8sNodeNotReadyConfig, known: set[str]) -> list[Finding]:
    """Nodes seen only through events: a NodeNotReady newer than any NodeReady for the same node."""
    latest: dict[str, K8sEvent] = {}
    for e in facts.k8s_events:
        if e.object_kind != "Node" or not e.object_name or e.object_name in known:
            continue
        if e.reason not in ("NodeNotReady", "NodeReady"):
            continue
        cur = latest.get(e.object_name)
        if cur is None or _newer(e, cur, facts):
            latest[e.object_name] = e
    findings = []
    for name, e in latest.items():
        age = _age_s(e, facts)
        if e.reason != "NodeNotReady" or (age is not None and age < cfg.min_not_ready_s):
            continue
        pods = [p for p in active_pods_on(facts, name) if p.owner_kind != "DaemonSet"]
        age_txt = f"{age / 60:.0f} min ago" if age is not None else "at an unknown time"
        findings.append(Finding(
            check="k8s_node_not_ready", root_cause="node_unresponsive",
            message=f"node {name} reported NodeNotReady {age_txt} with no NodeReady since "
                    f"(threshold {cfg.min_not_ready_s:g} s; node object not collected)",
            culprits=[node_culprit(name), *[pod_culprit(p) for p in pods[: cfg.max_pod_culprits]]],
            evidence=[event_evidence(e)], strength="symptom", confidence=strength_confidence("symptom"),
            suggested_actions=[ActionSpec(type="cordon_node", node=name, reason="kubelet NotReady")],
        ))
    return findings


def _age_s(e: K8sEvent, facts: Facts) -> float | None:
    if e.last_timestamp is not None:
        return (facts.captured_at - e.last_timestamp).total_seconds()
    return e.last_seen_s


def _newer(a: K8sEvent, b: K8sEvent, facts: Facts) -> bool:
    aa, bb = _age_s(a, facts), _age_s(b, facts)
    return aa is not None and (bb is None or aa < bb)


SOFTWARE_NOT_READY = re.compile(
    r"NetworkPluginNotReady|cni plugin not initiali[sz]ed|cni config uninitiali[sz]ed|runtime network not ready",
    re.IGNORECASE)
"""Ready=False messages of a kubelet that runs but whose node network plugin (CNI) does not: node_software_fault,
not an unresponsive node. A runtime that is down or a PLEG that stopped (``container runtime is down, PLEG is not
healthy``) leaves the node unable to run or report anything: node_unresponsive, as before."""


def check_k8s_node_not_ready(facts: Facts, cfg: K8sNodeNotReadyConfig) -> list[Finding]:
    """node_unresponsive per Kubernetes node whose Ready condition is False or Unknown for at least
    ``min_not_ready_s``; its unfinished workload pods (GPU pods first; DaemonSet pods excluded) are
    culprits too. Proposes cordon_node unless the node
    is already cordoned. Nodes not collected as objects are judged from NodeNotReady / NodeReady
    events (lower confidence).

    Sources: k8s-json nodes (Ready condition, spec.unschedulable, taints) and pods (spec.nodeName);
    node events from k8s-json or k8s-events-text.
    """
    findings: list[Finding] = []
    for node in facts.k8s_nodes:
        if node.ready_status not in ("False", "Unknown"):
            continue
        since = node.ready_since
        age = (facts.captured_at - since).total_seconds() if since else None
        if age is not None and age < cfg.min_not_ready_s:
            continue
        # DaemonSet pods live on every node by design; the workloads stranded here are the others,
        # GPU pods first.
        pods = sorted((p for p in active_pods_on(facts, node.name) if p.owner_kind != "DaemonSet"),
                      key=lambda p: (not p.gpu_request, p.ref))
        gpu_pods = [p for p in pods if p.gpu_request]
        age_txt = f"for {age / 60:.0f} min" if age is not None else "(since unknown)"
        why = f"{node.ready_reason}: {node.ready_message}" if node.ready_reason else (node.ready_message or "no reason given")
        message = (f"node {node.name} Ready={node.ready_status} {age_txt} ({why}); threshold {cfg.min_not_ready_s:g} s; "
                   f"{len(pods)} workload pod(s) still bound to it ({len(gpu_pods)} using GPUs)")
        evidence = [node_evidence(node, extra=", ".join(f"taint {t.key}:{t.effect}" for t in node.taints))]
        evidence += [event_evidence(e) for e in node_events(facts, node.name) if e.reason == "NodeNotReady"][:3]
        evidence += [Evidence(text=f"pod {p.ref} phase={p.phase} on {node.name}", file=p.file) for p in pods[:3]]
        actions = [] if node.unschedulable else [ActionSpec(type="cordon_node", node=node.name, reason="kubelet NotReady")]
        # The kubelet answers and says what it lacks: the node's network plugin (CNI) or container runtime.
        software = bool(SOFTWARE_NOT_READY.search(why))
        if software:
            message = f"node {node.name}: kubelet up but its node software is not ready — " + message
        findings.append(Finding(
            check="k8s_node_not_ready", root_cause="node_software_fault" if software else "node_unresponsive",
            message=message,
            culprits=[node_culprit(node.name), *[pod_culprit(p) for p in pods[: cfg.max_pod_culprits]]],
            evidence=evidence, strength="state",
            confidence=strength_confidence("state", corroborated=node.ready_status == "Unknown"),
            suggested_actions=actions,
        ))
    findings += _from_events(facts, cfg, {n.name for n in facts.k8s_nodes})
    return findings + _network_ready_after_start(facts, cfg)


def _network_ready_after_start(facts: Facts, cfg: K8sNodeNotReadyConfig) -> list[Finding]:
    """healthy per node that is Ready now, has stayed Ready since a transition at least ``min_not_ready_s``
    ago, and whose kubelet's only error lines, all before that transition, said the network plugin was not
    ready yet (``cni plugin not initialized``): a node joining or rebooting waits for its CNI DaemonSet pod
    (calico-node, cilium) before it reports Ready. Names the node, whose start-up lines it explains."""
    out: list[Finding] = []
    for node in facts.k8s_nodes:
        since = node.ready_since
        if node.ready_status != "True" or since is None or (facts.captured_at - since).total_seconds() < cfg.min_not_ready_s:
            continue
        errors = [e for e in facts.kernel_events_on(node.name) if e.severity in ("err", "error", "crit", "alert", "emerg")]
        times = [kernel_event_time(facts, e) for e in errors]
        if not errors or not all(SOFTWARE_NOT_READY.search(e.message) and t is not None and t <= since
                                 for e, t in zip(errors, times)):
            continue
        waited = (since - min(t for t in times if t is not None)).total_seconds()
        out.append(Finding(
            check="k8s_node_not_ready", root_cause="healthy",
            message=f"node {node.name} waited {waited:.0f} s for its network plugin (CNI) at start-up, then went Ready "
                    f"at {since:%H:%M:%S} and has stayed Ready: the usual join or reboot sequence, not a fault",
            culprits=[node_culprit(node.name)], strength="state", confidence=strength_confidence("state", normal=True),
            evidence=[node_evidence(node)] + [Evidence(text=e.message[:200], file=e.file, line=e.line) for e in errors[:2]],
        ))
    return out
