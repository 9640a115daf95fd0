"""Writing a report to a directory, and finding what to report on (a past run or a path).

    write_report(diagnosis, facts, out)
        ├── report.md, report.html      the Diagnosis, the timeline, the GPU section
        ├── timeline.png                 when some evidence carries a time
        ├── gpu-heatmap.png              when DCGM (or nvidia-smi) values were read
        └── gpu-fleet.png                the same fields over the whole fleet

``report_target`` resolves ``RUN|PATH``: a path (incident or snapshot directory) is diagnosed now; a
run id (or ``last``) is read back from the run store, and its snapshot re-read for the scheduler events
and the GPU values (a live run's evidence was not kept: then only the cited evidence is shown).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agent.render.view import build_view, evidence_root
from agent.report.content import ReportContent, field_stats
from agent.report.gpu_grid import gpu_grid, worst_nodes
from agent.report.heatmap import draw_distribution, draw_heatmap
from agent.report.html import report_html
from agent.report.markdown import report_markdown
from agent.report.timeline import build_timeline
from agent.report.timeline_png import draw_timeline
from tools.errors import ConfigError
from tools.facts import Facts
from tools.models.findings import Diagnosis

__all__ = ["ReportFiles", "write_report", "report_target", "DEFAULT_TOP"]

DEFAULT_TOP = 24
"""Heat-map rows: at most this many nodes, whatever the fleet's size."""


@dataclass
class ReportFiles:
    """What :func:`write_report` wrote."""

    markdown: Path
    html: Path
    images: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nodes_total: int = 0
    nodes_drawn: int = 0


def _gpu_section(c: ReportContent, d: Diagnosis, facts: Facts | None, out: Path, top: int) -> list[Path]:
    if facts is None:
        c.notes.append("The evidence of this run was not kept (a live run): no GPU heat map. "
                       "Record the cluster with `warden record` to report on its DCGM values.")
        return []
    grid = gpu_grid(facts)
    if not grid.fields():
        c.notes.append("No DCGM or nvidia-smi values were read: no GPU heat map.")
        return []
    culprits = [x.split(":", 1)[1] for x in d.culprits if x.startswith(("node:", "k8snode:"))]
    nodes = worst_nodes(grid, top=top, always=culprits)
    c.nodes_total, c.gpus_total, c.nodes_drawn = len(grid.gpus), grid.gpu_count, nodes
    c.stats = field_stats(grid)
    title = f"DCGM per node and GPU: {len(nodes)} of {len(grid.gpus)} nodes"
    c.heatmap_png = draw_heatmap(grid, nodes, out / "gpu-heatmap.png", title=title).name
    c.fleet_png = draw_distribution(grid, out / "gpu-fleet.png",
                                    title=f"Fleet: {len(grid.gpus)} nodes, {grid.gpu_count} GPUs").name
    return [out / c.heatmap_png, out / c.fleet_png]


def write_report(d: Diagnosis, facts: Facts | None, out: Path, *, snapshot: Path | None = None,
                 top: int = DEFAULT_TOP, now: datetime | None = None) -> ReportFiles:
    """Write the report of ``d`` into directory ``out`` (created if needed; files of the same names
    are replaced).

    Args:
        d: the Diagnosis.
        facts: the parsed evidence it was made from (None: not at hand, see the module docstring).
        snapshot: the snapshot directory the evidence paths are relative to, named in the report.
        top: heat-map rows at most.

    Raises:
        ConfigError: ``out`` exists and is not a directory, cannot be created, or ``top`` is below 1.
    """
    if top < 1:
        raise ConfigError(f"--top must be at least 1, not {top}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ConfigError(f"{out}: not a directory") from None
    except OSError as e:
        raise ConfigError(f"{out}: cannot create the report directory: {e.strerror or e}") from None
    c = ReportContent(view=build_view(d, root=None), generated_at=now or datetime.now(timezone.utc),
                      snapshot=str(snapshot) if snapshot else None)
    c.timeline, c.timeline_cut = build_timeline(d, facts)
    images: list[Path] = []
    if c.timeline:
        c.timeline_png = draw_timeline(c.timeline, out / "timeline.png", title="Evidence on one clock (UTC)").name
        images.append(out / c.timeline_png)
    images += _gpu_section(c, d, facts, out, top)
    md, page = out / "report.md", out / "report.html"
    md.write_text(report_markdown(c), encoding="utf-8")
    page.write_text(report_html(c), encoding="utf-8")
    return ReportFiles(markdown=md, html=page, images=images, notes=list(c.notes), nodes_total=c.nodes_total,
                       nodes_drawn=len(c.nodes_drawn))


def report_target(ref: str, *, question: str | None = None, db: Path | None = None,
                  **diagnose_kwargs: Any) -> tuple[Diagnosis, Facts | None, Path | None]:
    """(Diagnosis, its facts or None, its snapshot directory or None) for ``RUN|PATH``.

    A path that exists is an incident or snapshot directory, diagnosed now (``diagnose_kwargs`` go to
    agent.diagnose.diagnose: model, store, audit ...); anything else is a run id, an id prefix or ``last``.

    Raises:
        ConfigError: no such run, or a run that did not finish; SnapshotError: a path that is neither
            an incident nor a snapshot directory.
    """
    from agent.store import find_run
    from tools.read.context import ReadContext

    path = Path(ref)
    if path.exists():
        from agent.diagnose import DEFAULT_QUESTION, diagnose
        from evals.incident import INCIDENT_FILE, load_incident
        from tools.errors import SnapshotError

        snap = evidence_root(path)
        if snap is None:
            raise SnapshotError(f"{path}: not an incident (incident.yaml) or snapshot (manifest.yaml) directory")
        if question is None and (path / INCIDENT_FILE).is_file():
            question = load_incident(path).question
        ctx = ReadContext.from_snapshot(snap)
        d = diagnose(ctx, question or DEFAULT_QUESTION, target=str(path.absolute()), **diagnose_kwargs)
        return d, ctx.facts, snap
    run, d = find_run(ref, db)
    if d is None:
        raise ConfigError(f"run {run.id[:12]} has no diagnosis ({run.status}); nothing to report")
    snap = evidence_root(run.target)
    if snap is None:
        return d, None, None
    return d, ReadContext.from_snapshot(snap).facts, snap
