"""Pod spec readers for the k8s-json parser: placement constraints and resource totals.

Shared by pods (``spec``) and by the pod templates of workloads (``spec.template.spec``, a Kubeflow job's
``spec.<kind>ReplicaSpecs.<role>.template.spec``). Shapes: the Kubernetes API reference, core/v1 PodSpec
(nodeSelector, affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms,
tolerations, runtimeClassName, containers[].resources).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tools.models.k8s import GPU_RESOURCE, MIG_RESOURCE_PREFIX, K8sNodeSelectorTerm, K8sPlacement, K8sSelectorRequirement, \
    K8sToleration
from tools.parsers.k8s._fields import Bad, as_dict, as_list, quantity, scalar, str_map

__all__ = ["placement", "resources"]

_MAX_ITEMS = 64


def _requirements(term: dict[str, Any], key: str) -> list[K8sSelectorRequirement]:
    out = []
    for r in as_list(term, key)[:_MAX_ITEMS]:
        if not isinstance(r, dict):
            raise Bad(f"an entry of {key} is not an object")
        values = as_list(r, "values")[:_MAX_ITEMS]
        out.append(K8sSelectorRequirement(key=scalar(r, "key", 317) or "", operator=scalar(r, "operator", 20) or "",
                                          values=[str(v)[:253] for v in values if not isinstance(v, (dict, list))]))
    return out


def placement(spec: dict[str, Any]) -> K8sPlacement:
    """The pod spec's nodeSelector, required node affinity terms, tolerations and runtime class."""
    required = as_dict(as_dict(as_dict(spec, "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution")
    terms = []
    for t in as_list(required, "nodeSelectorTerms")[:_MAX_ITEMS]:
        if not isinstance(t, dict):
            raise Bad("a nodeSelectorTerm is not an object")
        terms.append(K8sNodeSelectorTerm(match_expressions=_requirements(t, "matchExpressions"),
                                         match_fields=_requirements(t, "matchFields")))
    tolerations = []
    for t in as_list(spec, "tolerations")[:_MAX_ITEMS]:
        if not isinstance(t, dict):
            raise Bad("a toleration is not an object")
        tolerations.append(K8sToleration(key=scalar(t, "key", 317) or None, operator=scalar(t, "operator", 20) or "Equal",
                                         value=scalar(t, "value", 253), effect=scalar(t, "effect", 40) or None))
    return K8sPlacement(node_selector=str_map(spec, "nodeSelector", limit=_MAX_ITEMS), affinity_terms=terms,
                        tolerations=tolerations, runtime_class=scalar(spec, "runtimeClassName", 253))


def resources(spec: dict[str, Any]) -> dict[str, Any]:
    """Pod-level totals: sum over containers, or the largest init container when that is more.

    Returns the K8sPod fields gpu_request, gpu_limit, mig_request and, when given, cpu_request/limit (cores)
    and memory_request/limit_bytes. Extended resources (``nvidia.com/*``) default their requests to limits.
    """
    totals: dict[str, Decimal] = {}
    init_max: dict[str, Decimal] = {}
    for key, acc, add in (("containers", totals, True), ("initContainers", init_max, False)):
        for c in as_list(spec, key):
            if not isinstance(c, dict):
                raise Bad(f"an entry of {key} is not an object")
            res = as_dict(c, "resources")
            req, lim = as_dict(res, "requests"), as_dict(res, "limits")
            migs = sorted({k for k in (*req, *lim) if isinstance(k, str) and k.startswith(MIG_RESOURCE_PREFIX)})[:8]
            for name in ("cpu", "memory", GPU_RESOURCE, *migs):
                for label, src in (("req", req), ("lim", lim)):
                    q = quantity(src, name)
                    if q is None and label == "req" and name.startswith("nvidia.com/"):
                        q = quantity(lim, name)  # extended resources: requests default to limits
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
