"""Typed GPU metrics: DCGM exporter / Prometheus samples and nvidia-smi rows."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["MetricSample", "GpuStatus"]


class MetricSample(BaseModel):
    """One Prometheus sample (exposition text or query API JSON).

    ``name`` is the DCGM field name as dcgm-exporter exports it (``DCGM_FI_DEV_GPU_UTIL``,
    ``DCGM_FI_DEV_XID_ERRORS``, ``DCGM_FI_DEV_SM_CLOCK``, ...); units are DCGM's (%, MHz, W, C).
    """

    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    value: float
    timestamp_s: float | None = None
    node: str | None = None
    """Host the sample is about: the ``Hostname`` (or ``instance`` host) label, else the manifest's node."""
    gpu: str | None = None
    """GPU index label (``gpu``), when present."""


class GpuStatus(BaseModel):
    """One GPU row of `nvidia-smi --query-gpu=... --format=csv` (format nvidia-smi-csv).

    Known columns map onto typed fields; every column is also kept raw in ``fields``.
    """

    node: str | None = None
    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    temperature_c: float | None = None
    utilization_gpu_pct: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    power_draw_w: float | None = None
    clocks_sm_mhz: float | None = None
    clocks_max_sm_mhz: float | None = None
    ecc_dbe_volatile: int | None = None
    fields: dict[str, str] = Field(default_factory=dict)
    lost: str | None = None
    """Set when nvidia-smi could not reach the GPU: its words (``Unable to determine the device handle ...:
    Unknown Error``, ``GPU is lost``, ``ERR!`` in a field); the GPU is then gone from the bus or hung."""
    clocks_event_reasons: list[str] = Field(default_factory=list)
    """Active clock event (throttle) reasons from ``nvidia-smi -q``, e.g. ``["SW Thermal Slowdown"]``."""
