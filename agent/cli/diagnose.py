"""`warden diagnose PATH`: diagnose a recorded incident or snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import warden_errors
from agent.cli.render import render_diagnosis
from agent.diagnose import diagnose_path
from agent.live.cli_support import live_diagnose_fn
from agent.store import RunStore
from gateway.config import BUILTIN_MODEL

__all__ = ["diagnose_cmd"]


def diagnose_cmd(
    path: Annotated[Path | None, typer.Argument(help="Incident directory (incident.yaml + snapshot/) or snapshot directory; omit with --live.")] = None,
    question: Annotated[str | None, typer.Option("--question", "-q", help="What to ask; defaults to the incident's question.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the Diagnosis as JSON for scripts.")] = False,
    model: Annotated[str, typer.Option("--model", help="Gateway model alias.")] = BUILTIN_MODEL,
    db: Annotated[Path | None, typer.Option("--db", help="Run store (SQLite); default $WARDEN_HOME/warden.db.")] = None,
    live: Annotated[bool, typer.Option("--live", help="Diagnose the live cluster that warden.toml describes.")] = False,
    config: Annotated[Path | None, typer.Option("--config", help="Live config (default $WARDEN_HOME/warden.toml).")] = None,
) -> None:
    """Diagnose an incident: collect the evidence, run the checks, name the root cause and propose
    dry-run fixes. Nothing is executed.

    Example: warden diagnose evals/incidents/xid79-nccl-watchdog-other-rank   (or: warden diagnose --live)
    """
    err = Console(stderr=True)
    with warden_errors():
        store = RunStore(db)
        run = live_diagnose_fn(live, path, config) if (live or path is None) else diagnose_path
        if json_out:
            d = run(path, question, model=model, store=store)
            typer.echo(d.model_dump_json(indent=2))
            return
        with err.status("collecting evidence…") as status:
            def progress(msg: str) -> None:
                status.update(msg)

            def on_tool(name: str, args: dict) -> None:
                shown = ", ".join(f"{k}={v}" for k, v in args.items() if v not in (None, [], {}))
                status.update(f"tool {name}({shown})")

            d = run(path, question, model=model, store=store, on_progress=progress, on_tool=on_tool)
        render_diagnosis(d, Console())
