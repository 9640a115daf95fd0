"""The NVIDIA GPU Operator and its operands as Warden reads them: driver upgrades, the driver container, the
device plugin's registration with the kubelet, GPU feature discovery's labels, and GPU sharing.

Sources:
- "GPU Driver Upgrades" (GPU Operator docs) and NVIDIA/k8s-operator-libs' upgrade state machine: the node label
  ``nvidia.com/gpu-driver-upgrade-state`` moves through upgrade-required, cordon-required, wait-for-jobs-required,
  pod-deletion-required, drain-required, pod-restart-required, (reboot-required, reboot-validation-required,
  reboot-post-required), validation-required, uncordon-required to upgrade-done; a driver pod that keeps failing
  moves the node to upgrade-failed. The controller cordons the node and stops the operands while it works.
- The driver container (``nvcr.io/nvidia/driver``, daemonset ``nvidia-driver-daemonset``) is what every other
  operand waits for (their ``driver-validation`` / ``toolkit-validation`` init containers); its installer's
  messages when the running kernel has no matching packages: "Could not resolve Linux kernel version",
  "Unable to find a match: kernel-headers-<ver>", "Could not find kernel headers" (NVIDIA/gpu-operator #85,
  #155, #234).
- NVIDIA/k8s-device-plugin: "Could not register device plugin: ..." / "error registering with kubelet" /
  "Could not contact Kubelet, retrying" when registration with the kubelet's device-plugin socket fails
  (#82; kubernetes/kubernetes#63231: restarting the plugin re-registers it).
- gpu-feature-discovery (now part of k8s-device-plugin): "Failed to initialize NVML", "No labels generated from any
  source" when it started before the driver (NVIDIA/gpu-feature-discovery #36, #71, #75: deleting the GFD pod
  relabels the node); the labels it writes (``nvidia.com/gpu.product``, ``gpu.count``, ``gpu.memory``,
  ``cuda.driver.*``, ``gpu.family``).
- "Time-Slicing GPUs in Kubernetes" (GPU Operator docs): ``nvidia.com/gpu.replicas`` > 1,
  ``nvidia.com/gpu.sharing-strategy=time-slicing`` and a ``-SHARED`` product label mark a node whose GPUs are
  advertised as several replicas each, with no memory or fault isolation between the pods sharing one GPU.
"""

from __future__ import annotations

import re

from tools.models.k8s import K8sNode, K8sPod

__all__ = ["UPGRADE_STATE_LABEL", "UPGRADE_IN_PROGRESS", "UPGRADE_FAILED", "upgrade_state", "upgrade_in_progress",
           "is_driver_pod", "DRIVER_INSTALL_FAILED", "PLUGIN_NOT_REGISTERED", "is_device_plugin_pod", "GFD_LABELS",
           "GFD_NO_LABELS", "is_gfd_pod", "gpu_replicas"]

UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_IN_PROGRESS = frozenset({
    "cordon-required", "wait-for-jobs-required", "pod-deletion-required", "drain-required", "pod-restart-required",
    "reboot-required", "reboot-validation-required", "reboot-post-required", "validation-required",
    "uncordon-required", "node-maintenance-required", "post-maintenance-required",
})
"""States in which the upgrade controller has the node out of service on purpose (cordoned, operands restarting)."""
UPGRADE_FAILED = "upgrade-failed"


def upgrade_state(node: K8sNode) -> str | None:
    """The node's driver-upgrade state label, or None when the upgrade controller does not manage it."""
    return node.labels.get(UPGRADE_STATE_LABEL)


def upgrade_in_progress(node: K8sNode) -> bool:
    """True while the GPU Operator's upgrade controller is rolling a new driver onto the node."""
    return upgrade_state(node) in UPGRADE_IN_PROGRESS


def _words(pod: K8sPod) -> str:
    images = " ".join(c.image or "" for c in pod.containers)
    return " ".join([pod.name, pod.owner_name or "", pod.labels.get("app", ""), pod.labels.get("app.kubernetes.io/name", ""),
                     pod.labels.get("app.kubernetes.io/component", ""), images]).lower()


def is_telemetry_pod(pod: K8sPod) -> bool:
    """A metrics exporter (DCGM exporter, node exporter): it reports on the node, it runs none of its work."""
    w = _words(pod)
    return "dcgm-exporter" in w or "node-exporter" in w or "/dcgm-exporter:" in w


def is_driver_pod(pod: K8sPod) -> bool:
    """The GPU Operator's driver container pod (``nvidia-driver-daemonset-*``, image ``nvcr.io/nvidia/driver``)."""
    w = _words(pod)
    return "nvidia-driver" in w or "nvcr.io/nvidia/driver:" in w or "driver-daemonset" in w


DRIVER_INSTALL_FAILED = re.compile(
    r"Could not resolve Linux kernel version|Unable to find a match: kernel-headers|Could not find kernel headers"
    r"|kernel headers? (?:for|are) [^\n]{0,60}(?:not (?:found|available|installed))|Failed to install (?:the )?kernel"
    r"|Kernel module compilation failed|Could not (?:load|insert) the NVIDIA kernel module"
    r"|modprobe: ERROR: could not insert 'nvidia'", re.IGNORECASE)
"""The driver container's installer failing to build or load the kernel module for the running kernel."""

PLUGIN_NOT_REGISTERED = re.compile(
    r"Could not register device plugin|error registering with kubelet|Could not contact Kubelet"
    r"|failed to register (?:the )?device plugin|Failed to start plugin: error registering", re.IGNORECASE)
"""The device plugin cannot register with the kubelet's device-plugin socket: the node advertises no GPUs."""


def is_device_plugin_pod(pod: K8sPod) -> bool:
    """The NVIDIA device plugin's pod (not GPU feature discovery, which ships in the same image)."""
    w = _words(pod)
    return "device-plugin" in w and "feature-discovery" not in pod.name.lower() + (pod.owner_name or "").lower()


GFD_LABELS = ("nvidia.com/gpu.product", "nvidia.com/gpu.count", "nvidia.com/gpu.memory", "nvidia.com/gpu.family",
              "nvidia.com/cuda.driver.major", "nvidia.com/cuda.runtime.major")
"""Labels gpu-feature-discovery writes on every GPU node it can read through NVML."""
GFD_NO_LABELS = re.compile(r"No labels generated from any source|Failed to initiali[sz]e NVML|failed to load NVML"
                           r"|continuing with empty label set", re.IGNORECASE)


def is_gfd_pod(pod: K8sPod) -> bool:
    """A gpu-feature-discovery pod."""
    return "gpu-feature-discovery" in _words(pod)


def gpu_replicas(node: K8sNode) -> int:
    """How many pods one physical GPU is advertised to (time-slicing or MPS), 1 when not shared."""
    try:
        replicas = int(node.labels.get("nvidia.com/gpu.replicas", "1"))
    except ValueError:
        replicas = 1
    shared = node.labels.get("nvidia.com/gpu.sharing-strategy", "none") not in ("none", "") or \
        (node.gpu_product or "").endswith("-SHARED")
    return max(replicas, 2) if shared and replicas < 2 else max(replicas, 1)
