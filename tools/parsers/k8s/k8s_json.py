"""Parser for Kubernetes API JSON (format k8s-json): any object or list, as the API returns it.

Accepted documents, as the API server (or ``kubectl get -o json``) returns them::

    {"kind": "NodeList", "apiVersion": "v1", "metadata": {...}, "items": [{...}, ...]}   # items carry no kind
    {"kind": "PodList", ...} | {"kind": "EventList", ...}        # core/v1 or events.k8s.io/v1 events
    {"kind": "List", "items": [{"kind": "Node", ...}, {"kind": "Pod", ...}]}            # kubectl get a,b -o json
    {"kind": "Node", "apiVersion": "v1", "metadata": {...}, "spec": {...}, "status": {...}}  # one object
    {"kind": "ResourceQuota", ...} | {"kind": "Job", "apiVersion": "batch/v1", ...}
    {"kind": "PyTorchJob", "apiVersion": "kubeflow.org/v1", ...}                        # any kind

Nodes, pods and events become K8sNode / K8sPod / K8sEvent; ResourceQuotas K8sResourceQuota; any object with a
pod template (Jobs, Deployments, StatefulSets, operators' jobs) a K8sWorkload; every other kind a K8sOtherObject
naming it, so nothing a file holds is silently dropped. Quantities are parsed with the official client's
``kubernetes.utils.parse_quantity``. Shapes: the Kubernetes API reference (core/v1 Node, Pod, Event,
ResourceQuota; events.k8s.io/v1 Event; batch/v1; apps/v1) and kubeflow/training-operator v1; see
tests/fixtures/k8s-json/SOURCES.md.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from tools.errors import ParseError
from tools.models.k8s import GPU_RESOURCE, K8sContainerStatus, K8sEvent, K8sNode, K8sPod, K8sTaint
from tools.models.k8s_objects import K8sOtherObject, K8sResourceQuota, K8sWorkload
from tools.parsers.base import json_loads
from tools.parsers.k8s._fields import Bad, as_dict, as_list, conditions, cores, device_counts, integer, mig_counts, scalar, \
    str_map, timestamp, whole
from tools.parsers.k8s._objects import has_templates, other, quota, workload
from tools.parsers.k8s._spec import placement, resources

__all__ = ["parse_k8s_json"]

K8sObject = K8sNode | K8sPod | K8sEvent | K8sWorkload | K8sResourceQuota | K8sOtherObject

_MAX_DEPTH = 64
_MAX_LABELS = 128


def _node(obj: dict[str, Any], path: str) -> K8sNode:
    meta, spec, status = as_dict(obj, "metadata"), as_dict(obj, "spec"), as_dict(obj, "status")
    conds = conditions(status)
    ready = next((c for c in conds if c.type == "Ready"), None)
    cap, alloc = as_dict(status, "capacity"), as_dict(status, "allocatable")
    labels = str_map(meta, "labels", ("nvidia.com/",), limit=_MAX_LABELS)
    taints = []
    for t in as_list(spec, "taints"):
        if not isinstance(t, dict):
            raise Bad("a taint is not an object")
        taints.append(K8sTaint(key=scalar(t, "key", 253) or "", value=scalar(t, "value", 253), effect=scalar(t, "effect", 40)))
    return K8sNode(
        name=scalar(meta, "name", 253) or "", file=path,
        ready_status=ready.status if ready else None, ready_reason=ready.reason if ready else None,
        ready_message=ready.message if ready else None, ready_since=ready.last_transition_time if ready else None,
        conditions=[c for c in conds if c.type != "Ready"], unschedulable=spec.get("unschedulable") is True,
        taints=taints, capacity_cpu=cores(cap), allocatable_cpu=cores(alloc),
        capacity_memory_bytes=whole(cap, "memory"), allocatable_memory_bytes=whole(alloc, "memory"),
        capacity_gpu=whole(cap, GPU_RESOURCE), allocatable_gpu=whole(alloc, GPU_RESOURCE),
        allocatable_mig=mig_counts(alloc), allocatable_devices=device_counts(alloc),
        gpu_product=labels.get("nvidia.com/gpu.product"), labels=labels,
        kubelet_version=scalar(as_dict(status, "nodeInfo"), "kubeletVersion", 64),
    )


def _container(st: dict[str, Any], init: bool) -> K8sContainerStatus:
    state, last = as_dict(st, "state"), as_dict(as_dict(st, "lastState"), "terminated")
    kind, detail = "unknown", {}
    for k in ("running", "waiting", "terminated"):
        if state.get(k) is not None:
            kind, detail = k, as_dict(state, k)
            break
    restarts = integer(st, "restartCount") or 0
    ids = [cid.split("://", 1)[-1] for cid in (scalar(st, "containerID", 300), scalar(last, "containerID", 300)) if cid]
    return K8sContainerStatus(
        name=scalar(st, "name", 253) or "", init=init, container_ids=ids, image=scalar(st, "image", 300), ready=st.get("ready") is True,
        restart_count=max(restarts, 0), state=kind, state_reason=scalar(detail, "reason", 120),
        state_message=scalar(detail, "message"), exit_code=integer(detail, "exitCode"),
        last_terminated_reason=scalar(last, "reason", 120), last_terminated_exit_code=integer(last, "exitCode"),
        last_terminated_message=scalar(last, "message"), last_terminated_at=timestamp(last, "finishedAt"),
    )


def _pod(obj: dict[str, Any], path: str) -> K8sPod:
    meta, spec, status = as_dict(obj, "metadata"), as_dict(obj, "spec"), as_dict(obj, "status")
    owner = next((o for o in as_list(meta, "ownerReferences") if isinstance(o, dict) and o.get("controller")), None)
    if owner is None:
        owner = next((o for o in as_list(meta, "ownerReferences") if isinstance(o, dict)), {})
    conds = {c.type: c for c in conditions(status)}
    sched, ready = conds.get("PodScheduled"), conds.get("Ready")
    containers = [_container(c, True) for c in as_list(status, "initContainerStatuses") if isinstance(c, dict)]
    containers += [_container(c, False) for c in as_list(status, "containerStatuses") if isinstance(c, dict)]
    return K8sPod(
        namespace=scalar(meta, "namespace", 253) or "default", name=scalar(meta, "name", 253) or "", file=path,
        uid=scalar(meta, "uid", 80),
        phase=scalar(status, "phase", 40), status_reason=scalar(status, "reason", 120), status_message=scalar(status, "message"),
        node=scalar(spec, "nodeName", 253), owner_kind=scalar(owner, "kind", 80), owner_name=scalar(owner, "name", 253),
        labels=str_map(meta, "labels"), annotations=str_map(meta, "annotations"), containers=containers,
        scheduled_status=sched.status if sched else None, scheduled_reason=sched.reason if sched else None,
        scheduled_message=sched.message if sched else None,
        ready=(ready.status == "True") if ready else None, start_time=timestamp(status, "startTime"),
        deletion_timestamp=timestamp(meta, "deletionTimestamp"), deletion_grace_s=integer(meta, "deletionGracePeriodSeconds"),
        placement=placement(spec), **resources(spec),
    )


def _event(obj: dict[str, Any], path: str) -> K8sEvent:
    meta = as_dict(obj, "metadata")
    series = as_dict(obj, "series")
    if "regarding" in obj or "note" in obj or "deprecatedSource" in obj:  # events.k8s.io/v1
        ref, src = as_dict(obj, "regarding"), as_dict(obj, "deprecatedSource")
        message = scalar(obj, "note") or ""
        first, last = timestamp(obj, "deprecatedFirstTimestamp"), timestamp(obj, "deprecatedLastTimestamp")
        count = integer(series, "count") or integer(obj, "deprecatedCount") or 1
        component = scalar(obj, "reportingController", 120) or scalar(src, "component", 120)
        host = scalar(src, "host", 253) or scalar(obj, "reportingInstance", 253)
    else:  # core/v1
        ref, src = as_dict(obj, "involvedObject"), as_dict(obj, "source")
        message = scalar(obj, "message") or ""
        first, last = timestamp(obj, "firstTimestamp"), timestamp(obj, "lastTimestamp")
        count = integer(series, "count") or integer(obj, "count") or 1
        component = scalar(src, "component", 120) or scalar(obj, "reportingComponent", 120)
        host = scalar(src, "host", 253) or scalar(obj, "reportingInstance", 253)
    event_time = timestamp(obj, "eventTime")
    observed = timestamp(series, "lastObservedTime")
    newest = [t for t in (last, observed, event_time) if t is not None]
    return K8sEvent(
        namespace=scalar(meta, "namespace", 253), name=scalar(meta, "name", 253), file=path,
        object_kind=scalar(ref, "kind", 80), object_name=scalar(ref, "name", 253), object_namespace=scalar(ref, "namespace", 253),
        field_path=scalar(ref, "fieldPath", 253), type=scalar(obj, "type", 40), reason=scalar(obj, "reason", 120),
        message=message, count=max(count, 1), first_timestamp=first or event_time,
        last_timestamp=max(newest) if newest else None, source_component=component, source_host=host,
    )


_BUILDERS = {"Node": _node, "Pod": _pod, "Event": _event, "ResourceQuota": quota}


def _build(item: dict[str, Any], path: str, kind: str) -> K8sObject:
    """The typed model for one object of ``kind``: node, pod, event, quota, workload, or a record of its kind."""
    build = _BUILDERS.get(kind)
    if build is not None:
        return build(item, path)
    if has_templates(item):
        return workload(item, path, kind)
    return other(item, path, kind)


def _depth_ok(text: str) -> bool:
    depth = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > _MAX_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


_YAML_START = re.compile(r"\A(?:\s*#[^\n]*\n|\s*---\s*\n)*\s*(?:apiVersion|kind|items|metadata):")
"""``kubectl get ... -o yaml``: the same objects as -o json, as a YAML mapping."""
_YAML_ALIAS = re.compile(r"(?m)(?:^[^#\n]*:\s+|^\s*-\s+|[\[,{]\s*)[&*][\w-]")


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Safe YAML with timestamps left as text, as the JSON form gives them."""


_Loader.yaml_implicit_resolvers = {
    k: [r for r in v if r[0] != "tag:yaml.org,2002:timestamp"] for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def _yaml_doc(text: str, path: str) -> object:
    """The object of a ``-o yaml`` body. kubectl writes no anchors or aliases: a body with them is refused (an
    alias can expand a small file into a huge tree)."""
    if _YAML_ALIAS.search(text):
        raise ParseError(path, None, "YAML anchors or aliases: not kubectl output")
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise ParseError(path, mark.line + 1 if mark else None, f"invalid YAML: {str(e)[:120]}") from None


def parse_k8s_json(text: str, *, path: str) -> list[K8sObject]:
    """Parse a Kubernetes API response: a List (List, NodeList, PodList, EventList, JobList ...) or one object.

    Args:
        text: the JSON body as the API server returned it (or ``kubectl get ... -o json``), or the same objects
            as ``kubectl get ... -o yaml`` prints them.
        path: snapshot-relative path, for errors and for citing evidence (kept in ``file``).

    Returns:
        K8sNode / K8sPod / K8sEvent / K8sResourceQuota / K8sWorkload models in document order, and a
        K8sOtherObject for every other kind; items of an untyped list that carry no kind are skipped.
        CPU in cores, memory in bytes, ``nvidia.com/gpu`` as a count.

    Raises:
        ParseError: naming path (and line for invalid JSON, e.g. a truncated body) when the body is
            not JSON, is an API ``Status`` failure (its message given), names no kind (nor holds a list
            of items), or an object has a malformed field (the object's kind, index and name given).
    """
    if not _depth_ok(text):
        raise ParseError(path, None, f"JSON nested deeper than {_MAX_DEPTH} levels")
    try:
        doc = _yaml_doc(text, path) if _YAML_START.match(text) else json_loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(path, e.lineno, f"invalid JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        raise ParseError(path, None, "JSON nested too deeply") from None
    except ValueError as e:  # e.g. an integer beyond Python's digit limit
        raise ParseError(path, None, f"invalid JSON: {str(e)[:120]}") from None
    if not isinstance(doc, dict):
        raise ParseError(path, None, "not a Kubernetes API object (top level is not a JSON object)")
    kind = doc.get("kind")
    if kind == "Status":
        msg = str(doc.get("message", ""))[:300]
        raise ParseError(path, None, f"API returned a Status ({str(doc.get('reason', 'Failure'))[:40]}): {msg}")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        items, default_kind = doc["items"], kind[:-4] or None
    elif kind is None and isinstance(doc.get("items"), list):
        items, default_kind = doc["items"], None
    elif isinstance(kind, str) and kind and not kind.endswith("List"):
        items, default_kind = [doc], kind
    else:
        raise ParseError(path, None, f"unsupported kind {str(kind)[:60]!r} (expected an object's kind or a List of "
                                     "objects)")
    out: list[K8sObject] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ParseError(path, None, f"items[{i}] is not an object")
        item_kind = item.get("kind") or default_kind
        if not isinstance(item_kind, str) or not item_kind:
            continue  # an untyped item of an untyped list: nothing names what it is
        try:
            out.append(_build(item, path, item_kind[:80]))
        except Bad as e:
            name = item.get("metadata", {}).get("name") if isinstance(item.get("metadata"), dict) else None
            raise ParseError(path, None, f"items[{i}] {item_kind[:80]} {str(name)[:80]!r}: {e}") from None
    return out
