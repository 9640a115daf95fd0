"""Read tool over GPU metrics: one line per node, outliers first."""

from __future__ import annotations

from collections import defaultdict
from statistics import mean

from pydantic import BaseModel

from tools.read.context import ReadContext
from tools.read.paging import page

__all__ = ["NodeGpuBrief", "GpuSummary", "get_gpu_metrics"]

_FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": "util_pct",
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz",
    "DCGM_FI_DEV_GPU_TEMP": "temp_c",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_FB_USED": "fb_used_mib",
}


class NodeGpuBrief(BaseModel):
    """Means over a node's GPUs (DCGM units); xid is the largest non-zero DCGM_FI_DEV_XID_ERRORS."""

    node: str
    gpus: int
    util_pct: float | None = None
    sm_clock_mhz: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    fb_used_mib: float | None = None
    xid: int | None = None
    throttle_reasons: int | None = None


class GpuSummary(BaseModel):
    """Per node GPU summary, lowest utilisation first, at most ``limit`` nodes."""

    nodes_total: int
    nodes: list[NodeGpuBrief]
    truncated: bool
    next: str | None = None
    """Cursor of the next page (pass it back as ``more``); None when this is the last."""


def get_gpu_metrics(ctx: ReadContext, *, node: str | None = None, limit: int = 20,
                    more: str | None = None) -> GpuSummary:
    """GPU metrics per node from dcgm-exporter / Prometheus samples (or nvidia-smi when that is what
    was recorded): utilisation %, SM clock MHz, temperature C, power W, framebuffer MiB, last Xid,
    clock-event reason bits. ``limit`` is 1–100; a page stops short of 10,000 characters (``next``
    is then the cursor to pass as ``more``)."""
    limit = max(1, min(limit, 100))
    vals: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    gpus: dict[str, set[str]] = defaultdict(set)
    extra: dict[str, dict[str, int]] = defaultdict(dict)
    # Metric by metric from the columns (no MetricSample per sample: 1.2 million at 10,000 nodes). Every result
    # below is a set, an exact mean, a max or an OR per node, and the briefs are sorted: the order read is free.
    facts = ctx.facts
    names = sorted(n for n in facts.metric_names() if n.startswith("DCGM_FI_"))  # aggregates and rules
    for name in names:  # (PromQL results without a DCGM name) are no GPU
        field = _FIELDS.get(name)
        for b in facts.sample_blocks(name):
            for k, value in zip(b.keys, b.values):
                n = k[1]
                if not n or (node and n != node):
                    continue
                gpus[n].add(k[2] or "?")
                if field is not None:
                    vals[n][field].append(value)
                elif name == "DCGM_FI_DEV_XID_ERRORS" and value > 0:
                    extra[n]["xid"] = max(extra[n].get("xid", 0), int(value))
                elif name in ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"):
                    extra[n]["throttle_reasons"] = extra[n].get("throttle_reasons", 0) | int(value)
    for g in ctx.facts.gpu_status:
        if g.node and (not node or g.node == node):
            gpus[g.node].add(str(g.index))
            for field in ("utilization_gpu_pct", "temperature_c", "clocks_sm_mhz", "power_draw_w", "memory_used_mib"):
                v = getattr(g, field)
                key = {"utilization_gpu_pct": "util_pct", "temperature_c": "temp_c", "clocks_sm_mhz": "sm_clock_mhz",
                       "power_draw_w": "power_w", "memory_used_mib": "fb_used_mib"}[field]
                if v is not None:
                    vals[g.node][key].append(v)
    briefs = [NodeGpuBrief(node=n, gpus=len(gpus[n]), **{k: round(mean(v), 1) for k, v in vals[n].items()},
                           **extra.get(n, {})) for n in gpus]
    briefs.sort(key=lambda b: (b.util_pct if b.util_pct is not None else 999.0, b.node))
    shown, nxt = page(briefs, limit=limit, more=more)
    return GpuSummary(nodes_total=len(briefs), nodes=shown, truncated=nxt is not None, next=nxt)
