"""Kubelet node-pressure eviction as Warden reads it: which condition and eviction message means which cause.

Source: the Kubernetes "Node-pressure Eviction" docs — eviction signals (memory.available, nodefs.available,
nodefs.inodesFree, imagefs.available, pid.available), the node conditions they set (MemoryPressure,
DiskPressure, PIDPressure) with their taints (node.kubernetes.io/memory-pressure, disk-pressure, pid-pressure),
the Evicted pod status "The node was low on resource: ephemeral-storage. Threshold quantity: …, available: …",
the EvictionThresholdMet event ("Attempting to reclaim ephemeral-storage"); and the kubelet's image garbage
collector ("Failed to garbage collect required amount of images. Attempted to free N bytes, but only found 0
bytes eligible to free": FreeDiskSpaceFailed / ImageGCFailed — images still used by existing pods, completed
ones included, are not eligible).
"""

from __future__ import annotations

import re

__all__ = ["PRESSURE_CAUSES", "EVICTED_FOR", "eviction_resource", "cause_of_resource", "RECLAIM_EVENTS",
           "IMAGE_GC_FAILED"]

PRESSURE_CAUSES: dict[str, tuple[str, str]] = {
    "DiskPressure": ("storage_full", "disk (nodefs / imagefs) space or inodes"),
    "MemoryPressure": ("host_oom", "memory"),
}
"""Node condition -> (root cause, what ran out). PIDPressure has no cause of its own here and is left unread."""

EVICTED_FOR = re.compile(r"(?:The node was low on resource|node was low on resource): \[?([\w.-]+)", re.IGNORECASE)
_RESOURCE_CAUSES = {"ephemeral-storage": "storage_full", "nodefs": "storage_full", "imagefs": "storage_full",
                    "memory": "host_oom"}
RECLAIM_EVENTS = ("EvictionThresholdMet", "FreeDiskSpaceFailed", "ImageGCFailed", "NodeHasDiskPressure",
                  "NodeHasInsufficientMemory")
IMAGE_GC_FAILED = re.compile(r"Failed to garbage collect required amount of images|Image garbage collection failed",
                             re.IGNORECASE)


OWN_LIMIT_EVICTED = re.compile(r"ephemeral local storage usage exceeds the total limit|exceeded its local ephemeral storage "
                               r"limit|Usage of EmptyDir volume \S+ exceeds the limit", re.IGNORECASE)
"""The kubelet's eviction messages for a pod over its own ephemeral-storage limit (container writable layers,
logs and emptyDir volumes), as opposed to a node short of disk: the pod's spec or its writes are the cause."""


def eviction_resource(message: str) -> str | None:
    """The resource an Evicted message says the node ran low on (``ephemeral-storage``, ``memory``), or None."""
    m = EVICTED_FOR.search(message)
    return m.group(1).lower().rstrip(".") if m else None


def cause_of_resource(resource: str) -> str | None:
    """``storage_full`` for disk resources, ``host_oom`` for memory, None otherwise."""
    return _RESOURCE_CAUSES.get(resource)
