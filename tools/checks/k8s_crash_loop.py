"""check_k8s_crash_loop: containers that keep dying — out of memory (GPU or host) or on their own error."""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import (
    event_evidence,
    is_gpu_infra_pod,
    is_gpu_monitoring_pod,
    node_culprit,
    pod_culprit,
    pod_evidence,
    pod_events,
    pod_log_events,
)
from tools.facts import Facts
from tools.knowledge.gpu_operator import gpu_replicas, is_telemetry_pod
from tools.knowledge.gpu_stack import NODE_STACK_ERROR
from tools.knowledge.precedence import INFORMATIONAL
from tools.knowledge.precedence import confidence as strength_confidence
from tools.platform import evict_hurt
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.k8s import K8sContainerStatus, K8sPod

__all__ = ["K8sCrashLoopConfig", "check_k8s_crash_loop"]

_NO_GPU_RUNTIME = NODE_STACK_ERROR
"""The container could not reach the node's GPU driver: the node's runtime/toolkit, not the app."""
_CUDA_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED",
                       re.IGNORECASE)


class K8sCrashLoopConfig(CheckConfig):
    """How many restarts make a crash loop."""

    min_restarts: int = 3
    """A CrashLoopBackOff container is reported from this many restarts (an OOM kill from one)."""
    recent_s: float = 6 * 3600
    """A previous run's death (lastState) counts only if it ended this many seconds before capture;
    an OOM kill days ago on a container running fine since is history, not the problem."""


SHM_FULL = re.compile(r"/dev/shm\S*[^\n]{0,200}?(?:No space left on device|ENOSPC)|insufficient shared memory|"
                      r"out of shared memory|raise your shared memory limit", re.IGNORECASE)
"""A container's /dev/shm too small for NCCL's shared-memory transport (``failed to extend /dev/shm/nccl-… :
No space left on device``) or PyTorch's DataLoader workers (``insufficient shared memory (shm)``)."""


def _verdict(c: K8sContainerStatus, cfg: K8sCrashLoopConfig, facts: Facts,
             logged_oom: str | None = None, logged_shm: str | None = None) -> tuple[str, str, float] | None:
    """(root cause, what happened, confidence) for one container, or None. ``logged_oom`` / ``logged_shm``: a
    CUDA out-of-memory line, or a line saying /dev/shm is full, from the pod's own log (its termination
    message may say nothing)."""
    if c.state == "running" and c.last_terminated_at is not None and \
            (facts.captured_at - c.last_terminated_at).total_seconds() > cfg.recent_s:
        return None
    messages = " ".join(m for m in (c.state_message, c.last_terminated_message) if m)
    reasons = {c.last_terminated_reason, c.state_reason if c.state == "terminated" else None}
    exit_code = c.last_terminated_exit_code if c.last_terminated_exit_code is not None else c.exit_code
    died = c.state == "terminated" or c.last_terminated_reason is not None
    if died and (_CUDA_OOM.search(messages) or logged_oom):
        said = f": {logged_oom[:160]}" if logged_oom and not _CUDA_OOM.search(messages) else ""
        again = f", {c.restart_count} restarts" if c.restart_count else ""
        return "gpu_oom", f"CUDA out of memory (exit {exit_code}){again}{said}", \
            strength_confidence("symptom", corroborated=True)
    if died and (SHM_FULL.search(messages) or logged_shm):
        said = (logged_shm or SHM_FULL.search(messages).group(0))[:160]  # type: ignore[union-attr]
        return "user_code_error", (f"/dev/shm is full (exit {exit_code}): {said}; the pod spec leaves the container "
                                   "the runtime's 64 MiB default — mount an emptyDir with medium: Memory at /dev/shm"), \
            strength_confidence("symptom", corroborated=True)
    if "OOMKilled" in reasons:
        return "host_oom", f"OOMKilled by its memory limit (exit {exit_code})", strength_confidence("state")
    looping = c.state == "waiting" and c.state_reason == "CrashLoopBackOff"
    if looping and c.restart_count >= cfg.min_restarts:
        last = f"last exit {exit_code} ({c.last_terminated_reason or '?'})"
        tail = [ln.strip() for ln in (c.last_terminated_message or "").splitlines() if ln.strip()]
        if tail:
            last += f", last output: {tail[-1][:160]}"
        return "crash_loop", f"CrashLoopBackOff after {c.restart_count} restarts (threshold {cfg.min_restarts}), {last}", \
            strength_confidence("state")
    return None


def _siblings_fine_elsewhere(facts: Facts, pod: K8sPod) -> list[K8sPod]:
    """Pods of the same controller that run and are ready on other nodes."""
    if not pod.owner_name:
        return []
    by_owner = facts.cached("pods_by_owner", lambda: _pods_by_owner(facts))
    return [p for p in by_owner.get((pod.namespace, pod.owner_kind, pod.owner_name), [])
            if p.name != pod.name and p.node and p.node != pod.node and p.phase == "Running" and p.ready]


def _pods_by_owner(facts: Facts) -> dict[tuple[str, str | None, str], list[K8sPod]]:
    out: dict[tuple[str, str | None, str], list[K8sPod]] = {}
    for p in facts.k8s_pods:
        if p.owner_name:
            out.setdefault((p.namespace, p.owner_kind, p.owner_name), []).append(p)
    return out


def _runtime_evidence(facts: Facts, pod: K8sPod, c: K8sContainerStatus) -> list[Evidence]:
    """Lines saying the GPU driver is unreachable: the container's termination message, its events,
    and log lines (job-log artifacts) recorded on the pod's node."""
    out: list[Evidence] = []
    for text in (c.last_terminated_message, c.state_message):
        m = _NO_GPU_RUNTIME.search(text or "")
        if m:
            line = next(ln for ln in (text or "").splitlines() if m.group(0) in ln)
            out.append(Evidence(text=f"pod {pod.ref} container {c.name}: {line.strip()[:250]}", file=pod.file))
    out += [event_evidence(e) for e in pod_events(facts, pod.namespace, pod.name) if _NO_GPU_RUNTIME.search(e.message)]
    on_node = {a.path for a in facts.artifacts if pod.node and a.node == pod.node}
    out += [Evidence(text=" ".join(e.message.split())[:300], file=e.file, line=e.line)
            for e in facts.job_log_events if e.file in on_node and _NO_GPU_RUNTIME.search(e.message)]
    return out


def _kernel_oom(facts: Facts, pod: K8sPod) -> list[Evidence]:
    """OOM-killer lines from the kernel log of the pod's node (corroborate an OOMKilled status)."""
    return [Evidence(text=" ".join(ev.message.split())[:300], file=ev.file, line=ev.line)
            for ev in facts.kernel_events if pod.node and ev.node == pod.node and ev.kind == "oom_kill"]


def _shared_gpu(facts: Facts, pod: K8sPod) -> str:
    """When the pod's node advertises each GPU to several pods (time-slicing, MPS): which other GPU pods share
    its physical GPUs, with no memory isolation between them."""
    node = facts.k8s_node(pod.node) if pod.node else None
    replicas = gpu_replicas(node) if node is not None else 1
    if replicas < 2:
        return ""
    others = sorted({p.owner_name or p.name for p in facts.pods_on(node.name)  # type: ignore[union-attr]
                     if p.gpu_request and p.name != pod.name and p.phase == "Running"})
    return (f"; {node.name} time-slices its GPUs ({replicas} pods per physical GPU, no memory isolation between "  # type: ignore[union-attr]
            f"them)" + (f": other GPU pods there ({', '.join(others[:3])}) may hold the memory of the GPU it was given"
                        if others else ""))


def _limit(pod: K8sPod) -> str:
    if pod.memory_limit_bytes:
        return f"; pod memory limit {pod.memory_limit_bytes / 2**30:.1f} GiB"
    return ""


def _node_runtime_finding(pod: K8sPod, c: K8sContainerStatus, what: str, runtime: list[Evidence],
                          siblings: list[K8sPod]) -> Finding:
    node = pod.node or ""
    elsewhere = (f"; {len(siblings)} other replica(s) run fine on {', '.join(sorted({p.node or '' for p in siblings}))}"
                 if siblings else "")
    return Finding(
        check="k8s_crash_loop", root_cause="node_software_fault",
        message=(f"pod {pod.ref} container {c.name}: {what}; the container finds no usable NVIDIA driver on {node} "
                 f"({len(runtime)} line(s) on that node){elsewhere}: the node's container runtime / GPU toolkit"),
        culprits=[node_culprit(node), pod_culprit(pod)],
        evidence=[*runtime[:3], pod_evidence(pod, c)],
        strength="state", confidence=strength_confidence("state", corroborated=bool(siblings) or len(runtime) > 1),
        suggested_actions=[ActionSpec(type="cordon_node", node=node,
                                      reason="containers on this node cannot reach the NVIDIA driver")]
        + evict_hurt([pod], node, "its containers cannot reach the NVIDIA driver here"),
    )


def check_k8s_crash_loop(facts: Facts, cfg: K8sCrashLoopConfig) -> list[Finding]:
    """One finding per pod (its first failing container) that has not succeeded:

    - gpu_oom when its termination message or its own log (job-log recorded for namespace/pod) says CUDA ran
      out of memory — naming, on a node that time-slices its GPUs, the other GPU pods that share them;
    - host_oom when it was OOMKilled (the container hit its memory limit / the node ran out);
      confidence 0.9 when the node's kernel log shows the OOM kill (cgroup or global, said in the
      message), else 0.85;
    - crash_loop when it is in CrashLoopBackOff with at least ``min_restarts`` restarts — at lower
      confidence (0.5) when replicas of the same controller run fine on other nodes;
    - node_software_fault (culprit the node, action cordon_node) instead, when the crash loop's output
      — termination message, pod events, or logs recorded on that node — says the container cannot
      reach the NVIDIA driver (``Found no NVIDIA driver``, ``nvidia-container-cli`` errors, ...).

    Pods of the node's GPU stack (device plugin, driver, toolkit) are left to k8s_device_plugin.
    Culprit the pod; action notify_owner.

    Sources: k8s-json pods (container state, lastState.terminated reason/exitCode/message);
    kernel-log OOM-killer lines of the pod's node; job-log lines recorded on the pod's node; sibling
    pods of the same controller; BackOff events for evidence.
    """
    findings: list[Finding] = []
    for pod in facts.k8s_pods:
        # GPU-stack pods that serve GPUs are k8s_device_plugin's; monitoring ones (a dcgm-exporter) are ordinary
        # crash loops: the node still serves its GPUs.
        if pod.phase == "Succeeded" or (is_gpu_infra_pod(pod) and not is_gpu_monitoring_pod(pod)):
            continue
        logs = pod_log_events(facts, pod)
        logged = next((e.message for e in logs if e.kind == "cuda_oom"), None)
        shm = next((e.message for e in logs if SHM_FULL.search(e.message)), None)
        for c in pod.containers:
            verdict = _verdict(c, cfg, facts, logged, shm)
            if verdict is None:
                continue
            cause, what, confidence = verdict
            siblings = _siblings_fine_elsewhere(facts, pod)
            runtime = _runtime_evidence(facts, pod, c) if cause == "crash_loop" and pod.node else []
            if runtime and pod.node:
                findings.append(_node_runtime_finding(pod, c, what, runtime, siblings))
                break
            if cause == "crash_loop" and siblings:
                what += (f"; {len(siblings)} other replica(s) of {pod.owner_kind} {pod.owner_name} run fine on "
                         f"{', '.join(sorted({p.node or '' for p in siblings}))}, so suspect the node")
                confidence = strength_confidence("heuristic")
            if cause == "crash_loop" and is_telemetry_pod(pod):
                # A crashing exporter leaves the node's metrics unread; it slows nothing that runs there.
                what += "; it is the node's metrics exporter: what its metrics would show is not read"
                confidence = INFORMATIONAL
            if cause == "gpu_oom":
                what += _shared_gpu(facts, pod)
            kernel = _kernel_oom(facts, pod) if cause == "host_oom" else []
            if kernel:
                cgroup = any("memory cgroup" in k.text.lower() for k in kernel)
                what += ("; kernel: memory cgroup OOM on the node (the container's own limit)" if cgroup
                         else "; kernel: the node itself ran out of memory")
                confidence = strength_confidence("direct")
            evs = [e for e in pod_events(facts, pod.namespace, pod.name)
                   if e.reason in ("BackOff", "OOMKilling") and (not e.field_path or c.name in e.field_path)]
            findings.append(Finding(
                check="k8s_crash_loop", root_cause=cause,  # type: ignore[arg-type]
                message=f"pod {pod.ref} container {c.name}: {what}"
                        + (_limit(pod) if cause == "host_oom" else "") + (f" on {pod.node}" if pod.node else ""),
                culprits=[pod_culprit(pod)],
                evidence=[pod_evidence(pod, c), *kernel[:2], *[event_evidence(e) for e in evs[:2]]],
                strength="direct" if kernel else "state", confidence=confidence,
                suggested_actions=[ActionSpec(type="notify_owner", pod=pod.name, namespace=pod.namespace,
                                              reason=f"container {c.name}: {what}")],
            ))
            break
    return findings
