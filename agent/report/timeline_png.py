"""The timeline as a picture: one row per lane (kernel, job log, scheduler, Kubernetes), UTC on the x axis.

Cited evidence is drawn red and labelled (at most :data:`LABELS` labels, the earliest first); other
entries grey. Labels are cleaned cluster text, cut short and never parsed as mathtext.
"""

from __future__ import annotations

from pathlib import Path

from agent.render.safe import clean_line
from agent.report.timeline import LANES, TimelineEntry

__all__ = ["draw_timeline", "LABELS"]

LABELS = 12
"""Entries that get a text label."""


def _short(text: str, limit: int = 60) -> str:
    s = clean_line(" ".join(text.split()))
    return s if len(s) <= limit else s[:limit - 1] + "…"


def draw_timeline(entries: list[TimelineEntry], path: Path, *, title: str) -> Path:
    """Write the timeline of ``entries`` (oldest first) to ``path`` (PNG).

    Raises:
        ValueError: no entry to draw.
    """
    from matplotlib import dates as mdates
    from matplotlib.figure import Figure

    if not entries:
        raise ValueError("nothing to draw: no timed evidence")
    lanes = [lane for lane in LANES if any(e.lane == lane for e in entries)]
    fig = Figure(figsize=(11, 1.6 + 0.9 * len(lanes)), dpi=100, layout="constrained")
    ax = fig.subplots()
    for cited, colour, size in ((False, "#969696", 18), (True, "#cb181d", 36)):
        pts = [e for e in entries if e.cited == cited]
        if pts:
            ax.scatter([e.at for e in pts], [lanes.index(e.lane) for e in pts], s=size, color=colour,
                       zorder=3, label="cited by the diagnosis" if cited else "other evidence")
    labelled = [e for e in entries if e.cited][:LABELS]
    for i, e in enumerate(labelled):
        ax.annotate(_short(e.text), (mdates.date2num(e.at), lanes.index(e.lane)),
                    xytext=(4, 6 + 9 * (i % 3)), textcoords="offset points", fontsize=6, rotation=12,
                    annotation_clip=False, parse_math=False)
    ax.set_yticks(range(len(lanes)), lanes, fontsize=8)
    ax.set_ylim(-0.6, len(lanes) - 0.1)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("UTC", fontsize=7)
    ax.grid(axis="x", linewidth=0.3)
    ax.legend(fontsize=6, loc="lower right")
    ax.set_title(_short(title, 120), fontsize=9, parse_math=False)
    fig.savefig(path, format="png")
    return path
