"""What the Kubernetes checks share: culprit names, evidence from objects and events, Xid lookup.

Not a check itself; ``k8s_*`` check modules import it. Everything here reads Facts only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tools.checks.gpu_xid import XidConfig
from tools.facts import Facts
from tools.models.findings import Evidence
from tools.models.k8s import K8sContainerStatus, K8sEvent, K8sNode, K8sPod

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
    "is_gpu_infra_pod",
    "k8s_node",
]

APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})
"""Xids NVIDIA's device plugin treats as application errors (it does not mark the GPU unhealthy)."""
HARDWARE_XIDS = XidConfig().hardware_xids
"""Xids that mean the GPU itself is bad: the same catalogue check_gpu_xid uses."""

_ACTIVE = ("Pending", "Running", "Unknown", None)
_XID_RE = re.compile(r"\bXid\b\D{0,12}?(\d{1,3})\b", re.IGNORECASE)
_GPU_INFRA_NAMES = ("nvidia-device-plugin", "nvidia-driver-daemonset", "nvidia-container-toolkit",
                    "nvidia-operator-validator")
"""Pods whose failure takes a node's GPUs away from the scheduler (device plugin, or the driver and
container toolkit it depends on, and the GPU operator's validator of both)."""


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
    return next((n for n in facts.k8s_nodes if n.name == name), None)


def active_pods_on(facts: Facts, node: str) -> list[K8sPod]:
    """Pods bound to ``node`` that have not finished (Pending, Running, Unknown)."""
    return [p for p in facts.k8s_pods if p.node == node and p.phase in _ACTIVE]


def pod_events(facts: Facts, namespace: str | None, name: str) -> list[K8sEvent]:
    """Events about one pod (namespace matched when both sides know it)."""
    out = []
    for e in facts.k8s_events:
        ns = e.object_namespace or e.namespace
        if e.object_kind == "Pod" and e.object_name == name and (ns is None or namespace is None or ns == namespace):
            out.append(e)
    return out


def node_events(facts: Facts, name: str) -> list[K8sEvent]:
    """Events about one node."""
    return [e for e in facts.k8s_events if e.object_kind == "Node" and e.object_name == name]


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
    for ev in facts.kernel_events:
        if ev.node != node:
            continue
        xid = {"fallen_off_bus": 79, "gpu_ecc": 48}.get(ev.kind, ev.xid if ev.kind == "xid" else None)
        if xid is not None:
            out.append((xid, Evidence(text=_clip(ev.message), file=ev.file, line=ev.line)))
    for s in facts.gpu_samples:
        if s.node == node and s.name == "DCGM_FI_DEV_XID_ERRORS" and s.value > 0:
            out.append((int(s.value), Evidence(text=f"DCGM_FI_DEV_XID_ERRORS={s.value:g} on {node} GPU {s.gpu}",
                                               metric=s.name, value=s.value, unit="xid")))
    for e in facts.k8s_events:
        about = (e.object_kind == "Node" and e.object_name == node) or e.source_host == node
        m = _XID_RE.search(e.message) if about else None
        if m:
            out.append((int(m.group(1)), event_evidence(e)))
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


def is_gpu_infra_pod(pod: K8sPod) -> bool:
    """A pod of the node's NVIDIA GPU stack: device plugin, driver or container-toolkit daemonset,
    operator validator (matched on pod name, owner name, or ``app`` / ``app.kubernetes.io/name`` label)."""
    names = (pod.name, pod.owner_name or "", pod.labels.get("app.kubernetes.io/name", ""), pod.labels.get("app", ""))
    return any(n.startswith(_GPU_INFRA_NAMES) for n in names if n)
