"""check_k8s_crash_loop: containers that keep dying — out of memory (GPU or host) or on their own error."""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import event_evidence, is_gpu_infra_pod, pod_culprit, pod_evidence, pod_events
from tools.facts import Facts
from tools.models.findings import ActionSpec, Finding
from tools.models.k8s import K8sContainerStatus, K8sPod

__all__ = ["K8sCrashLoopConfig", "check_k8s_crash_loop"]

_CUDA_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED",
                       re.IGNORECASE)


class K8sCrashLoopConfig(CheckConfig):
    """How many restarts make a crash loop."""

    min_restarts: int = 3
    """A CrashLoopBackOff container is reported from this many restarts (an OOM kill from one)."""
    recent_s: float = 6 * 3600
    """A previous run's death (lastState) counts only if it ended this many seconds before capture;
    an OOM kill days ago on a container running fine since is history, not the problem."""


def _verdict(c: K8sContainerStatus, cfg: K8sCrashLoopConfig, facts: Facts) -> tuple[str, str, float] | None:
    """(root cause, what happened, confidence) for one container, or None."""
    if c.state == "running" and c.last_terminated_at is not None and \
            (facts.captured_at - c.last_terminated_at).total_seconds() > cfg.recent_s:
        return None
    messages = " ".join(m for m in (c.state_message, c.last_terminated_message) if m)
    reasons = {c.last_terminated_reason, c.state_reason if c.state == "terminated" else None}
    exit_code = c.last_terminated_exit_code if c.last_terminated_exit_code is not None else c.exit_code
    died = c.state == "terminated" or c.last_terminated_reason is not None
    if died and _CUDA_OOM.search(messages):
        return "gpu_oom", f"CUDA out of memory (exit {exit_code})", 0.85
    if "OOMKilled" in reasons:
        return "host_oom", f"OOMKilled by its memory limit (exit {exit_code})", 0.85
    looping = c.state == "waiting" and c.state_reason == "CrashLoopBackOff"
    if looping and c.restart_count >= cfg.min_restarts:
        last = f"last exit {exit_code} ({c.last_terminated_reason or '?'})"
        tail = [ln.strip() for ln in (c.last_terminated_message or "").splitlines() if ln.strip()]
        if tail:
            last += f", last output: {tail[-1][:160]}"
        return "crash_loop", f"CrashLoopBackOff after {c.restart_count} restarts (threshold {cfg.min_restarts}), {last}", 0.7
    return None


def _limit(pod: K8sPod) -> str:
    if pod.memory_limit_bytes:
        return f"; pod memory limit {pod.memory_limit_bytes / 2**30:.1f} GiB"
    return ""


def check_k8s_crash_loop(facts: Facts, cfg: K8sCrashLoopConfig) -> list[Finding]:
    """One finding per pod (its first failing container) that has not succeeded:

    - gpu_oom when its termination message says CUDA ran out of memory;
    - host_oom when it was OOMKilled (the container hit its memory limit / the node ran out);
    - crash_loop when it is in CrashLoopBackOff with at least ``min_restarts`` restarts.

    Pods of the node's GPU stack (device plugin, driver, toolkit) are left to k8s_device_plugin.
    Culprit the pod; action notify_owner.

    Sources: k8s-json pods (container state, lastState.terminated reason/exitCode/message);
    BackOff events for evidence.
    """
    findings: list[Finding] = []
    for pod in facts.k8s_pods:
        if pod.phase == "Succeeded" or is_gpu_infra_pod(pod):
            continue
        for c in pod.containers:
            verdict = _verdict(c, cfg, facts)
            if verdict is None:
                continue
            cause, what, confidence = verdict
            evs = [e for e in pod_events(facts, pod.namespace, pod.name)
                   if e.reason in ("BackOff", "OOMKilling") and (not e.field_path or c.name in e.field_path)]
            findings.append(Finding(
                check="k8s_crash_loop", root_cause=cause,  # type: ignore[arg-type]
                message=f"pod {pod.ref} container {c.name}: {what}"
                        + (_limit(pod) if cause == "host_oom" else "") + (f" on {pod.node}" if pod.node else ""),
                culprits=[pod_culprit(pod)],
                evidence=[pod_evidence(pod, c), *[event_evidence(e) for e in evs[:2]]],
                confidence=confidence,
                suggested_actions=[ActionSpec(type="notify_owner", pod=pod.name, namespace=pod.namespace,
                                              reason=f"container {c.name}: {what}")],
            ))
            break
    return findings
