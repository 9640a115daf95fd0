"""DCGM fault fields as Warden reads them (dcgm-exporter / Prometheus names).

Source: NVIDIA DCGM field identifiers (dcgm_fields.h: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL,
DCGM_FI_DEV_RETIRED_PENDING, DCGM_FI_DEV_ROW_REMAP_FAILURE, DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL,
DCGM_FI_DEV_PCIE_REPLAY_COUNTER, DCGM_FI_DEV_CLOCKS_EVENT_REASONS, ...) and NVIDIA's A100/H100 memory
error management notes (volatile counts reset at driver load; aggregate counts are lifetime; a row-remap
failure or a pending retirement needs a reset or an RMA).
"""

from __future__ import annotations

from collections.abc import Iterable

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # facts import the parsers, which read this module's field list
    from tools.facts import Facts
from tools.models.gpu import MetricSample

__all__ = ["GPU_FAULT_FIELDS", "NVLINK_FIELDS", "PCIE_REPLAY", "XID_FIELD", "CLOCK_EVENT_FIELDS", "UTIL_FIELDS",
           "VIOLATION_FIELDS", "POWER_FIELDS", "SBE_FIELDS", "NON_INTERRUPTING_FIELDS", "gpu_fault_samples", "IB_COUNTER_FIELDS", "CHECKED_FIELDS"]

XID_FIELD = "DCGM_FI_DEV_XID_ERRORS"
"""The last Xid the GPU reported (a gauge holding the Xid number, 0 when none)."""

GPU_FAULT_FIELDS: dict[str, str] = {
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "uncorrectable (DBE) ECC errors since driver load",
    "DCGM_FI_DEV_ECC_DBE_VOL_DEV": "uncorrectable (DBE) device-memory ECC errors since driver load",
    "DCGM_FI_DEV_ECC_DBE_VOL_DRAM": "uncorrectable (DBE) DRAM ECC errors since driver load",
    "DCGM_FI_DEV_RETIRED_PENDING": "pages pending retirement (reset needed)",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": "row remapping failed (RMA)",
    "DCGM_FI_DEV_ROW_REMAP_PENDING": "row remapping pending (reset needed)",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "rows remapped for uncorrectable errors",
}
"""Non-zero means the GPU's memory has a fault now (volatile or pending); aggregate (lifetime) DBE
counts and correctable counts are history, not a current fault, and are not here."""
NON_INTERRUPTING_FIELDS = frozenset({"DCGM_FI_DEV_RETIRED_PENDING", "DCGM_FI_DEV_ROW_REMAP_PENDING"})
"""Fault fields that wait for the next GPU reset without stopping the running work (see
tools.knowledge.xid.NON_INTERRUPTING_XIDS)."""
_REMAPPED_ROWS_LIMIT = 8
"""Uncorrectable remapped rows per bank NVIDIA's RMA policy tolerates before replacement (A100 guide)."""

NVLINK_FIELDS: tuple[str, ...] = ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
                                  "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
                                  "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
                                  "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL")
PCIE_REPLAY = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
CLOCK_EVENT_FIELDS = ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")
VIOLATION_FIELDS = ("DCGM_FI_DEV_THERMAL_VIOLATION", "DCGM_FI_DEV_POWER_VIOLATION")
"""Microseconds the clocks were held by thermal / power limits (counters)."""
UTIL_FIELDS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE")
POWER_FIELDS = ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT")
"""Watts: drawn, and the limits set on the GPU."""
SBE_FIELDS = ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL")
"""Corrected (single-bit) ECC errors: since driver load, and over the GPU's life (counters)."""
_OTHER_READ = ("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_FB_USED",
               "DCGM_FI_DEV_FB_FREE")
IB_COUNTER_FIELDS: dict[str, str] = {
    "node_infiniband_link_downed_total": "link went down",
    "node_infiniband_link_error_recovery_total": "link error recovery",
    "node_infiniband_symbol_error_total": "symbol errors",
    "node_infiniband_port_errors_received_total": "receive errors",
    "node_infiniband_local_link_integrity_errors_total": "local link integrity errors",
    "node_infiniband_excessive_buffer_overrun_errors_total": "buffer overrun errors",
}
"""node_exporter's infiniband collector counters that count link faults (per device and port)."""


CHECKED_FIELDS: tuple[str, ...] = tuple(dict.fromkeys(
    (XID_FIELD, *GPU_FAULT_FIELDS, *NVLINK_FIELDS, PCIE_REPLAY, *CLOCK_EVENT_FIELDS, *VIOLATION_FIELDS, *UTIL_FIELDS,
     *POWER_FIELDS, *SBE_FIELDS, *_OTHER_READ)))
"""Every DCGM field a check or read tool reads: what a DCGM page parser keeps and live mode queries."""


def gpu_fault_samples(facts: Facts, hardware_xids: Iterable[int]) -> list[tuple[MetricSample, str]]:
    """Samples that show a GPU hardware fault now, with a label: a hardware Xid in the Xid field, a
    non-zero volatile DBE / pending retirement / row-remap failure or pending field, or more remapped
    uncorrectable rows than the RMA policy allows."""
    hw = set(hardware_xids)
    out: list[tuple[MetricSample, str]] = []
    # Read from the columns (tools.models.gpu_columns); only a block holding a fault is made into MetricSamples.
    lowest = min(hw, default=0)
    for b in facts.sample_blocks(XID_FIELD):
        total = sum(b.values)  # finite: no NaN or infinity in the block, so max() below is every value's bound
        if b.values and total - total == 0 and 0 not in hw and -1 < min(b.values) and max(b.values) < max(lowest, 1):
            continue  # every value's int() is 0 (Xid 0: none), or below the lowest hardware Xid
        if any(k[1] and int(v) in hw for k, v in zip(b.keys, b.values)):
            out += [(s, f"Xid {int(s.value)}") for s in b.samples() if s.node and int(s.value) in hw]
    for name, label in GPU_FAULT_FIELDS.items():
        limit = _REMAPPED_ROWS_LIMIT if name == "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS" else 0
        for b in facts.sample_blocks(name):
            if b.values and max(b.values) <= limit:  # (a NaN first makes max NaN: then the values are looked at one by one)
                continue
            if any(k[1] and v > limit for k, v in zip(b.keys, b.values)):
                out += [(s, label) for s in b.samples() if s.node and s.value > limit]
    return out
