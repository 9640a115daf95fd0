"""The NVIDIA Xid catalogue as Warden uses it: what each Xid says about the GPU, the link or the program.

Source: NVIDIA "Xid Errors" and "Analyzing Xid Errors with the Xid Catalog"
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, resolution buckets RESTART_APP /
RESET_GPU / RESTART_BM / CONTACT_SUPPORT), NVIDIA's dynamic page retirement and A100 memory error
management notes (48/63/64/92/94/95), and the GPU recovery action of Xid 154 (NVML
nvmlDeviceGpuRecoveryAction_t: none, GPU reset, node reboot, drain P2P, drain and reset).
"""

from __future__ import annotations

from typing import Literal

__all__ = ["XidClass", "XID_CLASSES", "xid_class", "HARDWARE_XIDS", "NVLINK_XIDS", "APPLICATION_XIDS",
           "MEMORY_XIDS", "NON_INTERRUPTING_XIDS", "REBOOT_XIDS", "RECOVERY_XID", "recovery_action", "XID_MEANINGS", "describe_xid"]

XidClass = Literal["hardware", "nvlink", "application", "recovery", "unknown"]

HARDWARE_XIDS = frozenset({46, 48, 54, 57, 58, 61, 62, 63, 64, 79, 92, 94, 95, 119, 120, 122, 123, 124, 140, 143})
"""The GPU itself is faulty or needs a reset/reboot before it is trusted again: DBE (48), row-remap pending or
failed (63/64), high SBE rate (92), contained/uncontained ECC (94/95), fallen off the bus (79), micro-controller
halts (61/62), GSP RPC timeout and GSP errors (119/120), SPI PMU failures (122-124), unrecovered ECC (140), GPU
initialisation failure (143), lost auxiliary power (54), video memory interface errors (57/58), a GPU that
stopped processing (46)."""
NVLINK_XIDS = frozenset({74, 144, 145, 146, 147, 148, 149, 150})
"""NVLink errors: Xid 74 (pre-Blackwell) and the NVLink5 error family (144-150) of Blackwell GPUs."""
APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})
"""Errors that NVIDIA's k8s-device-plugin treats as the application's (it does not mark the GPU unhealthy
for them; NVIDIA's catalogue files them under RESTART_APP): graphics engine exceptions (13), MMU faults
(31), a channel stopped or cleaned up after another error (43/45), video processor exception (68),
context switch timeout (109): the program (or an earlier Xid) is the cause, not the GPU."""
MEMORY_XIDS = frozenset({48, 63, 64, 92, 94, 95, 140})
"""Xids about GPU memory (ECC, page retirement, row remapping)."""
NON_INTERRUPTING_XIDS = frozenset({63, 92})
"""Xids that record a fault without stopping the work on the GPU: a row remap (or page retirement) pending
until the next GPU reset (63) and a high single-bit ECC rate (92). The GPU is taken out of service for new
work and reset when idle; the running job is not a victim and is not resubmitted."""
REBOOT_XIDS = frozenset({79})
"""Hardware Xids whose catalogue resolution is a node reboot (RESTART_BM): a GPU fallen off the bus does not
come back with a GPU reset. Like Xid 154's "Node Reboot Required", the node's work leaves first (on
Kubernetes: drained). Xids that need only a GPU reset (RESET_GPU: 48, 62, 95, 119 ...) do not drain the whole
node, as NVML's own recovery actions tell a plain GPU reset from "drain and reset": the node is kept from new
work and the GPU's own pods are moved."""
RECOVERY_XID = 154
"""``GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)``: the driver asks for a reset
or reboot after earlier errors."""

XID_CLASSES: dict[int, XidClass] = {
    **{x: "hardware" for x in HARDWARE_XIDS}, **{x: "nvlink" for x in NVLINK_XIDS},
    **{x: "application" for x in APPLICATION_XIDS}, RECOVERY_XID: "recovery",
}

XID_MEANINGS: dict[int, str] = {
    13: "graphics engine exception", 31: "GPU memory page fault", 43: "GPU stopped processing",
    45: "preemptive cleanup", 46: "GPU stopped processing", 48: "double-bit ECC error",
    54: "auxiliary power lost", 57: "video memory interface error", 58: "video memory interface error",
    61: "micro-controller breakpoint", 62: "micro-controller halt", 63: "row remap pending",
    64: "row remap failure", 68: "video processor exception", 74: "NVLink error", 79: "fallen off the bus",
    92: "high single-bit ECC rate", 94: "contained ECC error", 95: "uncontained ECC error",
    109: "context switch timeout", 119: "GSP RPC timeout", 120: "GSP error", 140: "unrecovered ECC error",
    143: "GPU initialisation failure", 154: "recovery action changed",
}
"""Short meanings from NVIDIA's Xid catalogue, for messages a person reads."""


def describe_xid(xid: int) -> str:
    """``Xid 79 (fallen off the bus)``; ``Xid N`` alone when the catalogue meaning is not in the table."""
    meaning = XID_MEANINGS.get(xid)
    return f"Xid {xid} ({meaning})" if meaning else f"Xid {xid}"


def xid_class(xid: int) -> XidClass:
    """What an Xid says: ``hardware``, ``nvlink``, ``application``, ``recovery`` (154) or ``unknown``."""
    return XID_CLASSES.get(xid, "unknown")


def recovery_action(message: str) -> str | None:
    """The action an Xid 154 line asks for (``GPU Reset Required``, ``Node Reboot Required``, ``Drain P2P``,
    ``Drain and Reset``), or None when the line sets it back to none."""
    low = message.lower()
    for needle, action in (("node reboot", "Node Reboot Required"), ("drain and reset", "Drain and Reset"),
                           ("drain p2p", "Drain P2P"), ("reset required", "GPU Reset Required"),
                           ("gpu reset", "GPU Reset Required"), ("bus reset", "Bus Reset"),
                           ("system reboot", "System Reboot")):
        if f"to 0x" in low and needle in low.split(" to ", 1)[-1]:
            return action
    return None
