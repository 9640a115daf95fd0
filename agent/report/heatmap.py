"""Heat map of DCGM fields per node and GPU, and the fleet-wide distribution of each field (matplotlib).

Drawn with matplotlib's object API and the Agg canvas (no pyplot state, no display needed). Rows are
the nodes :func:`agent.report.gpu_grid.worst_nodes` picked (at most ``top``), columns GPU indices, one
panel per field with its own colour scale: a fleet of any size gives a picture of at most ``top`` rows;
the distribution picture is where the whole fleet is seen (histograms, or GPUs with and without a
fault for the error fields). Labels are cluster text: they are cleaned and never parsed as mathtext.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from agent.render.safe import clean_line
from agent.report.gpu_grid import GpuGrid, GridField

__all__ = ["draw_heatmap", "draw_distribution", "ANNOTATE_CELLS"]

ANNOTATE_CELLS = 320
"""Cells of one panel up to which each cell carries its value as text."""

_CMAP = {"low": "viridis", "high": "inferno", "nonzero": "Reds"}


def _figure(width_in: float, height_in: float) -> Any:
    from matplotlib.figure import Figure  # imported on use: `warden --help` never pays for matplotlib

    return Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")


def _label(text: str, limit: int = 40) -> str:
    s = clean_line(text)
    return s if len(s) <= limit else s[:limit - 1] + "…"


def _matrix(grid: GpuGrid, f: GridField, nodes: list[str], cols: list[str]) -> list[list[float]]:
    cells = grid.values.get(f.key, {})
    return [[cells.get((n, g), math.nan) for g in cols] for n in nodes]


def _cell_text(f: GridField, v: float) -> str:
    if math.isnan(v):
        return ""
    if f.errors:
        return f"{v:.0f}" if v else ""
    return f"{v:.0f}"


def draw_heatmap(grid: GpuGrid, nodes: list[str], path: Path, *, title: str) -> Path:
    """Write the heat map of ``nodes`` (rows, in the order given) to ``path`` (PNG).

    Raises:
        ValueError: no node or no field to draw.
    """
    import numpy as np

    fields = grid.fields()
    if not nodes or not fields:
        raise ValueError("nothing to draw: no DCGM values for these nodes")
    cols = sorted({g for n in nodes for g in grid.gpus.get(n, [])}, key=lambda g: (not g.isdigit(), int(g) if g.isdigit() else 0, g))
    fig = _figure(max(6.0, 2.4 * len(fields) + 1.5), 1.6 + 0.28 * len(nodes))
    axes = fig.subplots(1, len(fields), squeeze=False)[0]
    annotate = len(nodes) * len(cols) <= ANNOTATE_CELLS
    for ax, f in zip(axes, fields):
        data = np.array(_matrix(grid, f, nodes, cols), dtype=float)
        finite = data[np.isfinite(data)]
        vmin = 0.0 if f.errors else (float(finite.min()) if finite.size else 0.0)
        vmax = float(finite.max()) if finite.size else 1.0
        if f.key == "util":
            vmin, vmax = 0.0, 100.0
        if vmax <= vmin:
            vmax = vmin + 1.0
        cmap = _cmap(_CMAP[f.bad], reverse=f.bad == "low")
        im = ax.imshow(np.ma.masked_invalid(data), aspect="auto", cmap=cmap, vmin=vmin, vmax=vmax,
                       interpolation="nearest")
        ax.set_title(f"{f.title} ({f.unit})", fontsize=8, parse_math=False)
        ax.set_xticks(range(len(cols)), [_label(c, 4) for c in cols], fontsize=7, parse_math=False)
        ax.set_xlabel("GPU", fontsize=7)
        ax.set_yticks(range(len(nodes)), [_label(n) for n in nodes] if ax is axes[0] else [""] * len(nodes),
                      fontsize=7, parse_math=False)
        fig.colorbar(im, ax=ax, shrink=0.8).ax.tick_params(labelsize=6)
        if annotate:
            mid = (vmin + vmax) / 2
            for r in range(data.shape[0]):
                for c in range(data.shape[1]):
                    text = _cell_text(f, data[r, c])
                    if text:
                        # reversed viridis (low is bad) and Reds are dark at the top, inferno at the bottom
                        dark = (data[r, c] > mid) == (f.bad != "high")
                        ax.text(c, r, text, ha="center", va="center", fontsize=5.5, parse_math=False,
                                color="white" if dark else "black")
    fig.suptitle(_label(title, 120), fontsize=9, parse_math=False)
    fig.savefig(path, format="png")
    return path


def _cmap(name: str, *, reverse: bool) -> Any:
    from matplotlib import colormaps

    cmap = colormaps[name].reversed() if reverse else colormaps[name]
    return cmap.with_extremes(bad="#dddddd")


def draw_distribution(grid: GpuGrid, path: Path, *, title: str, bins: int = 40) -> Path:
    """Write the fleet-wide distribution of each field over every GPU to ``path`` (PNG).

    Raises:
        ValueError: no field has a value.
    """
    import numpy as np

    fields = grid.fields()
    if not fields:
        raise ValueError("nothing to draw: no DCGM values")
    fig = _figure(max(6.0, 2.6 * len(fields)), 2.8)
    axes = fig.subplots(1, len(fields), squeeze=False)[0]
    for ax, f in zip(axes, fields):
        vals = np.fromiter(grid.values[f.key].values(), dtype=float)
        if f.errors:
            bad = int((vals > 0).sum())
            ax.bar(["none", "fault"], [len(vals) - bad, bad], color=["#9ecae1", "#cb181d"])
            ax.set_yscale("log" if len(vals) > 100 else "linear")
            for i, n in enumerate((len(vals) - bad, bad)):
                ax.text(i, max(n, 1), str(n), ha="center", va="bottom", fontsize=7)
        else:
            ax.hist(vals, bins=bins, color="#6baed6")
            ax.set_yscale("log" if len(vals) > 100 else "linear")
            ax.axvline(float(np.median(vals)), color="black", linewidth=0.8, linestyle="--")
        ax.set_title(f"{f.title} ({f.unit})", fontsize=8, parse_math=False)
        ax.set_ylabel("GPUs", fontsize=7)
        ax.tick_params(labelsize=6)
    fig.suptitle(_label(title, 120), fontsize=9, parse_math=False)
    fig.savefig(path, format="png")
    return path
