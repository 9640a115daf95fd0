"""Kernel/system-log classifiers for GPUs: NVRM Xid, lost GPUs, ECC text, driver errors, GPU stack daemons.

Shapes: NVIDIA's Xid documentation (``NVRM: Xid (PCI:0000:b3:00): 79, pid=…, name=…, GPU has fallen off
the bus.``), NVSentinel#155 (the multi-line "has fallen off the bus" with no Xid), nvidia-smi's "Unable to
determine the device handle for GPU 0000:3B:00.0: Unknown Error", NVRM ``RmInitAdapter failed``, and the
nvidia-fabricmanager / nvidia-persistenced / nv-hostengine / nvidia-container-cli daemons' own lines.
"""

from __future__ import annotations

import re

__all__ = ["normalize_pci", "classify_gpu", "classify_gpu_stack", "FALLEN_START", "Classified"]

Classified = tuple[str, dict[str, object]]

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)\): "
                  r"(?P<xid>\d{1,6})(?:, (?P<rest>.*))?")
_XID_PID = re.compile(r"pid=(?:'?<unknown>'?|(?P<pid>\d{1,10}))")
_XID_NAME = re.compile(r"name=(?P<name>[^,]+)")
_PCI = re.compile(r"\b(?P<dom>[0-9a-fA-F]{4,8}):(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})(?:\.(?P<fn>\d))?\b")
FALLEN_START = re.compile(r"^NVRM: The NVIDIA GPU (?P<pci>\S+)")
_ECC = re.compile(r"uncorrectable|double[- ]bit|\bDBE\b|row remap\w* fail|remapping failure", re.IGNORECASE)
_LOST = re.compile(r"GPU is lost|GPU has fallen off the bus|fallen off the bus", re.IGNORECASE)
_NO_HANDLE = re.compile(r"Unable to determine the device handle for (?:GPU|gpu) ?(?P<pci>\S*?):? ?(?P<why>Unknown Error|GPU is lost)",
                        re.IGNORECASE)
_INIT = re.compile(r"RmInitAdapter failed|rm_init_adapter failed|failed to initialize the NVIDIA GPU|"
                   r"GPU initialization failed", re.IGNORECASE)
_STACK_MODULE_FAILED = re.compile(r"^(?P<mod>nvidia\w*|nv_peer_mem|gdrdrv|mlx5_\w+|ib_\w+|rdma_\w+): "
                                  r"(?:Unknown symbol|disagrees about version of symbol)")
_MODULE_LOADED = re.compile(r"NVRM: loading NVIDIA UNIX \S+ Kernel Module", re.IGNORECASE)
_API_MISMATCH = re.compile(r"NVRM: API mismatch: the client has the version", re.IGNORECASE)
_DRIVER_ERR = re.compile(r"\b(?:GSP|RPC|timeout|timed out|failed|error|unexpected)\b", re.IGNORECASE)

_STACK_SOURCES = {
    "nvidia-fabricmanager": "fabricmanager", "nv-fabricmanager": "fabricmanager", "fabricmanager": "fabricmanager",
    "nvidia-persistenced": "persistenced", "nv-hostengine": "dcgm", "nvidia-dcgm": "dcgm", "dcgm": "dcgm",
    "nvidia-container-cli": "container-toolkit", "nvidia-container-runtime": "container-toolkit",
    "nvidia-container-toolkit": "container-toolkit", "nvidia-device-plugin": "device-plugin",
}
_STACK_TEXT = re.compile(r"(?P<c>fabric ?manager|nvidia-persistenced|nv-hostengine|nvidia-container-cli|"
                         r"nvidia-container-runtime)", re.IGNORECASE)
_STACK_BAD = re.compile(r"\b(?:fail(?:ed|ure)?|error|fatal|abort(?:ed)?|exited|cannot|unable|timed? ?out|"
                        r"degraded|not running|inactive \(dead\))\b", re.IGNORECASE)


def normalize_pci(text: str) -> str | None:
    """Canonical PCI address ``dddd:bb:dd.f`` (lowercase, 4-digit domain) of ``0000:B3:00``,
    ``00000000:b3:00.0`` and the like; the function defaults to 0 (GPUs are function 0)."""
    m = _PCI.search(text)
    if not m:
        return None
    return f"{m['dom'][-4:]}:{m['bus']}:{m['dev']}.{m['fn'] or 0}".lower()


def classify_gpu(msg: str) -> Classified | None:
    """An Xid, a lost GPU, NVRM ECC text or another NVRM driver error in one message; else None."""
    m = _XID.search(msg)
    if m:
        rest = m["rest"] or ""
        pid = _XID_PID.search(rest)
        name = _XID_NAME.search(rest)
        process = name["name"].strip()[:200] if name and "<unknown>" not in name["name"] else None
        return "xid", {"xid": int(m["xid"]), "pci": normalize_pci(m["pci"]), "pci_printed": m["pci"],
                       "pid": int(pid["pid"]) if pid and pid["pid"] else None, "process": process}
    m = _STACK_MODULE_FAILED.match(msg)
    if m:
        # A GPU/RDMA-stack kernel module that will not load against the running kernel or OFED (nvidia_peermem
        # after an OFED update: GPUDirect RDMA off, every transfer bounced through host memory).
        return "gpu_driver", {"pci": None, "what": f"module_failed:{m['mod'][:40]}"}
    m = _NO_HANDLE.search(msg)
    if m:
        return "fallen_off_bus", {"pci": normalize_pci(m["pci"] or msg), "how": "no_device_handle"}
    if not msg.startswith("NVRM:"):
        return None
    if "fallen off the bus" in msg:
        return "fallen_off_bus", {"pci": normalize_pci(msg)}
    if _LOST.search(msg):
        return "fallen_off_bus", {"pci": normalize_pci(msg), "how": "lost"}
    if _ECC.search(msg):
        return "gpu_ecc", {"pci": normalize_pci(msg)}
    if _INIT.search(msg):
        return "fallen_off_bus", {"pci": normalize_pci(msg), "how": "init_failed"}
    if _MODULE_LOADED.search(msg):
        return "gpu_driver", {"pci": None, "what": "module_loaded"}  # info: the kernel module (re)loaded
    if _API_MISMATCH.search(msg):
        # The user-space driver (libcuda/libnvidia-ml) was upgraded under a loaded kernel module: no CUDA
        # program starts until the module is reloaded or the node rebooted.
        return "gpu_driver", {"pci": None, "what": "api_mismatch"}
    if _DRIVER_ERR.search(msg):
        what = "gsp" if "GSP" in msg else "error"
        return "gpu_driver", {"pci": normalize_pci(msg), "what": what}
    return None


def classify_gpu_stack(source: str, msg: str) -> Classified | None:
    """A failing GPU-stack daemon (by its syslog tag, or named in a systemd line); else None."""
    component = _STACK_SOURCES.get(source)
    if component is None:
        m = _STACK_TEXT.search(msg) if source in ("systemd", "kernel", "containerd", "dockerd", "kubelet") else None
        if m is None:
            return None
        name = m["c"].lower().replace(" ", "")
        component = {"fabricmanager": "fabricmanager", "nvidia-persistenced": "persistenced",
                     "nv-hostengine": "dcgm"}.get(name, "container-toolkit")
    bad = _STACK_BAD.search(msg)
    if bad is None:
        return None
    return "gpu_stack", {"component": component, "what": bad.group(0).lower()[:40]}
