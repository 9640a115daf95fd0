"""`warden report RUN|PATH --out DIR`: a Diagnosis as Markdown and HTML with a timeline and GPU heat maps."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import warden_errors
from agent.render.safe import clean_line
from gateway.config import BUILTIN_MODEL

__all__ = ["report_cmd"]


def report_cmd(
    target: Annotated[str, typer.Argument(help="A run id (or unique prefix, or `last`) from the run store, or an "
                                               "incident / snapshot directory to diagnose now.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write report.md, report.html and the PNGs into.")],
    question: Annotated[str | None, typer.Option("--question", "-q", help="For a PATH: what to ask (default: the incident's question).")] = None,
    model: Annotated[str, typer.Option("--model", help="For a PATH: gateway model alias.")] = BUILTIN_MODEL,
    top: Annotated[int, typer.Option("--top", help="Heat-map rows at most: the nodes farthest from the fleet (culprits first).")] = 24,
    db: Annotated[Path | None, typer.Option("--db", help="Run store (SQLite); default $WARDEN_HOME/warden.db.")] = None,
) -> None:
    """Write a report to share: the Diagnosis (root cause, culprits, evidence, fixes with their exact
    commands), a timeline of the evidence (kernel, job log and scheduler events on one UTC axis) and a
    heat map per node and GPU of the DCGM fields that matter (utilisation, temperature, SM clock, Xid,
    memory faults), plus the fleet-wide distribution of each. On a large fleet the heat map shows the
    --top nodes that stand farthest from the fleet, never every node. Cluster text is escaped in both
    files. A PATH is diagnosed now (nothing is executed); a RUN is read back from the run store.

    Example: warden report evals/incidents/xid79-nccl-watchdog-other-rank --out build/report
    """
    with warden_errors():
        from agent.report import report_target, write_report
        from agent.store import RunStore

        store = RunStore(db)
        d, facts, snap = report_target(target, question=question, db=store.path, model=model, store=store)
        files = write_report(d, facts, out, snapshot=snap, top=top)
    console = Console(highlight=False, soft_wrap=True)
    console.print(clean_line(f"wrote {files.html}"), markup=False)
    console.print(clean_line(f"wrote {files.markdown}"), markup=False)
    for p in files.images:
        console.print(clean_line(f"wrote {p}"), markup=False)
    for n in files.notes:
        console.print(clean_line(f"note: {n}"), markup=False)
