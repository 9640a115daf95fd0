"""Parser for Kubernetes API JSON (format k8s-json): nodes, pods and events.

Accepted documents, as the API server (or ``kubectl get -o json``) returns them::

    {"kind": "NodeList", "apiVersion": "v1", "metadata": {...}, "items": [{...}, ...]}   # items carry no kind
    {"kind": "PodList", ...} | {"kind": "EventList", ...}        # core/v1 or events.k8s.io/v1 events
    {"kind": "List", "items": [{"kind": "Node", ...}, {"kind": "Pod", ...}]}            # kubectl get a,b -o json
    {"kind": "Node", "apiVersion": "v1", "metadata": {...}, "spec": {...}, "status": {...}}  # one object

Items of other kinds (Deployments, Services, ...) in a ``List`` are skipped: Warden reads only
nodes, pods and events. Quantities (``"8"``, ``"500m"``, ``"263412492Ki"``) are parsed with the
official client's ``kubernetes.utils.parse_quantity``. Shapes: the Kubernetes API reference
(core/v1 Node, Pod, Event; events.k8s.io/v1 Event); see tests/fixtures/k8s-json/SOURCES.md.
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal, DecimalException
from typing import Any

from kubernetes.utils import parse_quantity

from tools.errors import ParseError
from tools.models.k8s import GPU_RESOURCE, MIG_RESOURCE_PREFIX, K8sCondition, K8sContainerStatus, K8sEvent, K8sNode, K8sPod, K8sTaint
from tools.parsers.base import json_loads

__all__ = ["parse_k8s_json"]

K8sObject = K8sNode | K8sPod | K8sEvent

_TEXT_MAX = 500
_MAX_QUANTITY = Decimal(2) ** 63
_MAX_DEPTH = 64
_LABEL_PREFIXES = ("nvidia.com/", "node-role.kubernetes.io/", "node.kubernetes.io/instance-type",
                   "topology.kubernetes.io/", "kubernetes.io/hostname")


class _Bad(Exception):
    """Internal: a field had the wrong shape; turned into ParseError naming the object."""


def _d(obj: Any, key: str) -> dict[str, Any]:
    v = obj.get(key) if isinstance(obj, dict) else None
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise _Bad(f"{key} is not an object")
    return v


def _l(obj: dict[str, Any], key: str) -> list[Any]:
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise _Bad(f"{key} is not a list")
    return v


def _s(obj: dict[str, Any], key: str, n: int = _TEXT_MAX) -> str | None:
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, (dict, list)):
        raise _Bad(f"{key} is not a scalar")
    text = str(v)
    return text if len(text) <= n else text[: n - 1] + "…"


def _int(obj: dict[str, Any], key: str) -> int | None:
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or abs(v) > 2**63:
        raise _Bad(f"{key} is not an integer")
    return v


def _time(obj: dict[str, Any], key: str) -> datetime | None:
    v = obj.get(key)
    if v in (None, ""):
        return None
    if not isinstance(v, str) or len(v) > 40:
        raise _Bad(f"{key} is not a timestamp")
    try:
        return datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise _Bad(f"{key} is not an RFC 3339 timestamp: {v[:40]!r}") from None


def _qty(res: dict[str, Any], key: str) -> Decimal | None:
    v = res.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int, float)) or len(str(v)) > 64:
        raise _Bad(f"quantity {key} is malformed")
    try:
        q = parse_quantity(v)
    except (ValueError, DecimalException):
        raise _Bad(f"quantity {key}={str(v)[:40]!r} is not a Kubernetes quantity") from None
    if not q.is_finite() or q.adjusted() > 19 or abs(q) >= _MAX_QUANTITY:
        raise _Bad(f"quantity {key}={str(v)[:40]!r} is out of range")
    return q


def _cores(res: dict[str, Any]) -> float | None:
    q = _qty(res, "cpu")
    return None if q is None else float(q)


def _whole(res: dict[str, Any], key: str) -> int | None:
    q = _qty(res, key)
    return None if q is None else int(q)


def _mig(res: dict[str, Any]) -> dict[str, int]:
    """``nvidia.com/mig-<profile>`` counts (MIG slices under the mixed strategy), keyed by the full resource name."""
    return {k[:80]: int(q) for k in list(res)[:64] if isinstance(k, str) and k.startswith(MIG_RESOURCE_PREFIX)
            and (q := _qty(res, k)) is not None}


def _conditions(status: dict[str, Any]) -> list[K8sCondition]:
    out = []
    for c in _l(status, "conditions"):
        if not isinstance(c, dict):
            raise _Bad("a condition is not an object")
        out.append(K8sCondition(type=_s(c, "type", 80) or "", status=_s(c, "status", 20) or "",
                                reason=_s(c, "reason", 120), message=_s(c, "message"),
                                last_transition_time=_time(c, "lastTransitionTime")))
    return out


def _strmap(meta: dict[str, Any], key: str, keep: tuple[str, ...] | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in _d(meta, key).items():
        if keep is None or k.startswith(keep):
            out[str(k)[:253]] = str(v)[:_TEXT_MAX]
    return out


def _node(obj: dict[str, Any], path: str) -> K8sNode:
    meta, spec, status = _d(obj, "metadata"), _d(obj, "spec"), _d(obj, "status")
    conds = _conditions(status)
    ready = next((c for c in conds if c.type == "Ready"), None)
    cap, alloc = _d(status, "capacity"), _d(status, "allocatable")
    labels = _strmap(meta, "labels", _LABEL_PREFIXES)
    taints = []
    for t in _l(spec, "taints"):
        if not isinstance(t, dict):
            raise _Bad("a taint is not an object")
        taints.append(K8sTaint(key=_s(t, "key", 253) or "", value=_s(t, "value", 253), effect=_s(t, "effect", 40)))
    return K8sNode(
        name=_s(meta, "name", 253) or "", file=path,
        ready_status=ready.status if ready else None, ready_reason=ready.reason if ready else None,
        ready_message=ready.message if ready else None, ready_since=ready.last_transition_time if ready else None,
        conditions=[c for c in conds if c.type != "Ready"], unschedulable=spec.get("unschedulable") is True,
        taints=taints, capacity_cpu=_cores(cap), allocatable_cpu=_cores(alloc),
        capacity_memory_bytes=_whole(cap, "memory"), allocatable_memory_bytes=_whole(alloc, "memory"),
        capacity_gpu=_whole(cap, GPU_RESOURCE), allocatable_gpu=_whole(alloc, GPU_RESOURCE),
        allocatable_mig=_mig(alloc), gpu_product=labels.get("nvidia.com/gpu.product"), labels=labels,
        kubelet_version=_s(_d(status, "nodeInfo"), "kubeletVersion", 64),
    )


def _container(st: dict[str, Any], init: bool) -> K8sContainerStatus:
    state, last = _d(st, "state"), _d(_d(st, "lastState"), "terminated")
    kind, detail = "unknown", {}
    for k in ("running", "waiting", "terminated"):
        if state.get(k) is not None:
            kind, detail = k, _d(state, k)
            break
    restarts = _int(st, "restartCount") or 0
    return K8sContainerStatus(
        name=_s(st, "name", 253) or "", init=init, image=_s(st, "image", 300), ready=st.get("ready") is True,
        restart_count=max(restarts, 0), state=kind, state_reason=_s(detail, "reason", 120),
        state_message=_s(detail, "message"), exit_code=_int(detail, "exitCode"),
        last_terminated_reason=_s(last, "reason", 120), last_terminated_exit_code=_int(last, "exitCode"),
        last_terminated_message=_s(last, "message"), last_terminated_at=_time(last, "finishedAt"),
    )


def _resources(spec: dict[str, Any]) -> dict[str, Any]:
    """Pod-level totals: sum over containers, or the largest init container when that is more."""
    totals: dict[str, Decimal] = {}
    init_max: dict[str, Decimal] = {}
    for key, acc, add in (("containers", totals, True), ("initContainers", init_max, False)):
        for c in _l(spec, key):
            if not isinstance(c, dict):
                raise _Bad(f"an entry of {key} is not an object")
            res = _d(c, "resources")
            req, lim = _d(res, "requests"), _d(res, "limits")
            migs = sorted({k for k in (*req, *lim) if isinstance(k, str) and k.startswith(MIG_RESOURCE_PREFIX)})[:8]
            for name in ("cpu", "memory", GPU_RESOURCE, *migs):
                for label, src in (("req", req), ("lim", lim)):
                    q = _qty(src, name)
                    if q is None and label == "req" and name.startswith("nvidia.com/"):
                        q = _qty(lim, name)  # extended resources: requests default to limits
                    if q is None:
                        continue
                    k = f"{label}:{name}"
                    acc[k] = acc.get(k, Decimal(0)) + q if add else max(acc.get(k, Decimal(0)), q)
    for k, v in init_max.items():
        totals[k] = max(totals.get(k, Decimal(0)), v)
    out: dict[str, Any] = {
        "gpu_request": int(totals.get(f"req:{GPU_RESOURCE}", 0)), "gpu_limit": int(totals.get(f"lim:{GPU_RESOURCE}", 0)),
        "mig_request": {k[4:]: int(v) for k, v in totals.items() if k.startswith(f"req:{MIG_RESOURCE_PREFIX}") and v},
    }
    for field, k, conv in (("cpu_request", "req:cpu", float), ("cpu_limit", "lim:cpu", float),
                           ("memory_request_bytes", "req:memory", int), ("memory_limit_bytes", "lim:memory", int)):
        if k in totals:
            out[field] = conv(totals[k])
    return out


def _pod(obj: dict[str, Any], path: str) -> K8sPod:
    meta, spec, status = _d(obj, "metadata"), _d(obj, "spec"), _d(obj, "status")
    owner = next((o for o in _l(meta, "ownerReferences") if isinstance(o, dict) and o.get("controller")), None)
    if owner is None:
        owner = next((o for o in _l(meta, "ownerReferences") if isinstance(o, dict)), {})
    conds = {c.type: c for c in _conditions(status)}
    sched, ready = conds.get("PodScheduled"), conds.get("Ready")
    containers = [_container(c, True) for c in _l(status, "initContainerStatuses") if isinstance(c, dict)]
    containers += [_container(c, False) for c in _l(status, "containerStatuses") if isinstance(c, dict)]
    return K8sPod(
        namespace=_s(meta, "namespace", 253) or "default", name=_s(meta, "name", 253) or "", file=path,
        phase=_s(status, "phase", 40), status_reason=_s(status, "reason", 120), status_message=_s(status, "message"),
        node=_s(spec, "nodeName", 253), owner_kind=_s(owner, "kind", 80), owner_name=_s(owner, "name", 253),
        labels=_strmap(meta, "labels"), annotations=_strmap(meta, "annotations"), containers=containers,
        scheduled_status=sched.status if sched else None, scheduled_reason=sched.reason if sched else None,
        scheduled_message=sched.message if sched else None,
        ready=(ready.status == "True") if ready else None, start_time=_time(status, "startTime"),
        **_resources(spec),
    )


def _event(obj: dict[str, Any], path: str) -> K8sEvent:
    meta = _d(obj, "metadata")
    series = _d(obj, "series")
    if "regarding" in obj or "note" in obj or "deprecatedSource" in obj:  # events.k8s.io/v1
        ref, src = _d(obj, "regarding"), _d(obj, "deprecatedSource")
        message = _s(obj, "note") or ""
        first, last = _time(obj, "deprecatedFirstTimestamp"), _time(obj, "deprecatedLastTimestamp")
        count = _int(series, "count") or _int(obj, "deprecatedCount") or 1
        component = _s(obj, "reportingController", 120) or _s(src, "component", 120)
        host = _s(src, "host", 253) or _s(obj, "reportingInstance", 253)
    else:  # core/v1
        ref, src = _d(obj, "involvedObject"), _d(obj, "source")
        message = _s(obj, "message") or ""
        first, last = _time(obj, "firstTimestamp"), _time(obj, "lastTimestamp")
        count = _int(series, "count") or _int(obj, "count") or 1
        component = _s(src, "component", 120) or _s(obj, "reportingComponent", 120)
        host = _s(src, "host", 253) or _s(obj, "reportingInstance", 253)
    event_time = _time(obj, "eventTime")
    observed = _time(series, "lastObservedTime")
    newest = [t for t in (last, observed, event_time) if t is not None]
    return K8sEvent(
        namespace=_s(meta, "namespace", 253), name=_s(meta, "name", 253), file=path,
        object_kind=_s(ref, "kind", 80), object_name=_s(ref, "name", 253), object_namespace=_s(ref, "namespace", 253),
        field_path=_s(ref, "fieldPath", 253), type=_s(obj, "type", 40), reason=_s(obj, "reason", 120),
        message=message, count=max(count, 1), first_timestamp=first or event_time,
        last_timestamp=max(newest) if newest else None, source_component=component, source_host=host,
    )


_BUILDERS = {"Node": _node, "Pod": _pod, "Event": _event}


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


def parse_k8s_json(text: str, *, path: str) -> list[K8sObject]:
    """Parse a Kubernetes API response: a List (List, NodeList, PodList, EventList) or one object.

    Args:
        text: the JSON body as the API server returned it (or ``kubectl get ... -o json``).
        path: snapshot-relative path, for errors and for citing evidence (kept in ``file``).

    Returns:
        K8sNode / K8sPod / K8sEvent models in document order; items of other kinds are skipped.
        CPU in cores, memory in bytes, ``nvidia.com/gpu`` as a count.

    Raises:
        ParseError: naming path (and line for invalid JSON, e.g. a truncated body) when the body is
            not JSON, is an API ``Status`` failure (its message given), has an unsupported top-level
            kind, or an object has a malformed field (the object's kind, index and name given).
    """
    if not _depth_ok(text):
        raise ParseError(path, None, f"JSON nested deeper than {_MAX_DEPTH} levels")
    try:
        doc = json_loads(text)
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
    if kind in _BUILDERS:
        items, default_kind = [doc], kind
    elif isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        items, default_kind = doc["items"], kind[:-4] or None
    elif kind is None and isinstance(doc.get("items"), list):
        items, default_kind = doc["items"], None
    else:
        raise ParseError(path, None, f"unsupported kind {str(kind)[:60]!r} (expected a List, Node, Pod or Event)")
    out: list[K8sObject] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ParseError(path, None, f"items[{i}] is not an object")
        item_kind = item.get("kind") or default_kind
        build = _BUILDERS.get(item_kind) if isinstance(item_kind, str) else None
        if build is None:
            continue
        try:
            out.append(build(item, path))
        except _Bad as e:
            name = item.get("metadata", {}).get("name") if isinstance(item.get("metadata"), dict) else None
            raise ParseError(path, None, f"items[{i}] {item_kind} {str(name)[:80]!r}: {e}") from None
    return out
