"""check_k8s_pod_spec_unschedulable: Pending pods whose own spec keeps them off every node that could run them —
a nodeSelector or required node affinity no node satisfies (a typo in a label value), or a missing toleration
for the taint that dedicates the nodes with free GPUs. Nothing on the cluster is broken: the owner fixes the spec.

Reasoning as kube-scheduler's NodeAffinity and TaintToleration filters (tools.checks.k8s_placement): a pod that
some Ready, schedulable node would take now is not stuck on its spec; one whose selector matches no node at all
is, unless the labels it asks for are GPU feature discovery's and a GPU node lacks them altogether (then GFD is
at fault: k8s_gpu_feature_labels); one kept off the nodes with room only by a taint that dedicates them (the
extended-resource key ``nvidia.com/gpu`` per ExtendedResourceToleration, or a taint other running workloads
there tolerate) lacks its toleration. Taints that are a node's state (not-ready, disk-pressure, cordon) are
never the pod's mistake. Without node objects, a FailedScheduling message in which every node failed the
selector (or one dedication taint) says the same at lower strength.
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict

from tools.checks.base import CheckConfig, clip
from tools.checks.k8s_evidence import event_evidence, event_pod_key, pod_culprit, pod_evidence, pod_events
from tools.checks.k8s_placement import free_gpus, has_constraints, pending_unscheduled, selector_matches, spec_taints, \
    unmet_requirements, untolerated
from tools.facts import Facts
from tools.knowledge.k8s_scheduling import is_node_state_taint, read_failed_scheduling
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.k8s import GPU_RESOURCE, K8sNode, K8sPod

__all__ = ["K8sPodSpecConfig", "check_k8s_pod_spec_unschedulable"]


class K8sPodSpecConfig(CheckConfig):
    """Which labels a GPU feature discovery failure can take away, and how many pods to name."""

    gfd_label_prefixes: tuple[str, ...] = ("nvidia.com/gpu.", "nvidia.com/cuda.", "nvidia.com/mig.")
    max_pod_culprits: int = 10


def _values_of(nodes: list[K8sNode], key: str) -> Counter[str]:
    return Counter(n.labels[key] for n in nodes if key in n.labels)


def _selector_story(pod: K8sPod, nodes: list[K8sNode]) -> str:
    """What the selector asks for and what the nodes have instead (with the closest value, for a typo)."""
    wanted = dict(pod.placement.node_selector)
    for term in pod.placement.affinity_terms[:1]:
        wanted.update({r.key: r.values[0] for r in term.match_expressions if r.operator == "In" and len(r.values) == 1})
    parts = []
    for key, value in list(wanted.items())[:3]:
        have = _values_of(nodes, key)
        if not have:
            parts.append(f"no node has label {key}")
            continue
        close = difflib.get_close_matches(value, list(have), n=1, cutoff=0.6)
        seen = ", ".join(f"{v} ×{c}" for v, c in have.most_common(3))
        parts.append(f"{key}={value} is on no node (nodes have {seen})" + (f"; closest: {close[0]}" if close else ""))
    asked = unmet_requirements(pod.placement, nodes[0]) if nodes else []
    return "; ".join(parts) or f"required node affinity ({', '.join(asked[:2])}) matches no node"


def _gfd_missing(pod: K8sPod, nodes: list[K8sNode], cfg: K8sPodSpecConfig) -> bool:
    """The selector's unmet labels are GPU feature discovery's and some GPU node lacks them altogether."""
    keys = set(pod.placement.node_selector) | {r.key for t in pod.placement.affinity_terms for r in t.match_expressions}
    gfd = {k for k in keys if k.startswith(cfg.gfd_label_prefixes)}
    return bool(gfd) and any(n.is_gpu_node and not any(k in n.labels for k in gfd) for n in nodes)


def _dedicated(facts: Facts, pod: K8sPod, nodes: list[K8sNode], taints: set[tuple[str, str | None, str | None]]) -> bool:
    """The taints dedicate those nodes to a kind of work the pod is: the key is an extended resource the pod
    requests (ExtendedResourceToleration's convention), or other workloads running there tolerate them."""
    if pod.gpu_request and any(k == GPU_RESOURCE for k, _, _ in taints):
        return True
    return any(p.phase == "Running" and p.owner_kind != "DaemonSet" and not spec_taints(untolerated(p.placement, n))
               for n in nodes for p in facts.pods_on(n.name))


def _judge(facts: Facts, pod: K8sPod, cfg: K8sPodSpecConfig) -> tuple[str, list[Evidence]] | None:
    """Why the pod's spec (not the cluster) keeps it Pending, with evidence; None when it does not."""
    nodes = facts.k8s_nodes
    ready = [n for n in nodes if n.ready_status == "True" and not n.unschedulable]
    pl = pod.placement
    need = pod.gpu_request

    def room(n: K8sNode) -> bool:
        return need == 0 or free_gpus(facts, n) >= need

    if any(selector_matches(pl, n) and not untolerated(pl, n) and room(n) for n in ready):
        return None  # a node takes it now: the scheduler's message is stale
    if has_constraints(pl) and not any(selector_matches(pl, n) for n in nodes):
        if _gfd_missing(pod, nodes, cfg):
            return None  # the labels are missing from a GPU node: GPU feature discovery's failure
        roomy = sum(1 for n in ready if room(n))
        return (f"its node selector matches none of the {len(nodes)} nodes: {_selector_story(pod, nodes)}"
                + (f"; {roomy} node(s) have room for it ({need} GPU(s))" if need and roomy else ""),
                [pod_evidence(pod, extra=f"nodeSelector {pl.node_selector}" if pl.node_selector else "required node affinity")])
    blocked = [n for n in ready if selector_matches(pl, n) and room(n) and untolerated(pl, n)
               and not any(is_node_state_taint(t.key) for t in untolerated(pl, n))]
    taints = {(t.key, t.value, t.effect) for n in blocked for t in untolerated(pl, n)}
    if not blocked or not _dedicated(facts, pod, blocked, taints):
        return None
    shown = ", ".join(f"{k}={v}:{e}" if v else f"{k}:{e}" for k, v, e in sorted(taints, key=str)[:2])
    tolerating = sorted({p.owner_name or p.name for n in blocked for p in facts.pods_on(n.name)
                         if p.phase == "Running" and p.owner_kind != "DaemonSet" and not spec_taints(untolerated(p.placement, n))})
    names = ", ".join(n.name for n in blocked[:3]) + (", …" if len(blocked) > 3 else "")
    return (f"{len(blocked)} node(s) with room for it ({names}) carry taint {shown}, "
            f"which the pod does not tolerate" + (f" (running there, {', '.join(tolerating[:2])} tolerate it)" if tolerating else "")
            + "; the other nodes lack what it requests",
            [pod_evidence(pod, extra=f"tolerations: {[t.key for t in pl.tolerations] or 'none'}")])


def _from_events(facts: Facts, known: set[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, list[Evidence]]]:
    """Pods seen only in FailedScheduling events whose every node failed the selector or one dedication taint."""
    out: dict[tuple[str, str], tuple[str, list[Evidence]]] = {}
    for e in facts.k8s_events:
        if e.object_kind != "Pod" or e.reason != "FailedScheduling":
            continue
        key = event_pod_key(facts, e)
        verdict = read_failed_scheduling(e.message)
        if key in known or key in out or verdict is None or not verdict.total:
            continue
        taints = {r.taint_key for r in verdict.reasons if r.kind == "taint"}
        if verdict.excluded_by("selector") == verdict.total:
            out[key] = (f"every one of the {verdict.total} nodes fails its node selector (scheduler; node objects "
                        "not read)", [event_evidence(e)])
        elif verdict.excluded_by("taint") == verdict.total and len(taints) == 1 and None not in taints \
                and not is_node_state_taint(next(iter(taints)) or ""):
            out[key] = (f"every one of the {verdict.total} nodes has taint {next(iter(taints))}, which it does not "
                        "tolerate (scheduler; node objects not read)", [event_evidence(e)])
    return out


def check_k8s_pod_spec_unschedulable(facts: Facts, cfg: K8sPodSpecConfig) -> list[Finding]:
    """user_code_error per workload whose Pending pods are kept off every usable node by their own spec (see the
    module docstring). Culprits the pods (file order); action notify_owner of the first pod — no node is cordoned
    or drained, nothing on the cluster is at fault.

    Evidence strength: state (pod spec against node objects), corroborated when the scheduler's message names
    the same reason; symptom when only FailedScheduling events were read.
    Sources: k8s-json pods (nodeSelector, affinity, tolerations, GPU requests) and nodes (labels, taints,
    allocatable); FailedScheduling events (k8s-json or k8s-events-text, any kube-scheduler version).
    """
    groups: dict[tuple, list[tuple[K8sPod | tuple[str, str], str, list[Evidence], bool]]] = defaultdict(list)
    pods = pending_unscheduled(facts) if facts.k8s_nodes else []
    for pod in pods:
        judged = _judge(facts, pod, cfg)
        if judged is None:
            continue
        why, evidence = judged
        evs = [e for e in pod_events(facts, pod.namespace, pod.name) if e.reason == "FailedScheduling"]
        said = " ".join([pod.scheduled_message or ""] + [e.message for e in evs])
        verdict = read_failed_scheduling(said)
        agrees = verdict is not None and bool(verdict.excluded_by("selector") or verdict.excluded_by("taint"))
        evidence += [event_evidence(e) for e in evs[:1]]
        groups[(pod.namespace, pod.owner_kind, pod.owner_name or pod.name, why.split(":")[0])].append((pod, why, evidence, agrees))
    for (ns, name), (why, evidence) in _from_events(facts, {(p.namespace, p.name) for p in pods}).items():
        groups[(ns, None, name, "events")].append(((ns, name), why, evidence, False))
    findings = []
    for (ns, owner_kind, owner, _), members in groups.items():
        first, why, _, _ = members[0]
        seen = bool(facts.k8s_nodes) and isinstance(first, K8sPod)
        strength = "state" if seen else "symptom"
        who = f"{len(members)} pod(s) of {owner_kind} {ns}/{owner}" if owner_kind else f"pod {ns}/{owner}"
        first_name = first.name if isinstance(first, K8sPod) else first[1]
        findings.append(Finding(
            check="k8s_pod_spec_unschedulable", root_cause="user_code_error",
            message=f"{who} Pending because of its own spec: {why}",
            culprits=[pod_culprit(m[0]) for m in members[: cfg.max_pod_culprits]],
            evidence=[ev for m in members[:2] for ev in m[2]][:5],
            strength=strength, confidence=confidence(strength, corroborated=seen and any(m[3] for m in members)),
            suggested_actions=[ActionSpec(type="notify_owner", pod=first_name, namespace=ns,
                                          reason=clip(f"pod spec keeps it off every usable node: {why}", 240))],
        ))
    return findings
