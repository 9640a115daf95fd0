"""Where a pod may run: its nodeSelector, required node affinity and tolerations matched against nodes, as
kube-scheduler's NodeAffinity and TaintToleration filters do, and the GPUs a node has free. Not a check itself;
``k8s_*`` checks import it. Everything here reads Facts only.

Matching follows the Kubernetes API reference: every nodeSelector label must be on the node with that value;
node-affinity terms are ORed, a term's requirements ANDed (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``,
``Gt``, ``Lt``; ``matchFields`` on ``metadata.name``); a taint with effect NoSchedule or NoExecute keeps out a
pod without a toleration matching its key (or an empty key with ``Exists``), value (``Equal``) and effect.
"""

from __future__ import annotations

from tools.checks.k8s_evidence import active_pods_on
from tools.facts import Facts
from tools.knowledge.k8s_scheduling import is_node_state_taint
from tools.models.k8s import K8sNode, K8sPlacement, K8sPod, K8sSelectorRequirement, K8sTaint, K8sToleration

__all__ = ["requirement_met", "selector_matches", "unmet_requirements", "untolerated", "tolerates", "free_gpus",
           "pending_unscheduled", "has_constraints", "spec_taints"]

_BLOCKING = ("NoSchedule", "NoExecute")


def requirement_met(req: K8sSelectorRequirement, labels: dict[str, str]) -> bool:
    """One matchExpressions requirement against a node's labels (unknown operators never match)."""
    value = labels.get(req.key)
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and req.values:
        try:
            have, want = int(value), int(req.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _term_met(term, node: K8sNode) -> bool:
    fields = {"metadata.name": node.name}
    return all(requirement_met(r, node.labels) for r in term.match_expressions) and \
        all(requirement_met(r, fields) for r in term.match_fields)


def selector_matches(placement: K8sPlacement, node: K8sNode) -> bool:
    """Whether the node satisfies the pod's nodeSelector and required node affinity."""
    if any(node.labels.get(k) != v for k, v in placement.node_selector.items()):
        return False
    return not placement.affinity_terms or any(_term_met(t, node) for t in placement.affinity_terms)


def unmet_requirements(placement: K8sPlacement, node: K8sNode) -> list[str]:
    """What the node lacks, as ``key=value`` (nodeSelector) or ``key In [a, b]`` (the first affinity term's)."""
    out = [f"{k}={v}" for k, v in placement.node_selector.items() if node.labels.get(k) != v]
    if placement.affinity_terms and not any(_term_met(t, node) for t in placement.affinity_terms):
        out += [f"{r.key} {r.operator} [{', '.join(r.values)}]".replace(" []", "")
                for r in placement.affinity_terms[0].match_expressions if not requirement_met(r, node.labels)]
    return out


def has_constraints(placement: K8sPlacement) -> bool:
    """Whether the pod asks for particular nodes at all."""
    return bool(placement.node_selector or placement.affinity_terms)


def tolerates(tol: K8sToleration, taint: K8sTaint) -> bool:
    """Whether one toleration tolerates one taint."""
    if tol.effect and taint.effect and tol.effect != taint.effect:
        return False
    if tol.key is None:
        return tol.operator == "Exists"
    if tol.key != taint.key:
        return False
    return tol.operator == "Exists" or (tol.value or "") == (taint.value or "")


def untolerated(placement: K8sPlacement, node: K8sNode) -> list[K8sTaint]:
    """The node's NoSchedule / NoExecute taints the pod does not tolerate (node-state taints included)."""
    return [t for t in node.taints if t.effect in _BLOCKING and not any(tolerates(x, t) for x in placement.tolerations)]


def free_gpus(facts: Facts, node: K8sNode) -> int:
    """Allocatable ``nvidia.com/gpu`` minus what the node's unfinished pods request."""
    used = sum(p.gpu_request for p in active_pods_on(facts, node.name))
    return (node.allocatable_gpu or 0) - used


def pending_unscheduled(facts: Facts) -> list[K8sPod]:
    """Pods Pending with no node, the scheduler having turned them away (PodScheduled=False or a FailedScheduling
    event); one per namespace/name (a pod listed in two files counts once), in file order."""
    failed = {(e.object_namespace or e.namespace, e.object_name) for e in facts.k8s_events
              if e.object_kind == "Pod" and e.reason == "FailedScheduling"}
    names_failed = {n for _, n in failed}
    out: dict[tuple[str, str], K8sPod] = {}
    for p in facts.k8s_pods:
        if p.phase != "Pending" or p.node or (p.namespace, p.name) in out:
            continue
        turned_away = p.scheduled_reason == "Unschedulable" or (p.namespace, p.name) in failed or \
            ((None, p.name) in failed) or p.name in names_failed
        if turned_away:
            out[(p.namespace, p.name)] = p
    return list(out.values())


def spec_taints(taints: list[K8sTaint]) -> list[K8sTaint]:
    """Taints that dedicate a node (not the node-state ones)."""
    return [t for t in taints if not is_node_state_taint(t.key)]
