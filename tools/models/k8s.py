"""Typed Kubernetes objects: what an on-call engineer reads from nodes, pods and events.

Parsed from the API's JSON (format k8s-json) or from ``kubectl get events`` tables (format
k8s-events-text). Quantities are normalised: CPU in cores, memory in bytes, ``nvidia.com/gpu`` as
a device count. Text fields (messages, annotations, labels) are cluster text and only ever data.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "GPU_RESOURCE",
    "MIG_RESOURCE_PREFIX",
    "K8sCondition",
    "K8sTaint",
    "K8sToleration",
    "K8sSelectorRequirement",
    "K8sNodeSelectorTerm",
    "K8sPlacement",
    "K8sNode",
    "K8sContainerStatus",
    "K8sPod",
    "K8sEvent",
]

GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource NVIDIA's device plugin advertises, one unit per healthy GPU."""
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
"""Resource names of MIG slices under the mixed strategy: ``nvidia.com/mig-<g>g.<mem>gb``."""


class K8sCondition(BaseModel):
    """One entry of ``status.conditions`` (node or pod)."""

    type: str
    status: str
    """``"True"``, ``"False"`` or ``"Unknown"``, as the API writes it."""
    reason: str | None = None
    message: str | None = None
    last_transition_time: datetime | None = None
    """UTC."""


class K8sTaint(BaseModel):
    """One ``spec.taints`` entry, e.g. ``node.kubernetes.io/unreachable:NoExecute``."""

    key: str
    value: str | None = None
    effect: str | None = None
    """``NoSchedule``, ``PreferNoSchedule`` or ``NoExecute``."""


class K8sNode(BaseModel):
    """A Node: readiness, schedulability, and what it offers (capacity vs allocatable)."""

    name: str
    file: str | None = None
    """Snapshot-relative path of the artifact the object came from (for citing evidence)."""
    ready_status: str | None = None
    """Status of the ``Ready`` condition: ``"True"``, ``"False"``, ``"Unknown"``; None when absent."""
    ready_reason: str | None = None
    """e.g. ``KubeletReady``, ``KubeletNotReady``, ``NodeStatusUnknown``."""
    ready_message: str | None = None
    ready_since: datetime | None = None
    """``lastTransitionTime`` of the Ready condition (UTC)."""
    conditions: list[K8sCondition] = Field(default_factory=list)
    """The other conditions (MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable, ...)."""
    unschedulable: bool = False
    """``spec.unschedulable``: the node is cordoned."""
    taints: list[K8sTaint] = Field(default_factory=list)
    capacity_cpu: float | None = None
    """Cores."""
    allocatable_cpu: float | None = None
    """Cores."""
    capacity_memory_bytes: int | None = None
    allocatable_memory_bytes: int | None = None
    capacity_gpu: int | None = None
    """``nvidia.com/gpu`` in capacity: GPUs the device plugin found; None when not advertised."""
    allocatable_gpu: int | None = None
    """``nvidia.com/gpu`` in allocatable: GPUs the device plugin reports healthy."""
    allocatable_mig: dict[str, int] = Field(default_factory=dict)
    """``nvidia.com/mig-<profile>`` in allocatable (MIG slices under the mixed strategy), by resource name."""
    allocatable_devices: dict[str, int] = Field(default_factory=dict)
    """Other device-plugin resources in allocatable (``rdma/rdma_shared_device_a``, ``amd.com/gpu``,
    ``nvidia.com/hostdev``, ``openshift.io/sriov_*``), by resource name: what each plugin registered."""
    gpu_product: str | None = None
    """Label ``nvidia.com/gpu.product`` (GPU feature discovery), e.g. ``NVIDIA-A100-SXM4-80GB``."""
    labels: dict[str, str] = Field(default_factory=dict)
    """The node's labels (at most 128; ``nvidia.com/*`` ones first), which pods' nodeSelectors and node affinity
    are matched against."""
    kubelet_version: str | None = None

    @property
    def serves_gpus(self) -> bool:
        """True when the device plugin offers any GPU resource: whole GPUs or MIG slices."""
        return bool(self.allocatable_gpu) or any(v > 0 for v in self.allocatable_mig.values())

    @property
    def is_gpu_node(self) -> bool:
        """True when the node advertises GPUs or is labelled as having them."""
        return bool(self.capacity_gpu) or self.gpu_product is not None or \
            self.labels.get("nvidia.com/gpu.present") == "true"


class K8sToleration(BaseModel):
    """One ``spec.tolerations`` entry."""

    key: str | None = None
    """None (with operator Exists) tolerates every taint."""
    operator: str = "Equal"
    """``Equal`` or ``Exists``."""
    value: str | None = None
    effect: str | None = None
    """None tolerates every effect."""


class K8sSelectorRequirement(BaseModel):
    """One ``matchExpressions`` entry of a node selector term."""

    key: str
    operator: str
    """``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``."""
    values: list[str] = Field(default_factory=list)


class K8sNodeSelectorTerm(BaseModel):
    """One term of ``requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`` (terms are ORed, the
    requirements of one term ANDed)."""

    match_expressions: list[K8sSelectorRequirement] = Field(default_factory=list)
    match_fields: list[K8sSelectorRequirement] = Field(default_factory=list)
    """``metadata.name`` requirements (DaemonSet pods pin themselves to their node this way)."""


class K8sPlacement(BaseModel):
    """Where a pod may be placed, as its spec says: selector, required node affinity, tolerations."""

    node_selector: dict[str, str] = Field(default_factory=dict)
    """``spec.nodeSelector``: every label must be on the node with exactly this value."""
    affinity_terms: list[K8sNodeSelectorTerm] = Field(default_factory=list)
    """Required node affinity; empty when the pod has none (any node matches)."""
    tolerations: list[K8sToleration] = Field(default_factory=list)
    runtime_class: str | None = None
    """``spec.runtimeClassName`` (e.g. ``nvidia``), whose handler the node's container runtime must know."""


class K8sContainerStatus(BaseModel):
    """One container's status (``status.containerStatuses[]`` or ``initContainerStatuses[]``)."""

    name: str
    init: bool = False
    """An init container."""
    container_ids: list[str] = Field(default_factory=list)
    """Runtime ids of its current and last container (``containerID`` of ``status`` and ``lastState``, the
    ``containerd://`` prefix dropped): what a kernel cgroup path names (``cri-containerd-<id>.scope``)."""
    image: str | None = None
    ready: bool = False
    restart_count: int = 0
    state: Literal["running", "waiting", "terminated", "unknown"] = "unknown"
    state_reason: str | None = None
    """Waiting: ``CrashLoopBackOff``, ``ImagePullBackOff``, ``ErrImagePull``, ``ContainerCreating`` ...;
    terminated: ``OOMKilled``, ``Error``, ``Completed``."""
    state_message: str | None = None
    exit_code: int | None = None
    """Exit code of the current state when terminated."""
    last_terminated_reason: str | None = None
    """``lastState.terminated.reason`` (why the previous run ended), e.g. ``OOMKilled``."""
    last_terminated_exit_code: int | None = None
    last_terminated_message: str | None = None
    """``lastState.terminated.message`` (the container's termination log), at most ~500 chars."""
    last_terminated_at: datetime | None = None
    """``lastState.terminated.finishedAt`` (UTC)."""


class K8sPod(BaseModel):
    """A Pod: where it runs (or why not, and where it may), its containers' states and what it requests."""

    namespace: str
    name: str
    uid: str | None = None
    """``metadata.uid``: the kubelet names the pod's cgroup by it (``kubepods-burstable-pod<uid>.slice``)."""
    file: str | None = None
    phase: str | None = None
    """``Pending``, ``Running``, ``Succeeded``, ``Failed``, ``Unknown``."""
    status_reason: str | None = None
    """``status.reason``, e.g. ``Evicted``, ``NodeLost``."""
    status_message: str | None = None
    node: str | None = None
    """``spec.nodeName``; None while unscheduled."""
    owner_kind: str | None = None
    """Controller owner: ``ReplicaSet``, ``DaemonSet``, ``StatefulSet``, ``Job``, ..."""
    owner_name: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    """Kept as data only; never interpreted as instructions."""
    containers: list[K8sContainerStatus] = Field(default_factory=list)
    gpu_request: int = 0
    """``nvidia.com/gpu`` the pod needs: sum over containers (or the largest init container), from
    requests, else limits (extended resources default requests to limits)."""
    gpu_limit: int = 0
    mig_request: dict[str, int] = Field(default_factory=dict)
    """MIG slices the pod needs (``nvidia.com/mig-3g.40gb`` -> 1), from requests, else limits."""
    cpu_request: float | None = None
    """Cores, summed over containers."""
    cpu_limit: float | None = None
    memory_request_bytes: int | None = None
    memory_limit_bytes: int | None = None
    scheduled_status: str | None = None
    """Status of the ``PodScheduled`` condition."""
    scheduled_reason: str | None = None
    """e.g. ``Unschedulable``."""
    scheduled_message: str | None = None
    """The scheduler's explanation, e.g. ``0/8 nodes are available: 8 Insufficient nvidia.com/gpu.``"""
    ready: bool | None = None
    """Status of the ``Ready`` condition."""
    start_time: datetime | None = None
    deletion_timestamp: datetime | None = None
    """``metadata.deletionTimestamp``: the pod was asked to stop then (kubectl shows it ``Terminating``) and
    should be gone once its grace period has passed."""
    deletion_grace_s: int | None = None
    """``metadata.deletionGracePeriodSeconds``."""
    placement: K8sPlacement = Field(default_factory=K8sPlacement)
    """Where the pod may run: nodeSelector, required node affinity, tolerations, runtime class."""

    @property
    def ref(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def restarts(self) -> int:
        """Restarts summed over containers."""
        return sum(c.restart_count for c in self.containers)


class K8sEvent(BaseModel):
    """An Event (core/v1 or events.k8s.io/v1, or a row of ``kubectl get events``)."""

    namespace: str | None = None
    name: str | None = None
    file: str | None = None
    line: int | None = None
    """1-based line of a ``kubectl get events`` row; None for JSON."""
    object_kind: str | None = None
    """Involved (regarding) object's kind as the API writes it: ``Pod``, ``Node``, ... (a table's
    lower-case ``pod/x`` is capitalised)."""
    object_name: str | None = None
    object_namespace: str | None = None
    field_path: str | None = None
    """e.g. ``spec.containers{trainer}``."""
    type: str | None = None
    """``Normal`` or ``Warning``."""
    reason: str | None = None
    message: str = ""
    count: int = 1
    first_timestamp: datetime | None = None
    last_timestamp: datetime | None = None
    """UTC, from JSON (``eventTime`` / ``series.lastObservedTime`` when newer); None for tables."""
    last_seen_s: float | None = None
    """Seconds before capture the event was last seen, from a table's ``LAST SEEN`` age (``2m5s``)."""
    first_seen_s: float | None = None
    """Seconds before capture it was first seen (``(x5 over 10m)`` or the wide ``FIRST SEEN`` column)."""
    source_component: str | None = None
    """``kubelet``, ``default-scheduler``, ``node-controller``, ..."""
    source_host: str | None = None
