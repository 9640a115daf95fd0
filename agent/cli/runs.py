"""`warden runs list|show RUN`: past diagnoses from the run store ($WARDEN_HOME/warden.db)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.cli.errors import warden_errors
from agent.cli.render import JsonOption, Output, OutputOption, emit_diagnosis, pick_output, stdout_console
from agent.cli.tables import Column, print_table
from agent.render import SCHEMA_VERSION, dump, evidence_root

__all__ = ["runs_app", "runs_list_cmd", "runs_show_cmd"]

runs_app = typer.Typer(help="Past diagnoses, from the run store ($WARDEN_HOME/warden.db).", no_args_is_help=True)

DbOption = Annotated[Path | None, typer.Option("--db", help="Run store (SQLite); default $WARDEN_HOME/warden.db.")]

_COLUMNS = (
    Column("run", 12, priority=9, wrap=False, max_width=12),
    Column("started (UTC)", 16, priority=5, wrap=False),
    Column("root cause", 14, priority=8),
    Column("conf", 4, priority=4, justify="right"),
    Column("GPU-h", 5, priority=2, justify="right"),
    Column("target", 12, priority=6, wrap=False),
    Column("status", 6, priority=3),
)


def _short(target: str) -> str:
    """A target as its last path component (the incident or snapshot name); `live` for live runs."""
    return Path(target).name or target or "-"


@runs_app.command("list")
def runs_list_cmd(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many runs, newest first.")] = 20,
    output: OutputOption = None,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """List the newest diagnoses: run id, when, root cause, confidence, GPU-hours lost, target and status.

    Run ids are shortened to 12 characters (any unique prefix works with `warden runs show`); --output json has them whole.

    Example: warden runs list -n 5
    """
    from agent.store import list_runs

    fmt = pick_output(output, json_out)
    with warden_errors():
        runs = list_runs(db, limit=limit)
    if fmt in (Output.json, Output.yaml):
        typer.echo(dump({"schema_version": SCHEMA_VERSION, "runs": [r.model_dump() for r in runs]}, fmt.value).rstrip("\n"))
        return
    out = stdout_console()
    if not runs:
        out.print("No runs yet: try `warden diagnose evals/incidents/xid79-nccl-watchdog-other-rank`.", markup=False)
        return
    rows = [(r.id[:12], r.started_at[:16].replace("T", " "), r.root_cause or "-",
             f"{r.confidence:.2f}" if r.confidence is not None else "-",
             f"{r.gpu_hours_lost:g}" if r.gpu_hours_lost is not None else "-", _short(r.target), r.status)
            for r in runs]
    if fmt is Output.markdown:
        typer.echo("| " + " | ".join(c.header for c in _COLUMNS) + " |\n|" + "---|" * len(_COLUMNS))
        for row in rows:
            typer.echo("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |")
        return
    print_table(out, None, _COLUMNS, rows, note="full ids: --output json")


@runs_app.command("show")
def runs_show_cmd(
    run: Annotated[str, typer.Argument(help="A run id, a unique prefix of one, or `last`.")],
    output: OutputOption = None,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Show a past diagnosis again, exactly as `warden diagnose` printed it (any --output).

    A run that did not finish (it failed, or waits for an approval) shows its status instead, with exit code 1.

    Example: warden runs show last
    """
    from agent.store import find_run

    fmt = pick_output(output, json_out)
    with warden_errors():
        summary, diagnosis = find_run(run, db)
    if diagnosis is None:
        typer.echo(f"run {summary.id}: {summary.status or 'unknown'} (no diagnosis); target {summary.target or '-'}",
                   err=True)
        raise typer.Exit(1)
    emit_diagnosis(diagnosis, fmt, root=evidence_root(summary.target) if summary.target else None)
