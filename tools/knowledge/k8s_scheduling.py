"""Kubernetes scheduling facts: the taints that are a node's state, and what kube-scheduler says when a pod fits nowhere.

Sources: the "Taints and Tolerations" docs (taints the node lifecycle controller and the kubelet add:
``node.kubernetes.io/not-ready``, ``unreachable``, ``memory-pressure``, ``disk-pressure``, ``pid-pressure``,
``network-unavailable``, ``unschedulable``, ``out-of-service``; the cloud provider's
``node.cloudprovider.kubernetes.io/uninitialized`` and ``shutdown``), the ExtendedResourceToleration admission
controller (a node dedicated to an extended resource is tainted with the resource's name as key,
``nvidia.com/gpu``, and pods requesting it are expected to tolerate it), and kube-scheduler's FailedScheduling
messages as they changed across versions::

    1.5-1.9   pod (x) failed to fit in any node\\nfit failure summary on nodes : MatchNodeSelector (2), PodToleratesNodeTaints (1)
              No nodes are available that match all of the following predicates:: Insufficient nvidia.com/gpu (2), MatchNodeSelector (1).
    1.10-1.17 0/3 nodes are available: 1 node(s) had taints that the pod didn't tolerate, 2 node(s) didn't match node selector.
    1.18-1.24 0/3 nodes are available: 1 node(s) had taint {nvidia.com/gpu: present}, that the pod didn't tolerate, 2 Insufficient nvidia.com/gpu.
    1.25+     0/8 nodes are available: 4 Insufficient nvidia.com/gpu, 4 node(s) had untolerated taint {nvidia.com/gpu: present}.
              preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling.
    1.20+     N node(s) didn't match Pod's node affinity/selector (1.20: "didn't match Pod's node affinity")
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["NODE_STATE_TAINT_PREFIXES", "is_node_state_taint", "Unfit", "SchedulerVerdict", "read_failed_scheduling"]

NODE_STATE_TAINT_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
"""Taints that say what state a node is in (set by the kubelet, the node lifecycle controller, ``kubectl cordon``
or the cloud provider), not what it is dedicated to: a pod not tolerating them is not the pod's mistake."""


def is_node_state_taint(key: str) -> bool:
    """True for taints describing the node's state (not-ready, disk-pressure, unschedulable, ...)."""
    return key.startswith(NODE_STATE_TAINT_PREFIXES)


UnfitKind = Literal["selector", "taint", "insufficient", "unschedulable", "other"]


@dataclass(frozen=True)
class Unfit:
    """One reason kube-scheduler gave, with how many nodes it excluded."""

    nodes: int
    kind: UnfitKind
    text: str
    taint_key: str | None = None
    """For ``taint``: the key named in ``{key: value}`` (1.18+); None in older messages."""
    resource: str | None = None
    """For ``insufficient``: the resource (``nvidia.com/gpu``, ``cpu``)."""


@dataclass
class SchedulerVerdict:
    """A FailedScheduling message read: how many nodes there were and why each group was excluded."""

    total: int | None
    reasons: list[Unfit] = field(default_factory=list)

    def excluded_by(self, kind: UnfitKind) -> int:
        """Nodes excluded for this kind of reason."""
        return sum(r.nodes for r in self.reasons if r.kind == kind)


_TOTAL = re.compile(r"\b0/(\d+) nodes are available:")
_REASON = re.compile(r"(\d+) ((?:node\(s\) had taint \{[^}]*\}, that the pod didn't tolerate)|[^,]+?)(?=, \d+ |\.\s|\.$|$)")
_PREDICATE = re.compile(r"([A-Za-z][\w./ -]*?) \((\d+)\)")
_TAINT_KEY = re.compile(r"\{([^:}]+):")


def _classify(text: str) -> tuple[UnfitKind, str | None, str | None]:
    low = text.lower()
    if "node selector" in low or "node affinity" in low or "matchnodeselector" in low.replace(" ", ""):
        return "selector", None, None
    if "taint" in low:
        m = _TAINT_KEY.search(text)
        return "taint", (m.group(1).strip() if m else None), None
    if low.startswith("insufficient "):
        return "insufficient", None, text.split(None, 1)[1].strip()
    if "unschedulable" in low:
        return "unschedulable", None, None
    return "other", None, None


def read_failed_scheduling(message: str) -> SchedulerVerdict | None:
    """The reasons of a FailedScheduling / PodScheduled=False message (any of the layouts above); None when the
    message is not one. Only the part before ``preemption:`` is read (the rest is about preemption victims)."""
    head = message.split("preemption:", 1)[0]
    m = _TOTAL.search(head)
    if m:
        body = head[m.end():]
        reasons = []
        for count, text in _REASON.findall(body):
            kind, key, res = _classify(text.strip())
            reasons.append(Unfit(int(count), kind, text.strip(), key, res))
        return SchedulerVerdict(int(m.group(1)), reasons) if reasons else None
    if "fit failure summary" in head or "match all of the following predicates" in head:
        body = head.split(":", 1)[-1] if "summary" in head else head.split("predicates:", 1)[-1]
        reasons = []
        for name, count in _PREDICATE.findall(body):
            name = name.strip(" :")
            if name == "PodToleratesNodeTaints":
                reasons.append(Unfit(int(count), "taint", name))
            else:
                kind, key, res = _classify(name)
                reasons.append(Unfit(int(count), kind, name, key, res))
        return SchedulerVerdict(None, reasons) if reasons else None
    return None
