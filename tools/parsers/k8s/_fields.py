"""Field readers shared by the k8s-json parser's modules: each checks a field's JSON shape and bounds its size.

A field of the wrong shape raises ``Bad``, which the parser turns into a ParseError naming the object's kind,
index and name. Quantities (``"8"``, ``"500m"``, ``"263412492Ki"``) are parsed with the official client's
``kubernetes.utils.parse_quantity``.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal, DecimalException
from typing import Any

from kubernetes.utils import parse_quantity

from tools.models.k8s import GPU_RESOURCE, MIG_RESOURCE_PREFIX, K8sCondition

__all__ = ["Bad", "TEXT_MAX", "as_dict", "as_list", "scalar", "integer", "timestamp", "quantity", "cores", "whole",
           "mig_counts", "device_counts", "conditions", "str_map"]

TEXT_MAX = 500
_MAX_QUANTITY = Decimal(2) ** 63


class Bad(Exception):
    """A field had the wrong shape; the parser turns it into a ParseError naming the object."""


def as_dict(obj: Any, key: str) -> dict[str, Any]:
    """``obj[key]`` as an object ({} when absent)."""
    v = obj.get(key) if isinstance(obj, dict) else None
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise Bad(f"{key} is not an object")
    return v


def as_list(obj: dict[str, Any], key: str) -> list[Any]:
    """``obj[key]`` as a list ([] when absent)."""
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise Bad(f"{key} is not a list")
    return v


def scalar(obj: dict[str, Any], key: str, n: int = TEXT_MAX) -> str | None:
    """``obj[key]`` as text of at most ``n`` characters (longer text is cut with an ellipsis)."""
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, (dict, list)):
        raise Bad(f"{key} is not a scalar")
    text = str(v)
    return text if len(text) <= n else text[: n - 1] + "…"


def integer(obj: dict[str, Any], key: str) -> int | None:
    """``obj[key]`` as an integer within ±2**63."""
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or abs(v) > 2**63:
        raise Bad(f"{key} is not an integer")
    return v


def timestamp(obj: dict[str, Any], key: str) -> datetime | None:
    """``obj[key]`` as an RFC 3339 time (``2026-03-04T10:15:00Z``)."""
    v = obj.get(key)
    if v in (None, ""):
        return None
    if not isinstance(v, str) or len(v) > 40:
        raise Bad(f"{key} is not a timestamp")
    try:
        return datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise Bad(f"{key} is not an RFC 3339 timestamp: {v[:40]!r}") from None


def quantity(res: dict[str, Any], key: str) -> Decimal | None:
    """A Kubernetes quantity (``"8"``, ``"500m"``, ``"2Ti"``) as a Decimal."""
    v = res.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int, float)) or len(str(v)) > 64:
        raise Bad(f"quantity {key} is malformed")
    try:
        q = parse_quantity(v)
    except (ValueError, DecimalException):
        raise Bad(f"quantity {key}={str(v)[:40]!r} is not a Kubernetes quantity") from None
    if not q.is_finite() or q.adjusted() > 19 or abs(q) >= _MAX_QUANTITY:
        raise Bad(f"quantity {key}={str(v)[:40]!r} is out of range")
    return q


def cores(res: dict[str, Any]) -> float | None:
    """The ``cpu`` quantity in cores."""
    q = quantity(res, "cpu")
    return None if q is None else float(q)


def whole(res: dict[str, Any], key: str) -> int | None:
    """A quantity as a whole number (bytes, devices)."""
    q = quantity(res, key)
    return None if q is None else int(q)


def mig_counts(res: dict[str, Any]) -> dict[str, int]:
    """``nvidia.com/mig-<profile>`` counts (MIG slices under the mixed strategy), keyed by the full resource name."""
    return {k[:80]: int(q) for k in list(res)[:64] if isinstance(k, str) and k.startswith(MIG_RESOURCE_PREFIX)
            and (q := quantity(res, k)) is not None}


_NOT_DEVICES = ("hugepages-", "kubernetes.io/", "k8s.io/")


def device_counts(res: dict[str, Any]) -> dict[str, int]:
    """Device-plugin (extended) resources other than whole GPUs and MIG slices: names with a domain
    (``rdma/hca_shared_devices_a``, ``amd.com/gpu``), not hugepages or Kubernetes' own, keyed by name."""
    return {k[:120]: int(q) for k in list(res)[:64] if isinstance(k, str) and "/" in k and k != GPU_RESOURCE
            and not k.startswith(MIG_RESOURCE_PREFIX) and not k.startswith(_NOT_DEVICES)
            and (q := quantity(res, k)) is not None}


def conditions(status: dict[str, Any]) -> list[K8sCondition]:
    """``status.conditions`` of any object."""
    out = []
    for c in as_list(status, "conditions")[:64]:
        if not isinstance(c, dict):
            raise Bad("a condition is not an object")
        out.append(K8sCondition(type=scalar(c, "type", 80) or "", status=scalar(c, "status", 20) or "",
                                reason=scalar(c, "reason", 120), message=scalar(c, "message"),
                                last_transition_time=timestamp(c, "lastTransitionTime")))
    return out


def str_map(meta: dict[str, Any], key: str, first: tuple[str, ...] = (), limit: int = 256) -> dict[str, str]:
    """A string map (labels, annotations, nodeSelector) of at most ``limit`` entries, keys starting with
    ``first`` kept before the others."""
    items = sorted(as_dict(meta, key).items(), key=lambda kv: not str(kv[0]).startswith(first)) if first \
        else list(as_dict(meta, key).items())
    return {str(k)[:253]: str(v)[:TEXT_MAX] for k, v in items[:limit]}
