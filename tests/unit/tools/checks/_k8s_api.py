"""Kubernetes API objects for check tests, in the shapes the API server returns them (core/v1 Node, Pod, Event;
events.k8s.io/v1 Event; batch/v1 Job; ResourceQuota), serialised as the JSON a `kubectl get -o json` or a raw
`GET /api/v1/...` prints — so the tests go through the real k8s-json parser. Values are placeholders."""

from __future__ import annotations

import json
from typing import Any

NOW = "2026-03-04T10:15:00Z"


def node(name: str, *, gpus: int | None = 8, allocatable: int | None = None, labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None, ready: str = "True", unschedulable: bool = False,
         conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A core/v1 Node with ``nvidia.com/gpu`` in capacity/allocatable (None: a CPU node)."""
    cap: dict[str, str] = {"cpu": "128", "memory": "2113389588Ki", "pods": "110"}
    alloc = dict(cap)
    if gpus is not None:
        cap["nvidia.com/gpu"] = str(gpus)
        alloc["nvidia.com/gpu"] = str(gpus if allocatable is None else allocatable)
    conds = [{"type": "Ready", "status": ready, "reason": "KubeletReady" if ready == "True" else "KubeletNotReady",
              "lastTransitionTime": "2026-03-01T00:00:00Z"}] + (conditions or [])
    spec: dict[str, Any] = {"podCIDR": "10.244.1.0/24"}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec, "status": {"capacity": cap, "allocatable": alloc, "conditions": conds,
                                     "nodeInfo": {"kubeletVersion": "v1.28.9"}}}


def pod(name: str, namespace: str = "ml", *, node_name: str | None = None, phase: str = "Running", gpus: int = 0,
        owner: tuple[str, str] | None = None, selector: dict[str, str] | None = None,
        affinity: list[dict[str, Any]] | None = None, tolerations: list[dict[str, Any]] | None = None,
        containers: list[dict[str, Any]] | None = None, scheduled_message: str | None = None,
        image: str = "registry.example.org/ml/train:1.0", labels: dict[str, str] | None = None,
        reason: str | None = None, message: str | None = None) -> dict[str, Any]:
    """A core/v1 Pod; ``containers`` are containerStatuses (default: one running, ready container)."""
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": image, "resources": {
        "limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}}]}
    if node_name:
        spec["nodeName"] = node_name
    if selector:
        spec["nodeSelector"] = selector
    if affinity is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": affinity}}}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "o-1",
                                    "controller": True}]
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    if scheduled_message:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": scheduled_message, "lastTransitionTime": "2026-03-04T08:00:00Z"}]
    if containers is None and phase == "Running":
        containers = [{"name": "main", "image": image, "ready": True, "restartCount": 0,
                       "state": {"running": {"startedAt": "2026-03-04T07:00:00Z"}}, "lastState": {}}]
    if containers:
        status["containerStatuses"] = containers
    return {"metadata": meta, "spec": spec, "status": status}


def core_event(reason: str, message: str, *, kind: str = "Pod", name: str, namespace: str | None = "ml",
               host: str | None = None, component: str = "kubelet", etype: str = "Warning", count: int = 1,
               last: str = NOW) -> dict[str, Any]:
    """A core/v1 Event (involvedObject / source / count / lastTimestamp)."""
    src: dict[str, str] = {"component": component}
    if host:
        src["host"] = host
    return {"metadata": {"name": f"{name}.17f9a0b1c2d3e4f5", "namespace": namespace or "default"},
            "involvedObject": {"kind": kind, "name": name, "namespace": namespace}, "reason": reason,
            "message": message, "source": src, "type": etype, "count": count,
            "firstTimestamp": "2026-03-04T08:00:00Z", "lastTimestamp": last}


def api_list(kind: str, items: list[dict[str, Any]]) -> str:
    """A typed list as the API server returns it: items carry no kind (``NodeList``, ``PodList``, ``EventList``)."""
    return json.dumps({"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "48212001"}, "items": items})


def kubectl_list(items: list[tuple[str, dict[str, Any]]]) -> str:
    """``kubectl get a,b -o json``: kind List, each item with its kind and apiVersion, 4-space indent."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                       "items": [{"apiVersion": "v1", "kind": k, **obj} for k, obj in items]}, indent=4)
