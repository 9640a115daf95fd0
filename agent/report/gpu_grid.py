"""The DCGM fields a report draws, per node and GPU, and which nodes are worth a row.

Values come from ``Facts.gpu_samples`` (dcgm-exporter pages or Prometheus query results, DCGM's own
field names and units) and, for nodes with no DCGM sample, from nvidia-smi rows (``Facts.gpu_status``).
Several samples of one field on one GPU (a range query, two scrapes) are averaged, except the error
fields, which keep their largest value: one Xid in the window is what matters.

A fleet of 10,000 nodes has 80,000 GPUs: the heat map never draws them all. :func:`worst_nodes`
ranks nodes by how far they stand from the fleet (faults first, then hot, slow-clocked or idle GPUs)
and the report draws the top few rows plus the fleet-wide distribution of every field.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import median

from tools.facts import Facts
from tools.knowledge.dcgm import GPU_FAULT_FIELDS, XID_FIELD

__all__ = ["GridField", "FIELDS", "GpuGrid", "gpu_grid", "worst_nodes"]


@dataclass(frozen=True)
class GridField:
    """One panel of the heat map."""

    key: str
    title: str
    unit: str
    names: tuple[str, ...]
    """DCGM field names read (summed when there are several, e.g. the memory fault fields)."""
    bad: str
    """``low`` (utilisation, clocks), ``high`` (temperature) or ``nonzero`` (errors)."""
    errors: bool = False
    smi: str | None = None
    """The GpuStatus (nvidia-smi) attribute used when a node has no DCGM sample of this field."""


FIELDS: tuple[GridField, ...] = (
    GridField("util", "GPU utilisation", "%", ("DCGM_FI_DEV_GPU_UTIL",), "low", smi="utilization_gpu_pct"),
    GridField("temp", "GPU temperature", "°C", ("DCGM_FI_DEV_GPU_TEMP",), "high", smi="temperature_c"),
    GridField("sm_clock", "SM clock", "MHz", ("DCGM_FI_DEV_SM_CLOCK",), "low", smi="clocks_sm_mhz"),
    GridField("xid", "Last Xid", "Xid", (XID_FIELD,), "nonzero", errors=True),
    GridField("mem_faults", "Memory faults", "DBE/remap", tuple(GPU_FAULT_FIELDS),
              "nonzero", errors=True, smi="ecc_dbe_volatile"),
)
"""The fields that matter for a GPU incident, in panel order."""

_BY_NAME = {n: f for f in FIELDS for n in f.names}

GpuKey = tuple[str, str]
"""(node, GPU index as a string)."""


@dataclass
class GpuGrid:
    """Per-GPU values of each field: ``values[field_key][(node, gpu)]`` in the field's unit."""

    values: dict[str, dict[GpuKey, float]] = field(default_factory=dict)
    gpus: dict[str, list[str]] = field(default_factory=dict)
    """node -> its GPU indices, sorted numerically."""

    @property
    def nodes(self) -> list[str]:
        """Every node with at least one GPU value, sorted by name."""
        return sorted(self.gpus)

    @property
    def gpu_count(self) -> int:
        """GPUs with at least one value."""
        return sum(len(g) for g in self.gpus.values())

    def fields(self) -> list[GridField]:
        """The fields that have at least one value, in panel order."""
        return [f for f in FIELDS if self.values.get(f.key)]

    def node_values(self, key: str, node: str) -> list[float]:
        """The values of field ``key`` on ``node``'s GPUs (missing GPUs left out)."""
        vals = self.values.get(key, {})
        return [vals[(node, g)] for g in self.gpus.get(node, []) if (node, g) in vals]


def _gpu_sort(g: str) -> tuple[int, str]:
    return (int(g), g) if g.isdigit() else (1 << 30, g)


def gpu_grid(facts: Facts) -> GpuGrid:
    """Collect the report's DCGM fields from ``facts`` (see the module docstring)."""
    acc: dict[tuple[str, GpuKey], list[float]] = {}  # (DCGM name, GPU) -> [sum, count, max]
    for s in facts.gpu_samples:
        if s.name not in _BY_NAME or not s.node:
            continue
        key = (s.name, (s.node, s.gpu or "?"))
        a = acc.get(key)
        if a is None:
            acc[key] = [s.value, 1.0, s.value]
        else:
            a[0] += s.value
            a[1] += 1.0
            a[2] = max(a[2], s.value)
    grid = GpuGrid()
    per_field: dict[str, dict[GpuKey, float]] = defaultdict(dict)
    for (name, gk), (total, count, top) in acc.items():
        f = _BY_NAME[name]
        v = top if f.errors else total / count
        cell = per_field[f.key]
        cell[gk] = cell.get(gk, 0.0) + v  # several names of one field (the memory faults) add up
    seen_dcgm = {gk[0] for cells in per_field.values() for gk in cells}
    for g in facts.gpu_status:
        if not g.node or g.node in seen_dcgm:
            continue
        gk = (g.node, str(g.index) if g.index is not None else "?")
        for f in FIELDS:
            v = getattr(g, f.smi) if f.smi else None
            if v is not None:
                per_field[f.key][gk] = float(v)
    gpus: dict[str, set[str]] = defaultdict(set)
    for cells in per_field.values():
        for node, gpu in cells:
            gpus[node].add(gpu)
    grid.values = dict(per_field)
    grid.gpus = {n: sorted(gs, key=_gpu_sort) for n, gs in gpus.items()}
    return grid


def _spread(values: list[float]) -> tuple[float, float]:
    """(median, a robust scale: the inter-quartile range, at least 1 unit)."""
    vs = sorted(values)
    n = len(vs)
    q1, q3 = vs[n // 4], vs[(3 * n) // 4]
    return median(vs), max(q3 - q1, 1.0)


def _scores(grid: GpuGrid) -> dict[str, float]:
    score: dict[str, float] = defaultdict(float)
    for f in grid.fields():
        cells = grid.values[f.key]
        if f.errors:
            for (node, _), v in cells.items():
                if v > 0:
                    score[node] += 1000.0  # a fault outranks any deviation
            continue
        mid, scale = _spread(list(cells.values()))
        for node in grid.gpus:
            vals = grid.node_values(f.key, node)
            if not vals:
                continue
            worst = min(vals) if f.bad == "low" else max(vals)
            dev = (mid - worst) / scale if f.bad == "low" else (worst - mid) / scale
            score[node] += max(dev, 0.0)
    return score


def worst_nodes(grid: GpuGrid, *, top: int, always: Iterable[str] = ()) -> list[str]:
    """At most ``top`` nodes to draw: ``always`` first (the culprits that have GPU values), then the
    nodes standing farthest from the fleet; in name order when the fleet fits in ``top``.

    Raises:
        ValueError: ``top`` is not positive.
    """
    if top < 1:
        raise ValueError(f"top must be at least 1, not {top}")
    nodes = grid.nodes
    if len(nodes) <= top:
        return nodes
    first = [n for n in dict.fromkeys(always) if n in grid.gpus][:top]
    score = _scores(grid)
    rest = sorted((n for n in nodes if n not in first), key=lambda n: (-score.get(n, 0.0), n))
    return first + rest[:top - len(first)]
