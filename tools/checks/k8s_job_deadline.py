"""check_k8s_job_deadline: a Kubernetes Job stopped by its ``activeDeadlineSeconds`` before it saved its work.

The Job controller terminates a Job's pods once the Job has been active longer than ``spec.activeDeadlineSeconds``
and marks it ``Failed`` with reason ``DeadlineExceeded`` (event ``DeadlineExceeded: Job was active longer than
specified deadline``; the pods get SIGTERM, then are deleted). It is Kubernetes' time limit: a training run that
saved no checkpoint by then starts from nothing, like a Slurm job that hit its TimeLimit. Sources: Kubernetes docs,
Jobs ("Job termination and cleanup"); batch/v1 Job status conditions; the Job controller's events.
"""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import event_evidence
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.k8s_objects import K8sWorkload

__all__ = ["K8sJobDeadlineConfig", "check_k8s_job_deadline"]

_DELETED = re.compile(r"Deleted pod: (?P<pod>[\w.-]{1,253})")


class K8sJobDeadlineConfig(CheckConfig):
    """How many of a Job's pods to name."""

    max_pods: int = 8


def _deadline_jobs(facts: Facts) -> dict[tuple[str, str | None], list]:
    """(job name, namespace or None) -> evidence (conditions, events) of a DeadlineExceeded end."""
    out: dict[tuple[str, str | None], list] = {}
    for w in facts.k8s_workloads:
        if w.kind == "Job" and any(c.type == "Failed" and c.status == "True" and c.reason == "DeadlineExceeded"
                                   for c in w.conditions):
            out.setdefault((w.name, w.namespace), []).append(w)
    for e in facts.k8s_events:
        if e.reason == "DeadlineExceeded" and e.object_kind in (None, "Job") and e.object_name:
            key = next((k for k in out if k[0] == e.object_name), (e.object_name, e.object_namespace))
            out.setdefault(key, []).append(e)
    return out


def _pods(facts: Facts, job: str, namespace: str | None) -> list[tuple[str, str]]:
    """The Job's pods: those it owns, those its controller says it deleted, and the pod logs recorded for it."""
    found = [(p.namespace, p.name) for p in facts.k8s_pods
             if p.owner_kind == "Job" and p.owner_name == job and (namespace is None or p.namespace == namespace)]
    for e in facts.k8s_events:
        if e.object_name == job and e.reason == "SuccessfulDelete" and (m := _DELETED.search(e.message)):
            found.append((e.object_namespace or namespace or "default", m["pod"]))
    for s in facts.job_logs:
        ns, _, name = (s.job or "").rpartition("/")
        if ns and name.startswith(f"{job}-") and (namespace is None or ns == namespace):
            found.append((ns, name))
    return list(dict.fromkeys(found))


def _saved(facts: Facts, pods: list[tuple[str, str]]) -> bool:
    return any(e.kind == "checkpoint_saved" for ns, name in pods for e in facts.job_events(f"{ns}/{name}"))


def check_k8s_job_deadline(facts: Facts, cfg: K8sJobDeadlineConfig) -> list[Finding]:
    """timeout_without_checkpoint per Job ended by DeadlineExceeded whose pods' logs saved no checkpoint: culprits
    the pods, action notify their owner (raise ``activeDeadlineSeconds`` or checkpoint within it). A Job whose logs
    saved checkpoints lost only the time since the last one: no finding.

    Sources: batch/v1 Job conditions, Kubernetes events (DeadlineExceeded, SuccessfulDelete), pod logs.
    """
    findings: list[Finding] = []
    for (job, namespace), seen in _deadline_jobs(facts).items():
        pods = _pods(facts, job, namespace)
        if _saved(facts, pods):
            continue
        logs_read = any(facts.job_events(f"{ns}/{name}") or any(s.job == f"{ns}/{name}" for s in facts.job_logs)
                        for ns, name in pods)
        evidence = [Evidence(text=f"job/{job}: condition Failed=True reason DeadlineExceeded", metric="kubectl get job")
                    if isinstance(x, K8sWorkload) else event_evidence(x) for x in seen[:3]]
        findings.append(Finding(
            check="k8s_job_deadline", root_cause="timeout_without_checkpoint",
            message=f"Kubernetes Job {namespace + '/' if namespace else ''}{job} ran past its activeDeadlineSeconds and "
                    "was stopped (DeadlineExceeded)" + (": its pods' logs show no checkpoint saved, so the work is lost"
                                                       if logs_read else "; no pod log was read to tell whether it saved"),
            culprits=[f"pod:{ns}/{name}" for ns, name in pods[: cfg.max_pods]],
            evidence=evidence, strength="state", confidence=confidence("state", corroborated=logs_read),
            suggested_actions=[ActionSpec(type="notify_owner", pod=name, namespace=ns,
                                          reason="the Job's activeDeadlineSeconds ended it before any checkpoint: raise "
                                                 "the deadline or save checkpoints within it") for ns, name in pods[:1]],
        ))
    return findings
