"""Typed Kubernetes objects beyond nodes, pods and events: the objects that make pods, and quotas.

The controllers and operators that create pods (a batch/v1 Job, a Deployment or StatefulSet, a Kubeflow
PyTorchJob / MPIJob ...: one ``K8sWorkload`` with one ``K8sPodTemplate`` per replica type), a namespace's
``ResourceQuota`` (hard limits against what is used), and a record of any other kind that was read
(``K8sOtherObject``: kind and name, so the file counts as read). Shapes: the Kubernetes API reference
(core/v1 ResourceQuota; batch/v1 Job; apps/v1) and Kubeflow's
training-operator v1 API (``spec.pytorchReplicaSpecs.<Master|Worker>.template``). Quantities in a quota are
normalised as in tools.models.k8s (CPU in cores, memory in bytes, ``nvidia.com/gpu`` as a count).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from tools.models.k8s import K8sCondition, K8sPlacement

__all__ = ["K8sPodTemplate", "K8sWorkload", "K8sResourceQuota", "K8sOtherObject"]


class K8sPodTemplate(BaseModel):
    """What one replica type of a workload would create: count, GPUs per pod and placement."""

    role: str = ""
    """The replica type (``Master``, ``Worker``, ``Launcher``), empty for a plain ``spec.template``."""
    replicas: int | None = None
    gpu_request: int = 0
    """``nvidia.com/gpu`` per pod (requests, else limits), summed over containers."""
    placement: K8sPlacement = Field(default_factory=K8sPlacement)


class K8sWorkload(BaseModel):
    """An object that creates pods: batch/v1 Job, apps/v1 Deployment / StatefulSet / ReplicaSet / DaemonSet, or an
    operator's job (Kubeflow PyTorchJob, MPIJob, TFJob, ...), recognised by its pod template(s)."""

    kind: str
    api_version: str | None = None
    namespace: str
    name: str
    file: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    created_at: datetime | None = None
    """``metadata.creationTimestamp`` (UTC)."""
    templates: list[K8sPodTemplate] = Field(default_factory=list)
    conditions: list[K8sCondition] = Field(default_factory=list)
    """``status.conditions`` (Job: Complete, Failed, Suspended; PyTorchJob: Created, Running, Succeeded ...)."""
    active: int | None = None
    """Job: pods running now (``status.active``); Deployment/StatefulSet: ``status.replicas``."""
    succeeded: int | None = None
    failed: int | None = None

    @property
    def ref(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def gpu_request(self) -> int:
        """GPUs one pod of the largest replica type needs."""
        return max((t.gpu_request for t in self.templates), default=0)


class K8sResourceQuota(BaseModel):
    """A namespace's ResourceQuota: ``status.hard`` (else ``spec.hard``) against ``status.used``."""

    namespace: str
    name: str
    file: str | None = None
    hard: dict[str, float] = Field(default_factory=dict)
    """Resource name (``requests.nvidia.com/gpu``, ``pods``, ``limits.memory``) -> limit (cores, bytes, counts)."""
    used: dict[str, float] = Field(default_factory=dict)

    def headroom(self, resource: str) -> float | None:
        """``hard - used`` for one resource; None when the quota does not limit it."""
        if resource not in self.hard:
            return None
        return self.hard[resource] - self.used.get(resource, 0.0)


class K8sOtherObject(BaseModel):
    """Any other object a file held (a Service, a ConfigMap, a custom resource without pod templates): recorded
    by kind and name so the file counts as read; no check reads it yet."""

    kind: str
    api_version: str | None = None
    namespace: str | None = None
    name: str
    file: str | None = None
