"""check_k8s_quota_exceeded: a workload that cannot even create its pods because its namespace's ResourceQuota is
used up — the API server's admission rejects each create ("exceeded quota: gpu-quota, requested:
requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=28, limited: requests.nvidia.com/gpu=32") however many
GPUs the cluster has free. Like a Slurm association limit, this is a scheduling wait set by policy; the quota's
other holders are the namespace's own pods, which are not at fault.

A create rejected because the quota tracks a resource the pod template does not request ("failed quota: q: must
specify requests.nvidia.com/gpu") is the template's mistake instead: user_code_error.

Source: the Kubernetes "Resource Quotas" docs (quota on extended resources as ``requests.nvidia.com/gpu``; the
quota admission plugin's "exceeded quota" and "must specify" errors, surfaced by controllers as FailedCreate
events on the Job / ReplicaSet / StatefulSet / operator job).
"""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import event_evidence, event_namespace
from tools.checks.k8s_placement import free_gpus
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.findings import Evidence, Finding
from tools.models.k8s import K8sEvent
from tools.models.k8s_objects import K8sResourceQuota, K8sWorkload

__all__ = ["K8sQuotaConfig", "check_k8s_quota_exceeded", "read_quota_error"]

_EXCEEDED = re.compile(r"exceeded quota: ([\w.-]+), requested: (\S+), used: (\S+), limited: (\S+?)(?:$|[\s\"'])")
_MUST_SPECIFY = re.compile(r"failed quota: ([\w.-]+): must specify ([\w./,-]+)")
_GPU_QUOTA = ("requests.nvidia.com/gpu", "nvidia.com/gpu")


def read_quota_error(message: str) -> tuple[str, str, dict[str, str]] | None:
    """(quota name, ``exceeded`` | ``must_specify``, details) from an admission error; None when it is not one.
    For ``exceeded`` the details map ``requested`` / ``used`` / ``limited`` to their ``res=qty,...`` text."""
    m = _EXCEEDED.search(message)
    if m:
        return m.group(1), "exceeded", {"requested": m.group(2).rstrip(","), "used": m.group(3).rstrip(","),
                                        "limited": m.group(4).rstrip(",")}
    m = _MUST_SPECIFY.search(message)
    if m:
        return m.group(1), "must_specify", {"resources": m.group(2)}
    return None


class K8sQuotaConfig(CheckConfig):
    """Which quota resources count GPUs."""

    gpu_resources: tuple[str, ...] = _GPU_QUOTA


def _workload_culprit(kind: str | None, ns: str, name: str) -> str:
    return f"job:{ns}/{name}" if kind != "Pod" else f"pod:{ns}/{name}"


def _namespace_of(facts: Facts, name: str) -> str:
    """The namespace of the one workload of that name that was read, else ``default``."""
    found = {w.namespace for w in facts.k8s_workloads if w.name == name}
    return found.pop() if len(found) == 1 else "default"


def _quota_evidence(q: K8sResourceQuota, cfg: K8sQuotaConfig) -> list[Evidence]:
    out = []
    for res in cfg.gpu_resources:
        if res in q.hard:
            out.append(Evidence(text=f"ResourceQuota {q.namespace}/{q.name}: {res} used {q.used.get(res, 0):g} of "
                                     f"{q.hard[res]:g}", file=q.file))
    return out


def _cluster_free(facts: Facts) -> str:
    nodes = [n for n in facts.k8s_nodes if n.ready_status == "True" and not n.unschedulable and n.allocatable_gpu]
    if not nodes:
        return ""
    return f"; the cluster has {sum(max(free_gpus(facts, n), 0) for n in nodes)} GPU(s) free on schedulable nodes"


def _holders(facts: Facts, ns: str) -> str:
    pods = [p for p in facts.k8s_pods if p.namespace == ns and p.gpu_request and p.phase in ("Running", "Pending")]
    if not pods:
        return ""
    owners = sorted({p.owner_name or p.name for p in pods})
    return f"; {sum(p.gpu_request for p in pods)} GPU(s) of it held by {len(pods)} pod(s) of {ns} ({', '.join(owners[:3])}" \
           + (", …)" if len(owners) > 3 else ")")


def _quiet_workloads(facts: Facts, cfg: K8sQuotaConfig, seen: set[tuple[str, str]]) -> list[tuple[K8sWorkload, K8sResourceQuota]]:
    """Workloads with no pod and no events left whose GPU need exceeds their namespace quota's headroom."""
    out = []
    for w in facts.k8s_workloads:
        if (w.namespace, w.name) in seen or w.active or not w.gpu_request or any(
                c.type in ("Complete", "Failed", "Succeeded") and c.status == "True" for c in w.conditions):
            continue
        if any(p.namespace == w.namespace and (p.owner_name == w.name or p.name.startswith(f"{w.name}-"))
               for p in facts.k8s_pods):
            continue
        for q in facts.k8s_quotas:
            room = next((q.headroom(r) for r in cfg.gpu_resources if q.namespace == w.namespace and r in q.hard), None)
            if room is not None and room < w.gpu_request:
                out.append((w, q))
                break
    return out


def check_k8s_quota_exceeded(facts: Facts, cfg: K8sQuotaConfig) -> list[Finding]:
    """scheduler_wait per workload whose pod creates the namespace's ResourceQuota rejects (FailedCreate events
    "exceeded quota", or — events expired — a Job/operator job with no pod whose per-pod GPUs exceed the quota's
    headroom); user_code_error when the quota rejects a template that does not request a resource it tracks
    ("must specify"). Culprit the workload (``job:<namespace>/<name>``); the quota and the
    free GPUs elsewhere are the evidence. No action for the wait: raising the quota or waiting for the team's
    own pods to finish is a person's call.

    Evidence strength: state (the API server's admission error), corroborated by the quota object's used and hard.
    Sources: k8s-json / k8s-events-text FailedCreate events, ResourceQuota and Job / workload objects, pods.
    """
    findings = []
    seen: set[tuple[str, str]] = set()
    latest: dict[tuple[str, str], K8sEvent] = {}
    for e in facts.k8s_events:
        if e.reason in ("FailedCreate", "FailedCreatePod") and read_quota_error(e.message) and e.object_name:
            latest.setdefault((event_namespace(facts, e) or _namespace_of(facts, e.object_name), e.object_name), e)
    for (ns, name), e in latest.items():
        qname, what, details = read_quota_error(e.message)  # type: ignore[misc]
        seen.add((ns, name))
        quota = next((q for q in facts.k8s_quotas if q.namespace == ns and q.name == qname), None)
        evidence = [event_evidence(e), *(_quota_evidence(quota, cfg) if quota else [])]
        who = f"{e.object_kind or 'workload'} {ns}/{name}"
        if what == "must_specify":
            findings.append(Finding(
                check="k8s_quota_exceeded", root_cause="user_code_error",
                message=f"{who} cannot create pods: quota {qname} requires every pod to set {details['resources']}, "
                        "which its pod template does not",
                culprits=[_workload_culprit(e.object_kind, ns, name)], evidence=evidence, strength="state",
                confidence=confidence("state")))  # no pod exists to name its owner by: the message tells the fix
            continue
        findings.append(Finding(
            check="k8s_quota_exceeded", root_cause="scheduler_wait",
            message=f"{who} cannot create its pods ({e.count} rejected create(s)): namespace quota {qname} exceeded "
                    f"(requested {details['requested']}, used {details['used']}, limited {details['limited']})"
                    + _holders(facts, ns) + _cluster_free(facts),
            culprits=[_workload_culprit(e.object_kind, ns, name)], evidence=evidence, strength="state",
            confidence=confidence("state", corroborated=quota is not None)))
    for w, q in _quiet_workloads(facts, cfg, seen):
        res = next(r for r in cfg.gpu_resources if r in q.hard)
        findings.append(Finding(
            check="k8s_quota_exceeded", root_cause="scheduler_wait",
            message=f"{w.kind} {w.ref} has no pod: each needs {w.gpu_request} GPU(s) and quota {q.name} has "
                    f"{q.headroom(res):g} of {q.hard[res]:g} {res} left" + _holders(facts, w.namespace) + _cluster_free(facts),
            culprits=[_workload_culprit(w.kind, w.namespace, w.name)],
            evidence=[Evidence(text=f"{w.kind} {w.ref}: active {w.active or 0}, no pod read", file=w.file),
                      *_quota_evidence(q, cfg)], strength="state", confidence=confidence("state")))
    return findings
