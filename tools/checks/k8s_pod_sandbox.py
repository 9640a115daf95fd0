"""check_k8s_pod_sandbox: pods a node's kubelet cannot start because the node's container runtime or CNI fails to
create their sandbox — a RuntimeClass handler (``nvidia``) the runtime does not know after its config was
replaced, the NVIDIA container runtime missing, the CNI plugin failing. The pods sit in ContainerCreating while
the node stays Ready, so the scheduler keeps sending work there: the node's software, not the pods.

Sources: the kubelet's FailedCreatePodSandBox events (k8s-json or k8s-events-text, with the reporting host) and
its pod_workers "CreatePodSandboxError" log lines (kernel-log / journal of the node); the runtime error inside
is classified by tools.knowledge.k8s_runtime.
"""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig, kernel_evidence
from tools.checks.k8s_evidence import event_evidence, event_pod_key, node_culprit, pod_culprit
from tools.facts import Facts
from tools.knowledge.k8s_runtime import sandbox_problem
from tools.knowledge.precedence import confidence
from tools.models.findings import Evidence, Finding
from tools.platform import evict_hurt, node_ref, take_out_of_service

__all__ = ["K8sPodSandboxConfig", "check_k8s_pod_sandbox"]


class K8sPodSandboxConfig(CheckConfig):
    """How many pods to name."""

    max_pod_culprits: int = 10


def _pod_node(facts: Facts, ns: str, name: str) -> str | None:
    pod = next((p for p in facts.k8s_pods if p.name == name and p.namespace == ns), None)
    return pod.node if pod is not None else None


def check_k8s_pod_sandbox(facts: Facts, cfg: K8sPodSandboxConfig) -> list[Finding]:
    """node_software_fault per node whose kubelet reports sandbox failures a node-side cause explains (runtime
    handler missing, NVIDIA container runtime missing, CNI failing). Culprits the node, then the pods stuck there;
    action cordon_node (no more pods sent to a node that cannot start them). A pod whose sandbox later started (it
    runs now) is not counted.

    Evidence strength: state (the kubelet's own event), corroborated by a second stuck pod, a kubelet log line,
    or pods of the same workloads running on other nodes.
    """
    pods: dict[str, dict[tuple[str, str], Evidence]] = defaultdict(dict)
    what: dict[str, str] = {}
    for e in facts.k8s_events:
        if e.object_kind != "Pod" or not e.object_name:
            continue
        problem = sandbox_problem(e.message)
        if problem is None:
            continue
        key = event_pod_key(facts, e)
        pod = next((p for p in facts.k8s_pods if (p.namespace, p.name) == key), None)
        if pod is not None and pod.phase in ("Running", "Succeeded") and all(c.state == "running" for c in pod.containers):
            continue  # started since
        node = e.source_host or _pod_node(facts, *key)
        if node:
            pods[node].setdefault(key, event_evidence(e))
            what.setdefault(node, problem)
    logs: dict[str, list[Evidence]] = defaultdict(list)
    for ev in facts.kernel_events:
        if ev.node and (problem := sandbox_problem(ev.message)):
            logs[ev.node].append(kernel_evidence(ev))
            what.setdefault(ev.node, problem)
    findings = []
    for node in sorted(set(pods) | {n for n in logs if facts.k8s_node(n) is not None}):
        stuck = pods.get(node, {})
        ref = node_ref(facts, node)
        owners = {p.owner_name for p in facts.k8s_pods if (p.namespace, p.name) in stuck and p.owner_name}
        elsewhere = sorted({p.node for p in facts.k8s_pods if p.owner_name in owners and p.node and p.node != node
                            and p.phase == "Running"})
        message = (f"node {node}: {len(stuck)} pod(s) cannot start, the kubelet failing to create their sandbox: "
                   f"{what[node]}" + (f"; {len(logs[node])} kubelet log line(s) say the same" if logs.get(node) else "")
                   + (f"; pods of the same workloads run on {', '.join(elsewhere[:3])}" if elsewhere else ""))
        findings.append(Finding(
            check="k8s_pod_sandbox", root_cause="node_software_fault", message=message,
            culprits=[node_culprit(node), *[pod_culprit(k) for k in list(stuck)[: cfg.max_pod_culprits]]],
            evidence=[*list(stuck.values())[:3], *logs.get(node, [])[:2]],
            strength="state", confidence=confidence("state", corroborated=len(stuck) > 1 or bool(logs.get(node)) or bool(elsewhere)),
            suggested_actions=take_out_of_service(facts, ref, f"container runtime cannot create pod sandboxes: {what[node][:60]}")
            + evict_hurt([p for p in facts.k8s_pods if (p.namespace, p.name) in stuck and p.node == node], node,
                         "its sandbox cannot be created here; its controller places it elsewhere"),
        ))
    return findings
