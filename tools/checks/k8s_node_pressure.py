"""check_k8s_node_pressure: a node whose kubelet is evicting pods because its disk (nodefs / imagefs) or memory
ran low — the DiskPressure / MemoryPressure condition, the pressure taint that keeps new pods off, and the pods
it evicted ("The node was low on resource: ephemeral-storage"). The evicted pods are victims of the node's state;
the node is the culprit. When the image garbage collector finds nothing eligible to free, the images are still
used by pods that exist on the node (completed ones included), which a person has to clean up.

Source: the Kubernetes "Node-pressure Eviction" and "Garbage Collection" docs (tools.knowledge.k8s_pressure).
"""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig, kernel_evidence
from tools.checks.k8s_evidence import event_evidence, event_pod_key, node_culprit, node_evidence, node_events, pod_culprit, \
    pod_evidence
from tools.checks.k8s_placement import pending_unscheduled, untolerated
from tools.facts import Facts
from tools.knowledge.k8s_pressure import OWN_LIMIT_EVICTED, IMAGE_GC_FAILED, PRESSURE_CAUSES, RECLAIM_EVENTS, cause_of_resource, \
    eviction_resource
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.platform import node_ref, take_out_of_service

__all__ = ["K8sNodePressureConfig", "check_k8s_node_pressure"]

_TAINTS = {"storage_full": "node.kubernetes.io/disk-pressure", "host_oom": "node.kubernetes.io/memory-pressure"}


class K8sNodePressureConfig(CheckConfig):
    """How many pods to name."""

    max_pod_culprits: int = 10
    history_h: float = 24.0
    """Evictions whose pressure condition cleared at least this long before the capture are history: the Failed
    pods are records the kubelet keeps until someone deletes them, not a current fault."""


def _evictions(facts: Facts) -> dict[tuple[str, str], list[tuple[str, Evidence]]]:
    """(node, cause) -> [(pod culprit, evidence)] for pods the kubelet evicted for a disk or memory signal."""
    out: dict[tuple[str, str], list[tuple[str, Evidence]]] = defaultdict(list)
    seen: set[str] = set()
    for p in facts.k8s_pods:
        res = eviction_resource(p.status_message or "") if p.status_reason == "Evicted" else None
        cause = cause_of_resource(res) if res else None
        if cause and p.node and pod_culprit(p) not in seen:
            seen.add(pod_culprit(p))
            out[(p.node, cause)].append((pod_culprit(p), pod_evidence(p, extra=f"Evicted: {p.status_message}")))
    for e in facts.k8s_events:
        res = eviction_resource(e.message) if e.reason == "Evicted" and e.object_kind == "Pod" else None
        cause = cause_of_resource(res) if res else None
        key = event_pod_key(facts, e)
        pod = next((p for p in facts.k8s_pods if (p.namespace, p.name) == key and p.node), None)
        node = e.source_host or (pod.node if pod else None)
        if cause and node and pod_culprit(key) not in seen:
            seen.add(pod_culprit(key))
            out[(node, cause)].append((pod_culprit(key), event_evidence(e)))
    return out


def check_k8s_node_pressure(facts: Facts, cfg: K8sNodePressureConfig) -> list[Finding]:
    """storage_full (DiskPressure, ephemeral-storage / nodefs / imagefs evictions) or host_oom (MemoryPressure,
    memory evictions) per node. Culprits the node, the pods it evicted, and Pending pods kept off it by the
    pressure taint; action cordon_node while the condition holds (the kubelet's own taint lifts as soon as it has
    reclaimed a little, and the pods come back to the same full disk). Evictions with the condition since cleared
    are reported at symptom strength, with no action.

    Evidence strength: state (the node condition / the kubelet's evictions), corroborated by both, or by the
    kubelet's reclaim events and log lines (EvictionThresholdMet, FreeDiskSpaceFailed, image GC failures).
    Sources: k8s-json nodes (conditions, taints) and pods (status.reason Evicted), kubelet events, the node's
    kubelet journal (kernel-log).
    """
    evicted = _evictions(facts)
    current = {(n.name, PRESSURE_CAUSES[c.type][0]): c for n in facts.k8s_nodes for c in n.conditions
               if c.type in PRESSURE_CAUSES and c.status == "True"}
    findings = []
    for node, cause in sorted(set(current) | set(evicted)):
        k = facts.k8s_node(node)
        cond = current.get((node, cause))
        victims = evicted.get((node, cause), [])
        reclaim = [e for e in node_events(facts, node) if e.reason in RECLAIM_EVENTS]
        gc_lines = [ev for ev in facts.kernel_events_on(node) if IMAGE_GC_FAILED.search(ev.message)]
        gc_failed = bool(gc_lines) or any(IMAGE_GC_FAILED.search(e.message) for e in reclaim)
        taint = _TAINTS[cause]
        blocked = [p for p in pending_unscheduled(facts) if k is not None and any(
            t.key == taint for t in untolerated(p.placement, k))]
        what = PRESSURE_CAUSES["DiskPressure" if cause == "storage_full" else "MemoryPressure"][1]
        parts = [f"node {node} {'is under' if cond else 'was under'} {cond.type if cond else 'pressure'} "
                 f"({what} below the kubelet's eviction threshold)"]
        if victims:
            parts.append(f"the kubelet evicted {len(victims)} pod(s)")
        if gc_failed:
            done = [p.name for p in facts.pods_on(node) if p.phase == "Succeeded"]
            parts.append("image garbage collection found nothing eligible to free (images still used by pods that "
                         f"exist on the node{', e.g. ' + str(len(done)) + ' completed pod(s) nobody deleted' if done else ''})")
        if blocked:
            parts.append(f"{len(blocked)} Pending pod(s) kept off it by taint {taint}")
        evidence: list[Evidence] = ([node_evidence(k, extra=f"{cond.type}={cond.status} ({cond.reason or ''})")]
                                    if k is not None and cond else [])
        evidence += [ev for _, ev in victims[:2]] + [event_evidence(e) for e in reclaim[:2]] + \
            [kernel_evidence(ev) for ev in gc_lines[:1]]
        strength = "state" if cond or victims else "symptom"
        cleared = _cleared_hours(facts, k, cause) if not cond and victims and not blocked else None
        if cleared is not None and cleared >= cfg.history_h:
            findings.append(Finding(
                check="k8s_node_pressure", root_cause="healthy",
                message=f"node {node} was under pressure ({what}) and the kubelet evicted {len(victims)} pod(s), but "
                        f"the condition cleared {cleared:.0f} h before the capture: the Failed/Evicted pods are records "
                        "kept until someone deletes them (kubectl delete pod --field-selector=status.phase=Failed)",
                culprits=[], evidence=[ev for _, ev in victims[:2]], strength="state", confidence=0.3,
            ))
            continue
        findings.append(Finding(
            check="k8s_node_pressure", root_cause=cause,  # type: ignore[arg-type]
            message="; ".join(parts),
            culprits=[node_culprit(node), *[c for c, _ in victims[: cfg.max_pod_culprits]],
                      *[pod_culprit(p) for p in blocked[:3]]],
            evidence=evidence[:6], strength=strength,
            confidence=confidence(strength, corroborated=bool(cond) and bool(victims or reclaim or gc_lines)),
            suggested_actions=take_out_of_service(facts, node_ref(facts, node), f"node {what} exhausted: kubelet evicting pods")
            if cond else [],
        ))
    return findings + _over_own_limit(facts)


def _cleared_hours(facts: Facts, node: object, cause: str) -> float | None:
    """Hours since the node's pressure condition for ``cause`` turned False (its lastTransitionTime), or None."""
    for c in getattr(node, "conditions", []):
        if c.type in PRESSURE_CAUSES and PRESSURE_CAUSES[c.type][0] == cause and c.status == "False" \
                and c.last_transition_time is not None:
            return (facts.captured_at - c.last_transition_time).total_seconds() / 3600
    return None


def _over_own_limit(facts: Facts) -> list[Finding]:
    """storage_full per pod the kubelet evicted for going over its own ephemeral-storage limit (status or
    Evicted event): culprit the pod, action notify_owner; its node is fine and is not taken out of service."""
    found: dict[str, tuple[str, str, Evidence]] = {}
    replacements: dict[str, list[str]] = {}
    pending_by_owner: dict[tuple[str, str], list[str]] = {}  # one pass, not one per evicted pod
    for q in facts.k8s_pods:
        if q.phase == "Pending" and q.owner_name:
            pending_by_owner.setdefault((q.namespace, q.owner_name), []).append(pod_culprit(q))
    for p in facts.k8s_pods:
        if p.status_reason == "Evicted" and OWN_LIMIT_EVICTED.search(p.status_message or ""):
            found.setdefault(p.ref, (p.namespace, p.name, pod_evidence(p, extra=f"Evicted: {p.status_message}")))
            # Its controller's new pod, Pending: it lost the GPUs the evicted pod held to whoever came first.
            replacements[p.ref] = pending_by_owner.get((p.namespace, p.owner_name), []) if p.owner_name else []
    for e in facts.k8s_events:
        if e.reason == "Evicted" and e.object_kind == "Pod" and OWN_LIMIT_EVICTED.search(e.message):
            ns, name = event_pod_key(facts, e)
            found.setdefault(f"{ns}/{name}", (ns, name, event_evidence(e)))
    return [Finding(
        check="k8s_node_pressure", root_cause="storage_full",
        message=f"pod {ref} was evicted for writing more than its own ephemeral-storage limit (its container "
                "filesystem, logs and emptyDir volumes); write checkpoints and data to a volume instead",
        culprits=[f"pod:{ref}", *replacements.get(ref, [])[:3]], evidence=[ev], strength="state",
        confidence=confidence("state"),
        suggested_actions=[ActionSpec(type="notify_owner", pod=name, namespace=ns,
                                      reason="evicted over its ephemeral-storage limit")],
    ) for ref, (ns, name, ev) in sorted(found.items())]
