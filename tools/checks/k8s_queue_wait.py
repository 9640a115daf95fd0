"""check_k8s_queue_wait: a Kubernetes Job held suspended by a queue manager (Kueue) because its queue's quota is
used up — the Workload's ``Pending`` event ``couldn't assign flavors to pod set main: insufficient unused quota
for nvidia.com/gpu in flavor h100, 16 more needed`` — so it creates no pods while nodes sit idle. The cluster is
working as configured: the job waits its turn in the ClusterQueue (or its quota is too small for it); nothing
on the nodes to fix.

Sources: k8s-json Jobs (``spec.suspend`` shown as a ``Suspended`` condition), Kueue Workload events (kubectl get
events): ``Pending`` with the admission message, ``CreatedWorkload`` on the Job naming its Workload.
"""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import event_evidence
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.findings import Finding

__all__ = ["K8sQueueWaitConfig", "check_k8s_queue_wait"]

_INADMISSIBLE = re.compile(r"insufficient unused quota|couldn't assign flavors|is inadmissible|ClusterQueue \S+ is "
                           r"(?:inactive|stopped)|LocalQueue \S+ doesn't exist|exceeds? the (?:nominal )?quota",
                           re.IGNORECASE)
_CREATED = re.compile(r"Created Workload: (?:(?P<ns>[\w.-]+)/)?(?P<name>[\w.-]+)")


class K8sQueueWaitConfig(CheckConfig):
    """Nothing to tune."""


def check_k8s_queue_wait(facts: Facts, cfg: K8sQueueWaitConfig) -> list[Finding]:
    """scheduler_wait per Job whose queue-manager Workload is pending admission (the events above); culprit
    ``job:<namespace>/<name>``; no action (a quota or a queue's order is the cluster's policy)."""
    workload_of: dict[tuple[str, str], tuple[str, str]] = {}  # (ns, workload) -> (ns, job)
    for e in facts.k8s_events:
        if e.object_kind == "Job" and e.reason == "CreatedWorkload" and (m := _CREATED.search(e.message)):
            ns = m["ns"] or e.object_namespace or e.namespace or ""
            workload_of[(ns, m["name"])] = (e.object_namespace or e.namespace or ns, e.object_name or "")
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for e in facts.k8s_events:
        if e.object_kind != "Workload" or not _INADMISSIBLE.search(e.message):
            continue
        ns = e.object_namespace or e.namespace or ""
        job = workload_of.get((ns, e.object_name or "")) or _by_prefix(facts, ns, e.object_name or "")
        if job is None or job in seen:
            continue
        seen.add(job)
        times = f" ({e.count}x)" if e.count and e.count > 1 else ""
        findings.append(Finding(
            check="k8s_queue_wait", root_cause="scheduler_wait",
            message=f"Job {job[0]}/{job[1]} is held by its queue: Workload {e.object_name} not admitted{times}: "
                    f"{e.message[:160]} — it waits for quota in its ClusterQueue, whatever nodes are idle",
            culprits=[f"job:{job[0]}/{job[1]}"], evidence=[event_evidence(e)], strength="state",
            confidence=confidence("state", corroborated=bool(e.count and e.count > 1)), suggested_actions=[]))
    return findings


def _by_prefix(facts: Facts, ns: str, workload: str) -> tuple[str, str] | None:
    """Kueue names a Job's Workload ``job-<job name>-<hash>``."""
    for w in facts.k8s_workloads:
        if w.kind == "Job" and w.namespace == ns and workload.startswith(f"job-{w.name}-"):
            return ns, w.name
    return None
