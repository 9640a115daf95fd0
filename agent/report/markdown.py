"""A report as Markdown: the Diagnosis (agent.render.markdown), the timeline table, the GPU pictures.

Cluster text is escaped with :func:`agent.render.markdown.md_escape` (no link, image, HTML or table
cell can come from it); pictures are Warden's own files, linked by their names in the same directory.
"""

from __future__ import annotations

from agent.render.markdown import md_code, md_escape, to_markdown
from agent.render.safe import clean_line
from agent.render.view import when_text
from agent.report.content import ReportContent

__all__ = ["report_markdown"]


def report_markdown(c: ReportContent) -> str:
    """The report's Markdown text."""
    out = ["# Warden report", "",
           f"Generated {when_text(c.generated_at)}" + (f" from {md_code(c.snapshot)}" if c.snapshot else "")
           + (" (evidence paths are relative to it)." if c.snapshot else "."), "",
           "## Diagnosis", "", to_markdown(c.view).rstrip(), ""]
    out += ["## Timeline", ""]
    if c.timeline:
        if c.timeline_png:
            out += [f"![Timeline of the evidence]({c.timeline_png})", ""]
        out += ["| time (UTC) | source | where | what |", "|---|---|---|---|"]
        for e in c.timeline:
            mark = "**" if e.cited else ""
            out.append(f"| {when_text(e.at)} | {e.lane} | {md_code(clean_line(e.where))} | "
                       f"{mark}{md_escape(clean_line(e.text))}{mark} |")
        out.append("")
        if c.timeline_cut:
            out += [f"{c.timeline_cut} more entries not shown.", ""]
    else:
        out += ["No piece of evidence carried a time.", ""]
    out += ["## GPUs (DCGM)", ""]
    if c.heatmap_png:
        out += [md_escape(c.heatmap_caption()), "", f"![Heat map per node and GPU]({c.heatmap_png})", ""]
    if c.fleet_png:
        out += [f"![Fleet distribution of each field]({c.fleet_png})", ""]
    if c.stats:
        out += ["| field | fleet |", "|---|---|"]
        out += [f"| {md_escape(s.title)} | {md_escape(s.describe())} |" for s in c.stats]
        out.append("")
    out += [f"- {md_escape(n)}" for n in c.notes]
    return "\n".join(out).rstrip() + "\n"
