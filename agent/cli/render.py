"""Rich rendering of a Diagnosis for terminals."""

from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from tools.models.findings import Diagnosis

__all__ = ["render_diagnosis"]


def render_diagnosis(d: Diagnosis, console: Console) -> None:
    """Print the root cause, culprits, evidence, GPU-hours lost and the dry-run plans."""
    head = Text()
    head.append(f"{d.root_cause}", style="bold red" if d.root_cause != "healthy" else "bold green")
    head.append(f"  confidence {d.confidence:.2f}")
    if d.stopped_by:
        head.append(f"  (partial: {d.stopped_by})", style="yellow")
    body: list = [head, Text(d.summary)]
    if d.culprits:
        body.append(Text("Culprits: " + ", ".join(d.culprits), style="bold"))
    body.append(Text(f"GPU-hours lost so far: {d.gpu_hours_lost:g}"))
    console.print(Panel(Group(*body), title=f"Warden diagnosis — {d.question}", title_align="left"))
    if d.evidence:
        t = Table(title="Evidence", show_lines=False, expand=True)
        t.add_column("where", no_wrap=True, style="cyan")
        t.add_column("what")
        for e in d.evidence:
            where = f"{e.file}:{e.line}" if e.file and e.line else (e.file or e.metric or "")
            t.add_row(Text(where), Text(e.text))
        console.print(t)
    if d.proposed_actions:
        t = Table(title="Proposed actions (dry run — nothing was executed)", expand=True)
        t.add_column("action", style="bold")
        t.add_column("kind")
        t.add_column("command(s)")
        for a in d.proposed_actions:
            cmds = "\n".join(" ".join(_quote(x) for x in argv) for argv in a.commands) or (a.error or "(no command)")
            t.add_row(Text(a.description), a.reversibility, Text(cmds))
        console.print(t)
    elif d.root_cause == "healthy":
        console.print("No actions proposed.")


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
