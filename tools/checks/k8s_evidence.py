"""What the Kubernetes checks share: culprit names, evidence from objects and events, Xid lookup.

Not a check itself; ``k8s_*`` check modules import it. Everything here reads Facts only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tools.facts import Facts
from tools.knowledge.gpu_operator import PLUGIN_NOT_REGISTERED, is_device_plugin_pod
from tools.knowledge.xid import APPLICATION_XIDS, HARDWARE_XIDS
from tools.models.findings import Evidence
from tools.models.k8s import K8sContainerStatus, K8sEvent, K8sNode, K8sPod
from tools.models.logs import JobLogEventBase, XidEvent

__all__ = [
    "APPLICATION_XIDS",
    "HARDWARE_XIDS",
    "xids_on",
    "other_xids",
    "pod_culprit",
    "node_culprit",
    "active_pods_on",
    "pod_events",
    "node_events",
    "event_evidence",
    "pod_evidence",
    "node_evidence",
    "container_line",
    "xid_evidence",
    "event_pod_key",
    "event_namespace",
    "is_gpu_infra_pod",
    "is_gpu_monitoring_pod",
    "k8s_node",
    "pod_log_events",
    "unregistered_plugins",
]


_ACTIVE = ("Pending", "Running", "Unknown", None)
_XID_RE = re.compile(r"\bXid\b\D{0,12}?(\d{1,3})\b", re.IGNORECASE)
_GPU_STACK_WORDS = ("device-plugin", "nvidia-driver", "driver-daemonset", "container-toolkit", "operator-validator",
                    "cuda-validator", "plugin-validator", "dcgm", "gpu-feature-discovery", "mig-manager",
                    "nvidia-dra", "k8s-device-plugin", "gpu-operator")
"""What the NVIDIA GPU stack's pods are, whatever a site names them: the device plugin, the driver and
container-toolkit daemonsets, the GPU Operator's validators, DCGM / dcgm-exporter, GPU feature discovery,
the MIG manager (words found in pod, owner or label names, or in the container image)."""


def _clip(text: str, n: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def pod_culprit(pod: K8sPod | tuple[str, str]) -> str:
    """``pod:<namespace>/<name>``."""
    ns, name = (pod.namespace, pod.name) if isinstance(pod, K8sPod) else pod
    return f"pod:{ns}/{name}"


def node_culprit(name: str) -> str:
    """``k8snode:<name>``."""
    return f"k8snode:{name}"


def k8s_node(facts: Facts, name: str) -> K8sNode | None:
    """The Kubernetes node with this name, or None."""
    return facts.k8s_node(name)


def active_pods_on(facts: Facts, node: str) -> list[K8sPod]:
    """Pods bound to ``node`` that have not finished (Pending, Running, Unknown)."""
    return [p for p in facts.pods_on(node) if p.phase in _ACTIVE]


def pod_events(facts: Facts, namespace: str | None, name: str) -> list[K8sEvent]:
    """Events about one pod (namespace matched when both sides know it)."""
    out = []
    for e in facts.events_about("Pod", name):
        ns = e.object_namespace or e.namespace
        if ns is None or namespace is None or ns == namespace:
            out.append(e)
    return out


def event_pod_key(facts: Facts, ev: K8sEvent) -> tuple[str, str]:
    """(namespace, pod name) an event is about. A ``kubectl get events -n NS`` table has no NAMESPACE
    column: the namespace is then the one the recorded command names, else the one pod of that name that was
    read, else ``default``."""
    name = ev.object_name or ""
    ns = event_namespace(facts, ev)
    if ns is None:
        pods = facts.cached("pods_by_name", lambda: _by_name(facts)).get(name, [])
        ns = pods[0] if len(pods) == 1 else "default"
    return ns, name


_NS_FLAG = re.compile(r"(?:^|\s)(?:-n|--namespace)[ =]([a-z0-9][a-z0-9.-]*)")


def event_namespace(facts: Facts, ev: K8sEvent) -> str | None:
    """The namespace an event belongs to: its own, else the one namespace the recorded ``kubectl get events -n NS``
    command names (None when the command names none, several, or all namespaces)."""
    ns = ev.object_namespace or ev.namespace
    if ns is not None or ev.file is None:
        return ns
    by_file = facts.cached("k8s_cmd_ns", lambda: _command_namespaces(facts))
    return by_file.get(ev.file)


def _command_namespaces(facts: Facts) -> dict[str, str]:
    out = {}
    for a in facts.artifacts:
        cmd = a.command or ""
        found = set(_NS_FLAG.findall(cmd))
        if len(found) == 1 and " -A" not in f" {cmd}" and "--all-namespaces" not in cmd:
            out[a.path] = found.pop()
    return out


def _by_name(facts: Facts) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in facts.k8s_pods:
        seen = out.setdefault(p.name, [])
        if p.namespace not in seen:  # a pod listed in two files is one pod
            seen.append(p.namespace)
    return out


def pod_log_events(facts: Facts, pod: K8sPod) -> list[JobLogEventBase]:
    """Classified lines of the pod's own container logs: job-log files recorded for ``namespace/pod`` (or the
    pod's name), as ``kubectl logs`` printed them."""
    by_job = facts.cached("k8s_pod_logs", lambda: _group_logs(facts))
    return by_job.get(pod.ref, []) + by_job.get(pod.name, [])


def unregistered_plugins(facts: Facts, node: str) -> list[tuple[K8sPod, str]]:
    """NVIDIA device-plugin pods on ``node`` that run but log that they cannot register with the kubelet, each
    with the line (tools.knowledge.gpu_operator.PLUGIN_NOT_REGISTERED)."""
    out = []
    for pod in facts.pods_on(node):
        if is_device_plugin_pod(pod) and pod.phase == "Running":
            line = next((e.message for e in pod_log_events(facts, pod) if PLUGIN_NOT_REGISTERED.search(e.message)), None)
            if line:
                out.append((pod, line))
    return out


def _group_logs(facts: Facts) -> dict[str, list[JobLogEventBase]]:
    out: dict[str, list[JobLogEventBase]] = {}
    for e in facts.job_log_events:
        if e.job:
            out.setdefault(e.job, []).append(e)
    return out


def node_events(facts: Facts, name: str) -> list[K8sEvent]:
    """Events about one node."""
    return facts.events_about("Node", name)


def event_evidence(ev: K8sEvent) -> Evidence:
    """Evidence citing an event: file and line for a kubectl table, the object for API JSON."""
    who = f"{(ev.object_kind or '?').lower()}/{ev.object_name}"
    count = f" (x{ev.count})" if ev.count > 1 else ""
    return Evidence(text=_clip(f"{ev.type or ''} {ev.reason or ''} {who}{count}: {ev.message}".strip()),
                    file=ev.file, line=ev.line)


def container_line(c: K8sContainerStatus) -> str:
    """One line about a container: state, reason, restarts, last exit."""
    state = f"{c.state}" + (f" {c.state_reason}" if c.state_reason else "")
    last = ""
    if c.last_terminated_reason or c.last_terminated_exit_code is not None:
        last = f", last exit {c.last_terminated_exit_code} ({c.last_terminated_reason or '?'})"
    kind = "init container" if c.init else "container"
    return f"{kind} {c.name}: {state}, {c.restart_count} restarts{last}"


def pod_evidence(pod: K8sPod, container: K8sContainerStatus | None = None, extra: str = "") -> Evidence:
    """Evidence citing a pod object (its file), with a container's state when given."""
    text = f"pod {pod.ref} phase={pod.phase} node={pod.node or '<none>'}"
    if container is not None:
        text += "; " + container_line(container)
        msg = container.state_message or container.last_terminated_message
        if msg:
            text += f"; message: {msg}"
    if extra:
        text += "; " + extra
    return Evidence(text=_clip(text), file=pod.file)


def node_evidence(node: K8sNode, extra: str = "") -> Evidence:
    """Evidence citing a node object: Ready condition, cordon, GPU capacity vs allocatable."""
    text = f"node {node.name} Ready={node.ready_status or '?'}"
    if node.ready_reason:
        text += f" ({node.ready_reason}: {node.ready_message or ''})".replace(": )", ")")
    if node.unschedulable:
        text += " cordoned"
    if node.capacity_gpu is not None or node.allocatable_gpu is not None:
        text += f"; nvidia.com/gpu capacity {node.capacity_gpu} allocatable {node.allocatable_gpu}"
    if extra:
        text += "; " + extra
    return Evidence(text=_clip(text), file=node.file)


def xids_on(facts: Facts, node: str) -> list[tuple[int, Evidence]]:
    """Every GPU Xid seen on ``node`` with its evidence: kernel-log NVRM Xid lines (a GPU fallen off
    the bus counts as 79, an uncorrectable ECC report as 48), DCGM_FI_DEV_XID_ERRORS samples, and node
    events whose message names an Xid (e.g. a health monitor's ``Xid=69``)."""
    out: list[tuple[int, Evidence]] = []
    for ev in facts.kernel_events_on(node):
        xid = {"fallen_off_bus": 79, "gpu_ecc": 48}.get(ev.kind, ev.xid if isinstance(ev, XidEvent) else None)
        if xid is not None:
            out.append((xid, Evidence(text=_clip(ev.message), file=ev.file, line=ev.line)))
    for s in facts.samples("DCGM_FI_DEV_XID_ERRORS"):
        if s.node == node and s.value > 0:
            out.append((int(s.value), Evidence(text=f"DCGM_FI_DEV_XID_ERRORS={s.value:g} on {node} GPU {s.gpu}",
                                               metric=s.name, value=s.value, unit="xid")))
    for e in facts.cached("k8s_events_by_host", lambda: _events_by_host(facts)).get(node, []):
        m = _XID_RE.search(e.message)
        if m:
            out.append((int(m.group(1)), event_evidence(e)))
    return out


def _events_by_host(facts: Facts) -> dict[str, list[K8sEvent]]:
    """Events about a node, or reported from it (``source.host``), by node name."""
    out: dict[str, list[K8sEvent]] = {}
    for e in facts.k8s_events:
        hosts = {e.object_name if e.object_kind == "Node" else None, e.source_host} - {None}
        for h in hosts:
            out.setdefault(h, []).append(e)  # type: ignore[arg-type]
    return out


def xid_evidence(facts: Facts, node: str, *, hardware_xids: Iterable[int] = HARDWARE_XIDS) -> list[Evidence]:
    """Evidence of hardware Xids (``hardware_xids``, by default gpu_xid's catalogue) on ``node``."""
    hw = set(hardware_xids)
    return [ev for x, ev in xids_on(facts, node) if x in hw]


def other_xids(facts: Facts, node: str, *, hardware_xids: Iterable[int] = HARDWARE_XIDS) -> list[int]:
    """Xids on ``node`` that are neither hardware nor application errors (e.g. 69): enough for the
    device plugin to mark a GPU unhealthy, not enough to call the GPU faulty."""
    skip = set(hardware_xids) | APPLICATION_XIDS
    return sorted({x for x, _ in xids_on(facts, node) if x not in skip})


_GPU_MONITORING_WORDS = ("dcgm", "gpu-feature-discovery", "node-feature-discovery", "feature-discovery")
"""GPU-stack pods that watch or label GPUs but do not hand them to pods: DCGM and dcgm-exporter, feature
discovery. Their failure costs metrics or labels; the node still serves its GPUs."""
_GPU_SERVING_WORDS = ("device-plugin", "nvidia-driver", "driver-daemonset", "container-toolkit", "validator",
                      "mig-manager", "nvidia-dra")


def is_gpu_monitoring_pod(pod: K8sPod) -> bool:
    """A GPU-stack pod that only monitors or labels (DCGM, dcgm-exporter, GPU/node feature discovery) and
    no part of the path that serves GPUs to pods (device plugin, driver, toolkit, validators, MIG manager)."""
    if not is_gpu_infra_pod(pod):
        return False
    text = _pod_words(pod)
    return any(w in text for w in _GPU_MONITORING_WORDS) and not any(w in text for w in _GPU_SERVING_WORDS)


def _pod_words(pod: K8sPod) -> str:
    names = [pod.name, pod.owner_name or "", pod.labels.get("app.kubernetes.io/name", ""), pod.labels.get("app", ""),
             pod.labels.get("app.kubernetes.io/component", "")]
    images = [c.image or "" for c in pod.containers]
    return " ".join(n.lower() for n in names + [i for i in images if "nvidia" in i.lower() or "nvcr.io" in i.lower()])


def is_gpu_infra_pod(pod: K8sPod) -> bool:
    """A pod of the node's NVIDIA GPU stack (see ``_GPU_STACK_WORDS``), recognised by what it is: its pod,
    owner or label names, its ``app.kubernetes.io/part-of=gpu-operator`` label, or its containers' images
    (``nvcr.io/nvidia/k8s-device-plugin``, ``nvcr.io/nvidia/cloud-native/gpu-operator-validator`` ...)."""
    if pod.labels.get("app.kubernetes.io/part-of", "") in ("gpu-operator", "nvidia-gpu-operator"):
        return True
    text = _pod_words(pod)
    return any(w in text for w in _GPU_STACK_WORDS) and ("nvidia" in text or "gpu" in text or "dcgm" in text)
