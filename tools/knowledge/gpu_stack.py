"""Messages that say a node's GPU software stack (driver, Fabric Manager, container toolkit, NVML) is broken,
whoever prints them — a workload container, a GPU Operator validator, a job log.

Source: CUDA runtime errors (cudaErrorNoDevice 100 "no CUDA-capable device is detected",
cudaErrorInsufficientDriver 35, cudaErrorSystemNotReady 802 "system not yet initialized" — on NVSwitch
systems, NVIDIA Fabric Manager not running), PyTorch's "Found no NVIDIA driver on your system", NVML's
"Failed to initialize NVML: Driver/library version mismatch", nvidia-container-cli errors, and the GPU
Operator validators' output.
"""

from __future__ import annotations

import re

__all__ = ["NODE_STACK_ERROR", "FABRIC_MANAGER_DOWN", "stack_problem"]

FABRIC_MANAGER_DOWN = re.compile(r"system not yet initiali[sz]ed|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY|"
                                 r"fabric ?manager (?:is )?(?:not running|failed|inactive)|nv-fabricmanager.*(?:fail|error)",
                                 re.IGNORECASE)
NODE_STACK_ERROR = re.compile(
    r"Found no NVIDIA driver|no CUDA-capable device is detected|CUDA driver version is insufficient"
    r"|nvidia-container-cli: [a-z ]*error|Failed to initialize NVML|libcuda\.so[^\n]{0,40}(?:not found|cannot open)"
    r"|Driver/library version mismatch|" + FABRIC_MANAGER_DOWN.pattern, re.IGNORECASE)
"""The container or job could not use the node's GPU driver: the node's stack, not the application."""


def stack_problem(text: str) -> str | None:
    """A short name for what the text says broke in the node's GPU stack, or None."""
    if FABRIC_MANAGER_DOWN.search(text):
        return "NVIDIA Fabric Manager not running (CUDA: system not yet initialized)"
    m = NODE_STACK_ERROR.search(text)
    return m.group(0)[:80] if m else None
