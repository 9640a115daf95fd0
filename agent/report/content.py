"""What a report holds, decided once for both of its renderings (Markdown and HTML).

:class:`ReportContent` carries the DiagnosisView (its text already cleaned by agent/render), the
timeline, the GPU pictures' file names and the fleet figures per DCGM field. Timeline text is raw
cluster text here; each renderer escapes it for its own syntax.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from statistics import median

from agent.render.view import DiagnosisView
from agent.report.gpu_grid import GpuGrid
from agent.report.timeline import TimelineEntry

__all__ = ["FieldStats", "ReportContent", "field_stats"]


@dataclass(frozen=True)
class FieldStats:
    """One DCGM field over the whole fleet."""

    title: str
    unit: str
    gpus: int
    """GPUs with a value."""
    median: float | None = None
    p5: float | None = None
    p95: float | None = None
    faults: int | None = None
    """For error fields: GPUs with a non-zero value."""

    def describe(self) -> str:
        """``median 97 %, 5th-95th percentile 12-99`` or ``2 of 48 GPUs non-zero``."""
        if self.faults is not None:
            return f"{self.faults} of {self.gpus} GPUs non-zero"
        return (f"median {self.median:g} {self.unit}, 5th–95th percentile {self.p5:g}–{self.p95:g} "
                f"over {self.gpus} GPUs")


def _pct(sorted_vals: list[float], q: float) -> float:
    return sorted_vals[min(len(sorted_vals) - 1, int(q * (len(sorted_vals) - 1) + 0.5))]


def field_stats(grid: GpuGrid) -> list[FieldStats]:
    """Fleet figures of every field that has values, in panel order."""
    out = []
    for f in grid.fields():
        vals = sorted(grid.values[f.key].values())
        if f.errors:
            out.append(FieldStats(f.title, f.unit, len(vals), faults=sum(1 for v in vals if v > 0)))
        else:
            out.append(FieldStats(f.title, f.unit, len(vals), median=round(median(vals), 1),
                                  p5=round(_pct(vals, 0.05), 1), p95=round(_pct(vals, 0.95), 1)))
    return out


@dataclass
class ReportContent:
    """Everything a report shows."""

    view: DiagnosisView
    generated_at: datetime
    snapshot: str | None = None
    """Where the evidence paths are relative to (a snapshot directory), or None (live)."""
    timeline: list[TimelineEntry] = field(default_factory=list)
    timeline_cut: int = 0
    """Entries left out past the timeline's bound."""
    timeline_png: str | None = None
    heatmap_png: str | None = None
    fleet_png: str | None = None
    nodes_total: int = 0
    gpus_total: int = 0
    nodes_drawn: list[str] = field(default_factory=list)
    stats: list[FieldStats] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Why a part is missing (no DCGM samples, evidence not kept for a live run)."""

    def heatmap_caption(self) -> str:
        """What the heat map shows, in one sentence."""
        if len(self.nodes_drawn) < self.nodes_total:
            return (f"The {len(self.nodes_drawn)} nodes of {self.nodes_total} ({self.gpus_total} GPUs) that stand "
                    "farthest from the fleet (faults first, then hot, slow-clocked or idle GPUs; culprits always "
                    "shown), one row per node, one column per GPU.")
        return f"Every node with DCGM samples ({self.nodes_total} nodes, {self.gpus_total} GPUs), one column per GPU."
