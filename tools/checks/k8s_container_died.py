"""check_k8s_container_died: a container that died recently for no reason anything read gives — a restart with a
non-zero exit whose reason is not OOMKilled, too few restarts for a crash loop, its events expired. DESIGN:
``healthy`` is a claim; a container killed by a signal nobody can name leaves the answer ``inconclusive``,
naming the pod and what could tell the causes apart (the node's kernel log for an OOM kill, the kubelet's log
for a probe kill, the container's previous log).

The exit code says how it ended (128 + signal: 137 SIGKILL, 139 SIGSEGV, 143 SIGTERM), not why; the kubelet
writes ``OOMKilled`` only when the runtime attributes the kill to the container's memory cgroup, so a
SIGKILL with reason ``Error`` may still be the kernel's OOM killer, a liveness-probe kill or a person.

Sources: k8s-json pods (``lastState.terminated`` exitCode, reason, finishedAt; restartCount), the pod's
Unhealthy / Killing events (a probe failure is named, not taken for the cause), the Kubernetes container-state
and "Debug Running Pods" docs (tools.knowledge.k8s_runtime.EXIT_SIGNALS).
"""

from __future__ import annotations

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import event_evidence, is_gpu_infra_pod, is_gpu_monitoring_pod, pod_culprit, pod_evidence, \
    pod_events
from tools.facts import Facts
from tools.knowledge.k8s_runtime import describe_exit
from tools.models.findings import Finding

__all__ = ["K8sContainerDiedConfig", "check_k8s_container_died"]

_EXPLAINED = frozenset({"OOMKilled", "Completed", "Evicted", "DeadlineExceeded"})


class K8sContainerDiedConfig(CheckConfig):
    """How recent a death counts, and how many restarts make it a crash loop instead (k8s_crash_loop's)."""

    recent_s: float = 6 * 3600
    """A previous run that ended longer ago than this is history."""
    crash_loop_restarts: int = 3


def check_k8s_container_died(facts: Facts, cfg: K8sContainerDiedConfig) -> list[Finding]:
    """One ``inconclusive`` finding per pod with a container that restarted after a non-zero exit in the last
    ``recent_s`` (reason not OOMKilled / Completed), is not crash-looping (fewer than ``crash_loop_restarts``
    restarts, or running again), and whose pod is not a GPU-stack daemon (k8s_device_plugin's). Culprit the pod
    (after its node when kubelet's ``Rebooted`` event says the node restarted under it);
    no action (only reading more can tell SIGKILL's causes apart). A finding of a cause about the same pod or
    its node ranks above it.
    """
    findings = []
    for pod in facts.k8s_pods:
        if pod.phase in ("Succeeded", "Failed") or pod.status_reason == "Evicted" or (
                is_gpu_infra_pod(pod) and not is_gpu_monitoring_pod(pod)):
            continue
        for c in pod.containers:
            code, when = c.last_terminated_exit_code, c.last_terminated_at
            if not c.restart_count or not code or c.last_terminated_reason in _EXPLAINED or when is None:
                continue
            age_s = (facts.captured_at - when).total_seconds()
            looping = c.state == "waiting" and c.state_reason == "CrashLoopBackOff" and c.restart_count >= cfg.crash_loop_restarts
            if age_s > cfg.recent_s or age_s < 0 or looping:
                continue
            probes = [e for e in pod_events(facts, pod.namespace, pod.name)
                      if e.reason == "Unhealthy" and "probe failed" in e.message.lower()]
            seen = "; its probes failed before (" + probes[0].message[:80] + ")" if probes else \
                ("; its events are gone (none read about it)" if not pod_events(facts, pod.namespace, pod.name) else "")
            # kubelet's "Rebooted" (a new boot id): the container died with its node; why the node restarted
            # is the open question, and the node is what to read next (its previous boot's journal, the BMC log).
            reboots = [e for e in facts.events_about("Node", pod.node) if e.reason == "Rebooted"] if pod.node else []
            if reboots:
                seen += f"; its node {pod.node} rebooted under it ({reboots[-1].message[:100]})"
            findings.append(Finding(
                check="k8s_container_died", root_cause="inconclusive",
                message=(f"pod {pod.ref} container {c.name} restarted {c.restart_count}x, last {age_s / 60:.0f} min ago "
                         f"with {describe_exit(code)}, reason {c.last_terminated_reason or 'none'} (not OOMKilled){seen}; "
                         f"nothing read says why (threshold: any unexplained death in {cfg.recent_s / 3600:g} h)"),
                culprits=[f"k8snode:{pod.node}", pod_culprit(pod)] if reboots else [pod_culprit(pod)],
                evidence=[pod_evidence(pod, c), *[event_evidence(e) for e in probes[:1] + reboots[-1:]]],
                strength="heuristic", confidence=0.5))
            break
    return findings
