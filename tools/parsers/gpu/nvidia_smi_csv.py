"""Parser for `nvidia-smi --query-gpu=... --format=csv` (format nvidia-smi-csv).

Shapes::

    index, name, uuid, pci.bus_id, temperature.gpu, utilization.gpu [%], memory.used [MiB], ...
    0, NVIDIA A100-SXM4-80GB, GPU-…, 00000000:07:00.0, 34, 97 %, 71234 MiB, 81920 MiB, 312.40 W, ...

and, with ``--format=csv,noheader,nounits``, bare rows whose column names the manifest gives as
``columns: "index,name,uuid,..."``. Unavailable values print as ``[N/A]`` or ``[Not Supported]``.
Real shapes: ``nvidia-smi --help-query-gpu`` and public issue threads (see
tests/fixtures/nvidia-smi-csv/SOURCES.md).
"""

from __future__ import annotations

import csv
import io
import re

from tools.errors import ParseError
from tools.models.gpu import GpuStatus

__all__ = ["parse_nvidia_smi_csv", "number"]

_NUMBER = re.compile(r"^\s*(-?\d{1,15}(?:\.\d{1,9})?)")
_UNIT = re.compile(r"\s*\[[^\]]*\]\s*$")

# query field name (and its aliases) -> GpuStatus attribute
_FIELDS: dict[str, str] = {
    "index": "index",
    "name": "name",
    "gpu_name": "name",
    "uuid": "uuid",
    "gpu_uuid": "uuid",
    "pci.bus_id": "pci_bus_id",
    "gpu_bus_id": "pci_bus_id",
    "temperature.gpu": "temperature_c",
    "utilization.gpu": "utilization_gpu_pct",
    "memory.used": "memory_used_mib",
    "memory.total": "memory_total_mib",
    "power.draw": "power_draw_w",
    "power.draw.instant": "power_draw_w",
    "power.draw.average": "power_draw_w",
    "clocks.sm": "clocks_sm_mhz",
    "clocks.current.sm": "clocks_sm_mhz",
    "clocks.max.sm": "clocks_max_sm_mhz",
    "clocks.max.sm_clock": "clocks_max_sm_mhz",
    "ecc.errors.uncorrected.volatile.total": "ecc_dbe_volatile",
}
_TEXT = {"name", "uuid", "pci_bus_id"}
_LOST = re.compile(r"Unable to determine the device handle for (?:GPU|gpu) ?(?P<pci>[0-9A-Fa-f:.]*):? ?(?:Unknown Error|GPU is lost)"
                   r"|GPU is lost|NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")
"""What nvidia-smi prints instead of a row for a GPU it cannot reach (fallen off the bus, hung)."""
_INT = {"index", "ecc_dbe_volatile"}


def number(value: str) -> float | None:
    """Leading number of an nvidia-smi value (``45 %`` -> 45.0); None for ``[N/A]`` and the like."""
    m = _NUMBER.match(value)
    return float(m.group(1)) if m else None


def _status(names: list[str], row: list[str], *, node: str | None) -> GpuStatus:
    gpu = GpuStatus(node=node)
    for name, raw in zip(names, row):
        value = raw.strip()
        gpu.fields[name] = value[:200]
        attr = _FIELDS.get(name)
        if attr is None:
            continue
        if attr in _TEXT:
            if value and not value.startswith("[") and value not in ("N/A", "Not Supported"):
                setattr(gpu, attr, value[:200])
            continue
        num = number(value)
        if num is not None:
            setattr(gpu, attr, int(num) if attr in _INT else num)
    return gpu


def parse_nvidia_smi_csv(
    text: str, *, path: str, node: str | None = None, columns: str | None = None
) -> list[GpuStatus]:
    """Parse `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` (format nvidia-smi-csv).

    Args:
        text: the CSV output.
        path: snapshot-relative path, for errors.
        node: the host the output was captured on.
        columns: comma-separated query field names for ``noheader`` output; when None the first
            row is the header (``memory.used [MiB]``; the unit suffix is dropped).

    Returns one GpuStatus per row: temperature in C, utilization in %, memory in MiB, power in W,
    clocks in MHz; ``[N/A]``/``[Not Supported]`` leave the field None. A GPU nvidia-smi cannot reach
    ("Unable to determine the device handle ... Unknown Error" in place of its row, or ``ERR!`` values)
    is a GpuStatus with ``lost`` set. Every column is also kept
    raw in ``fields`` under its query name.

    Raises:
        ParseError: naming path and line when a row has a different number of columns than the
            header (e.g. a file cut off mid-row), a field is not valid CSV, or there is no header
            and no ``columns``.
    """
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    rows: list[tuple[int, list[str]]] = []
    try:
        for row in reader:
            if row:
                rows.append((reader.line_num, row))
    except csv.Error as e:
        raise ParseError(path, reader.line_num, f"not CSV: {str(e)[:120]}") from None
    if columns is not None:
        names = [c.strip() for c in columns.split(",") if c.strip()]
        if rows and [_UNIT.sub("", c).strip() for c in rows[0][1]] == names:
            rows = rows[1:]  # a header was printed after all
    else:
        if not rows:
            raise ParseError(path, None, "no header row")
        names = [_UNIT.sub("", c).strip() for c in rows[0][1]]
        if not names or names[0] in ("", "0") or number(names[0]) is not None:
            raise ParseError(path, rows[0][0], "first row is not a header; give the manifest entry 'columns'")
        rows = rows[1:]
    result: list[GpuStatus] = []
    for lineno, row in rows:
        lost = _LOST.search(",".join(row))
        if lost:  # nvidia-smi prints this line where an unreachable GPU's row would be
            result.append(GpuStatus(node=node, pci_bus_id=(lost["pci"] or "").rstrip(":") or None, lost=lost.group(0)[:200],
                                    fields={"error": ",".join(row)[:200]}))
            continue
        if len(row) != len(names):
            raise ParseError(path, lineno, f"row has {len(row)} columns, header has {len(names)}")
        gpu = _status(names, row, node=node)
        if any("ERR!" in v for v in row):
            gpu.lost = "ERR! in " + ", ".join(n for n, v in zip(names, row) if "ERR!" in v)[:180]
        result.append(gpu)
    return result
