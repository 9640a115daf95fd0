"""k8s-json readers for objects other than nodes, pods and events: workloads, ResourceQuotas, anything else.

A workload is any object with a pod template: ``spec.template`` (batch/v1 Job, apps/v1 Deployment,
StatefulSet, ReplicaSet, DaemonSet), ``spec.jobTemplate.spec.template`` (CronJob), or Kubeflow training-operator
replica specs (``spec.pytorchReplicaSpecs``, ``mpiReplicaSpecs``, ``tfReplicaSpecs`` ...: any
``spec.<x>ReplicaSpecs.<role>.template``). A ResourceQuota gives ``status.hard`` (else ``spec.hard``) and
``status.used``. Any other kind is recorded by kind and name. Shapes: the Kubernetes API reference (core/v1
ResourceQuota, batch/v1 Job and CronJob, apps/v1) and kubeflow/training-operator's v1 API.
"""

from __future__ import annotations

from typing import Any

from tools.models.k8s_objects import K8sOtherObject, K8sPodTemplate, K8sResourceQuota, K8sWorkload
from tools.parsers.k8s._fields import Bad, as_dict, conditions, integer, quantity, scalar, str_map, timestamp
from tools.parsers.k8s._spec import placement, resources

__all__ = ["workload", "quota", "other", "has_templates"]

_MAX_ROLES = 16


def _template(role: str, replicas: int | None, tmpl: dict[str, Any]) -> K8sPodTemplate:
    spec = as_dict(tmpl, "spec")
    return K8sPodTemplate(role=role[:80], replicas=replicas, gpu_request=resources(spec)["gpu_request"],
                          placement=placement(spec))


def _templates(spec: dict[str, Any]) -> list[K8sPodTemplate]:
    if "template" in spec:
        return [_template("", integer(spec, "replicas") or integer(spec, "parallelism"), as_dict(spec, "template"))]
    job = as_dict(as_dict(spec, "jobTemplate"), "spec")
    if "template" in job:
        return [_template("", integer(job, "parallelism"), as_dict(job, "template"))]
    out = []
    for key in [k for k in spec if isinstance(k, str) and k.endswith("ReplicaSpecs")][:4]:
        for role, rs in list(as_dict(spec, key).items())[:_MAX_ROLES]:
            if not isinstance(rs, dict):
                raise Bad(f"{key}.{str(role)[:40]} is not an object")
            out.append(_template(str(role), integer(rs, "replicas"), as_dict(rs, "template")))
    return out


def has_templates(obj: dict[str, Any]) -> bool:
    """Whether the object creates pods (has a pod template in one of the shapes above)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return False
    job = spec.get("jobTemplate")
    return "template" in spec or (isinstance(job, dict) and isinstance(job.get("spec"), dict)
                                  and "template" in job["spec"]) \
        or any(isinstance(k, str) and k.endswith("ReplicaSpecs") for k in spec)


def workload(obj: dict[str, Any], path: str, kind: str) -> K8sWorkload:
    """One pod-creating object (see the module docstring)."""
    meta, spec, status = as_dict(obj, "metadata"), as_dict(obj, "spec"), as_dict(obj, "status")
    active = integer(status, "active")
    if active is None and "replicaStatuses" in status:  # Kubeflow: per-role counters
        roles = [r for r in as_dict(status, "replicaStatuses").values() if isinstance(r, dict)]
        active = sum(integer(r, "active") or 0 for r in roles[:_MAX_ROLES])
    return K8sWorkload(
        kind=kind[:80], api_version=scalar(obj, "apiVersion", 120), namespace=scalar(meta, "namespace", 253) or "default",
        name=scalar(meta, "name", 253) or "", file=path, labels=str_map(meta, "labels"),
        created_at=timestamp(meta, "creationTimestamp"), templates=_templates(spec), conditions=conditions(status),
        active=active if active is not None else integer(status, "replicas"),
        succeeded=integer(status, "succeeded"), failed=integer(status, "failed"),
    )


def _amounts(res: dict[str, Any]) -> dict[str, float]:
    out = {}
    for k in list(res)[:64]:
        q = quantity(res, k)
        if q is not None:
            out[str(k)[:253]] = float(q)
    return out


def quota(obj: dict[str, Any], path: str) -> K8sResourceQuota:
    """A core/v1 ResourceQuota: hard limits (status, else spec) and what is used."""
    meta, spec, status = as_dict(obj, "metadata"), as_dict(obj, "spec"), as_dict(obj, "status")
    hard = as_dict(status, "hard") or as_dict(spec, "hard")
    return K8sResourceQuota(namespace=scalar(meta, "namespace", 253) or "default", name=scalar(meta, "name", 253) or "",
                            file=path, hard=_amounts(hard), used=_amounts(as_dict(status, "used")))


def other(obj: dict[str, Any], path: str, kind: str) -> K8sOtherObject:
    """Any other object: its kind and name only."""
    meta = as_dict(obj, "metadata")
    return K8sOtherObject(kind=kind[:80], api_version=scalar(obj, "apiVersion", 120),
                          namespace=scalar(meta, "namespace", 253), name=scalar(meta, "name", 253) or "", file=path)
