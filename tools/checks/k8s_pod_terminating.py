"""check_k8s_pod_terminating: pods stuck Terminating — deleted (``metadata.deletionTimestamp``) well past their
grace period and still on their node, because the kubelet cannot stop them (``KillPodSandbox`` / ``KillContainer``
failing with ``DeadlineExceeded``, a process in uninterruptible sleep on a hung NFS mount or a wedged GPU, the
container runtime not answering, a finalizer nobody removes).

Kubernetes documents the symptom, not one cause (``kubectl delete --force`` only forgets the pod in the API; its
processes may still hold the GPUs): so unless another check names the cause from the node's own evidence, the
answer is ``inconclusive`` naming the pod, with what to read next. A StatefulSet's replacement cannot start until
the old pod is gone, so the pod blocks its own workload.
"""

from __future__ import annotations

from datetime import timedelta

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import event_evidence, event_pod_key, pod_culprit
from tools.facts import Facts
from tools.models.findings import Evidence, Finding

__all__ = ["K8sPodTerminatingConfig", "check_k8s_pod_terminating"]

_KILL_REASONS = ("FailedKillPod", "KillPodSandboxError", "FailedKillPodSandbox", "KillContainerError")


class K8sPodTerminatingConfig(CheckConfig):
    """How long past its grace period a deleted pod may linger before it is called stuck."""

    stuck_after_min: float = 10.0
    max_pod_culprits: int = 10


def check_k8s_pod_terminating(facts: Facts, cfg: K8sPodTerminatingConfig) -> list[Finding]:
    """One inconclusive Finding naming the pods deleted more than grace + ``stuck_after_min`` minutes before the
    snapshot and still listed (k8s-json pods), with the kubelet's kill-failure events about them as evidence."""
    stuck = []
    for p in facts.k8s_pods:
        if p.deletion_timestamp is None or p.phase in ("Succeeded", "Failed"):
            continue
        overdue = facts.captured_at - p.deletion_timestamp - timedelta(seconds=p.deletion_grace_s or 30)
        if overdue >= timedelta(minutes=cfg.stuck_after_min):
            stuck.append((p, overdue))
    if not stuck:
        return []
    keys = {(p.namespace, p.name) for p, _ in stuck}
    kills = [e for e in facts.k8s_events
             if (e.reason in _KILL_REASONS or "KillPodSandbox" in e.message or "killing pod" in e.message.lower())
             and event_pod_key(facts, e) in keys]
    stuck.sort(key=lambda s: -s[1])
    named = stuck[: cfg.max_pod_culprits]
    said = "; ".join(f"{p.ref} on {p.node or '?'} Terminating {int(o.total_seconds() // 60)} min past its grace period"
                     for p, o in named[:3])
    evidence = [Evidence(text=f"pod {p.ref}: deletionTimestamp {p.deletion_timestamp:%Y-%m-%dT%H:%M:%SZ}, grace "
                              f"{p.deletion_grace_s or 30} s, phase {p.phase}", file=p.file) for p, _ in named[:3]]
    return [Finding(
        check="k8s_pod_terminating", root_cause="inconclusive",
        message=f"{len(stuck)} pod(s) stuck Terminating ({said}): the kubelet cannot stop them"
                + (f" ({len(kills)} kill-failure event(s))" if kills else "")
                + ", and what holds them is not in what was read — read next: the node's kubelet and containerd logs "
                  "(journalctl -u kubelet -u containerd), processes in D state there (ps -eo pid,stat,wchan:32,cmd), "
                  "hung NFS/CSI mounts, nvidia-smi on the node, the pod's finalizers",
        culprits=[pod_culprit(p) for p, _ in named],
        evidence=evidence + [event_evidence(e) for e in kills[:3]],
        strength="heuristic", confidence=0.5, suggested_actions=[],
    )]
