"""check_k8s_pods_ready_timeout: a job Kueue keeps evicting because its pods never all became Ready in time.

With ``waitForPodsReady`` on, Kueue evicts an admitted workload whose pods are not all Ready within the timeout
(event ``EvictedDueToPodsReadyTimeout`` / ``Exceeded the PodsReady timeout``), suspends the job, deletes its pods
and requeues it with a backoff. The eviction is the symptom; the cause is why a pod was not Ready — an image pull,
an init container, a scheduling wait, a node — and the pods' own events or status tell which. When they were not
captured (the pods are gone after each eviction), Warden cannot tell: ``inconclusive`` on the job, with what to
read during its next admission, and no action on any node. Sources: Kueue's "Setup All-or-nothing with
waitForPodsReady" docs and its event reasons; Kubernetes pod conditions.
"""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import event_evidence
from tools.facts import Facts
from tools.models.findings import Finding

__all__ = ["PodsReadyTimeoutConfig", "check_k8s_pods_ready_timeout"]

_TIMEOUT = re.compile(r"Exceeded the PodsReady timeout|PodsReadyTimeout", re.IGNORECASE)
_NOT_JOBS = (None, "Pod", "Workload", "Node")


class PodsReadyTimeoutConfig(CheckConfig):
    """How many PodsReady evictions of one job make the pattern (one may be a slow first pull)."""

    min_evictions: int = 2


def check_k8s_pods_ready_timeout(facts: Facts, cfg: PodsReadyTimeoutConfig) -> list[Finding]:
    """inconclusive per job (PyTorchJob, Job, RayJob …) Kueue evicted ``min_evictions`` or more times for the
    PodsReady timeout (the largest count of the job object's events) while no Warning event of the job's pods
    says why they were not Ready. Culprit: the job; no action (what to read next is in the message).

    Sources: Kubernetes events (``kubectl get events`` tables or JSON, core/v1 or events.k8s.io/v1).
    """
    jobs: dict[str, tuple[int, object]] = {}
    for e in facts.k8s_events:
        if e.object_kind in _NOT_JOBS or not e.object_name or not _TIMEOUT.search(e.message or ""):
            continue
        key = f"{e.object_namespace or e.namespace or 'default'}/{e.object_name}"
        n, first = jobs.get(key, (0, e))
        jobs[key] = (max(n, e.count), first)
    findings: list[Finding] = []
    for job, (count, e) in sorted(jobs.items()):
        ns, name = job.split("/", 1)
        told = [p for p in facts.k8s_events if p.object_kind == "Pod" and (p.type or "") == "Warning"
                and (p.object_name or "").startswith(f"{name}-") and (p.object_namespace or p.namespace or "default") == ns]
        if count < cfg.min_evictions or told:
            continue
        findings.append(Finding(
            check="k8s_pods_ready_timeout", root_cause="inconclusive",
            message=f"{e.object_kind} {job} was evicted {count} times by Kueue because its pods were not all Ready within "
                    "waitForPodsReady.timeout; which pod was not Ready, where and why (image pull, init container, "
                    "scheduling, node) is not in what was read — its pods are deleted at each eviction. Read next, during "
                    f"the next admission: kubectl get events -n {ns} for its pods, kubectl describe pod, the pods' init "
                    "container and kubelet logs; no node is implicated by this alone",
            culprits=[f"job:{job}"], evidence=[event_evidence(e)], strength="heuristic", confidence=0.5,
            suggested_actions=[]))
    return findings
