"""Per-node GPU values that the sandbox's DCGM exporters serve, kept in ``<state>/gpu/state.json``.

Shape of the file (values are the "steady" readings; the exporter adds a little jitter)::

    {"nodes": {"gpu01": {"model": "NVIDIA A100-SXM4-80GB", "driver": "535.183.01",
                          "gpus": [{"index": 0, "uuid": "GPU-…", "pci_bus_id": "00000000:07:00.0",
                                    "util_pct": 96, "sm_clock_mhz": 1410, "mem_clock_mhz": 1593,
                                    "gpu_temp_c": 61, "mem_temp_c": 70, "power_w": 348.0,
                                    "fb_used_mib": 61440, "fb_free_mib": 19797, "xid": 0,
                                    "clocks_event_reasons": 0, "pcie_replay": 0}, …]}}}

Faults change it with ``update_node``; ``reset_node`` puts a node back to its healthy values.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["healthy_gpu", "write_default", "load", "update_node", "reset_node", "PCI_BUS_IDS"]

PCI_BUS_IDS = ("00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0")
"""Bus ids of GPUs 0-3 (an 8-GPU HGX board's first four; used in Xid lines too)."""

_MODEL = "NVIDIA A100-SXM4-80GB"
_DRIVER = "535.183.01"
_FB_TOTAL_MIB = 81920 - 683  # what an A100 80GB reports as FB total


def _uuid(node: str, index: int) -> str:
    h = hashlib.sha256(f"{node}/{index}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def healthy_gpu(node: str, index: int) -> dict[str, Any]:
    """Steady readings of a busy, healthy A100 running a training job."""
    used = 61440
    return {
        "index": index,
        "uuid": _uuid(node, index),
        "pci_bus_id": PCI_BUS_IDS[index % len(PCI_BUS_IDS)],
        "util_pct": 96,
        "sm_clock_mhz": 1410,
        "mem_clock_mhz": 1593,
        "gpu_temp_c": 61,
        "mem_temp_c": 70,
        "power_w": 348.0,
        "fb_used_mib": used,
        "fb_free_mib": _FB_TOTAL_MIB - used,
        "xid": 0,
        "clocks_event_reasons": 0,
        "pcie_replay": 0,
    }


def _healthy_node(node: str, gpus: int) -> dict[str, Any]:
    return {"model": _MODEL, "driver": _DRIVER, "gpus": [healthy_gpu(node, i) for i in range(gpus)]}


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)  # atomic: the exporter never reads a half-written file


def write_default(path: Path, nodes: list[str], gpus_per_node: int, *, overwrite: bool = False) -> None:
    """Write healthy readings for every node (kept as is when the file exists, unless ``overwrite``)."""
    if path.exists() and not overwrite:
        data = load(path)
        missing = [n for n in nodes if n not in data["nodes"]]
        if not missing:
            return
        for n in missing:
            data["nodes"][n] = _healthy_node(n, gpus_per_node)
        _save(path, data)
        return
    _save(path, {"nodes": {n: _healthy_node(n, gpus_per_node) for n in nodes}})


def load(path: Path) -> dict[str, Any]:
    """The state file as a dict (shape in the module docstring)."""
    return json.loads(path.read_text())


def update_node(path: Path, node: str, *, gpus: list[int] | None = None, **values: Any) -> None:
    """Set ``values`` (e.g. ``util_pct=30``) on ``gpus`` of ``node`` (default: all its GPUs).

    Raises:
        KeyError: when ``node`` is not in the state file.
    """
    data = load(path)
    for gpu in data["nodes"][node]["gpus"]:
        if gpus is None or gpu["index"] in gpus:
            gpu.update(values)
    _save(path, data)


def reset_node(path: Path, node: str) -> None:
    """Put every GPU of ``node`` back to its healthy readings."""
    data = load(path)
    count = len(data["nodes"][node]["gpus"])
    data["nodes"][node] = _healthy_node(node, count)
    _save(path, data)
