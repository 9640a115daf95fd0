"""Parser for `nvidia-smi -q` text (format nvidia-smi-q).

Shape (sections by indentation, ``Key : Value`` lines; one block per GPU)::

    Driver Version                            : 550.54.15
    Attached GPUs                             : 8
    GPU 00000000:B3:00.0
        Product Name                          : NVIDIA H100 80GB HBM3
        GPU UUID                              : GPU-…
        FB Memory Usage
            Total                             : 81559 MiB
            Used                              : 71234 MiB
        Utilization
            Gpu                               : 97 %
        ECC Errors
            Volatile
                DRAM Uncorrectable            : 0      # older drivers: Double Bit / Total
        Temperature
            GPU Current Temp                  : 84 C
        GPU Power Readings                             # older drivers: Power Readings
            Power Draw                        : 312.40 W
        Clocks Event Reasons                           # older drivers: Clocks Throttle Reasons
            SW Thermal Slowdown               : Active

Only the fields GpuStatus carries are read; active clock event reasons go to
``clocks_event_reasons`` and a few raw values to ``fields``. Real shapes: nvidia-smi(1) and
public bug-report threads (see tests/fixtures/nvidia-smi-q/SOURCES.md).
"""

from __future__ import annotations

import re

from tools.errors import ParseError
from tools.models.gpu import GpuStatus
from tools.parsers.gpu.nvidia_smi_csv import number

__all__ = ["parse_nvidia_smi_q"]

_GPU = re.compile(r"^GPU\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_KV = re.compile(r"^(?P<key>\S.*?)\s+:\s?(?P<value>.*)$")
_REASONS = ("Clocks Event Reasons", "Clocks Throttle Reasons", "Clocks Events Reasons")
_POWER = ("Power Readings", "GPU Power Readings")
_POWER_KEYS = ("Power Draw", "Instantaneous Power Draw", "Average Power Draw")
_KEEP = {
    ("Serial Number",), ("Minor Number",), ("Persistence Mode",), ("Performance State",),
    ("Remapped Rows", "Uncorrectable Error"), ("Remapped Rows", "Pending"),
    ("Remapped Rows", "Remapping Failure Occurred"), ("Temperature", "GPU Shutdown Temp"),
    ("Temperature", "GPU Slowdown Temp"), ("Temperature", "GPU Max Operating Temp"),
}


def _apply(gpu: GpuStatus, key: tuple[str, ...], value: str) -> None:
    """Map one ``section/…/key : value`` of a GPU block onto GpuStatus."""
    num = number(value)
    top, leaf = key[0], key[-1]
    if key == ("Product Name",):
        gpu.name = value
    elif key == ("GPU UUID",):
        gpu.uuid = value
    elif key == ("Temperature", "GPU Current Temp"):
        gpu.temperature_c = num
    elif key == ("Utilization", "Gpu"):
        gpu.utilization_gpu_pct = num
    elif key == ("FB Memory Usage", "Used"):
        gpu.memory_used_mib = num
    elif key == ("FB Memory Usage", "Total"):
        gpu.memory_total_mib = num
    elif key == ("Clocks", "SM"):
        gpu.clocks_sm_mhz = num
    elif key == ("Max Clocks", "SM"):
        gpu.clocks_max_sm_mhz = num
    elif top in _POWER and len(key) == 2 and leaf in _POWER_KEYS and num is not None and gpu.power_draw_w is None:
        gpu.power_draw_w = num
    elif key in (("ECC Errors", "Volatile", "DRAM Uncorrectable"), ("ECC Errors", "Volatile", "Double Bit", "Total")):
        if num is not None:
            gpu.ecc_dbe_volatile = int(num)
    elif top in _REASONS and len(key) >= 2 and value == "Active":
        gpu.clocks_event_reasons.append(leaf)
    if key in _KEEP:
        gpu.fields["/".join(key)] = value[:200]


def parse_nvidia_smi_q(text: str, *, path: str, node: str | None = None) -> list[GpuStatus]:
    """Parse `nvidia-smi -q` (format nvidia-smi-q).

    Returns one GpuStatus per ``GPU <bus id>`` block, ``index`` being its position in the file
    (nvidia-smi lists GPUs in index order). Units as in GpuStatus (C, %, MiB, W, MHz);
    ``N/A`` values stay None. A file cut off mid-block yields the fields read so far.

    Raises:
        ParseError: when the text holds no ``GPU <bus id>`` block (path named).
    """
    gpus: list[GpuStatus] = []
    driver: dict[str, str] = {}  # Driver Version / CUDA Version from the global header
    stack: list[tuple[int, str]] = []  # (indent, name) of enclosing sections within a GPU block
    for raw in text.splitlines():
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        header = _GPU.match(line) if indent == 0 else None
        if header:
            gpus.append(GpuStatus(node=node, index=len(gpus), pci_bus_id=header["bus"]))
            stack = []
            continue
        if not gpus or indent == 0:
            kv = _KV.match(line) if indent == 0 else None
            if kv and kv["key"].strip() in ("Driver Version", "CUDA Version"):
                driver[kv["key"].strip()] = kv["value"].strip()[:60]
            continue  # other global lines (Timestamp, Attached GPUs, ...) and banners
        while stack and stack[-1][0] >= indent:
            stack.pop()
        kv = _KV.match(line)
        name = kv["key"].strip() if kv else line
        if kv:
            _apply(gpus[-1], tuple(n for _, n in stack) + (name,), kv["value"].strip())
        stack.append((indent, name))
    if not gpus:
        raise ParseError(path, None, "no 'GPU <bus id>' block found")
    for gpu in gpus:
        gpu.fields.update(driver)
    return gpus
