"""`warden diagnose PATH`: diagnose a recorded incident or snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from agent.cli.errors import warden_errors
from agent.cli.gateway_option import GatewayConfigOption
from agent.cli.render import JsonOption, Output, OutputOption, emit_diagnosis, pick_output
from agent.cli.startup import import_phase
from agent.render import clean_line, evidence_root
from gateway.config import BUILTIN_MODEL

__all__ = ["diagnose_cmd"]


def diagnose_cmd(
    path: Annotated[Path | None, typer.Argument(help="Incident directory (incident.yaml + snapshot/) or snapshot directory; omit with --live.")] = None,
    question: Annotated[str | None, typer.Option("--question", "-q", help="What to ask; defaults to the incident's question.")] = None,
    output: OutputOption = None,
    json_out: JsonOption = False,
    model: Annotated[str, typer.Option("--model", help="Gateway model alias.")] = BUILTIN_MODEL,
    db: Annotated[Path | None, typer.Option("--db", help="Run store (SQLite); default $WARDEN_HOME/warden.db.")] = None,
    live: Annotated[bool, typer.Option("--live", help="Diagnose the live cluster that warden.toml describes.")] = False,
    config: Annotated[Path | None, typer.Option("--config", help="Live config (default $WARDEN_HOME/warden.toml).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Any unreadable file is an error (exit 2) instead of "
                                                        "being listed as unreadable evidence.")] = False,
    gateway_config: GatewayConfigOption = None,
) -> None:
    """Diagnose an incident, a snapshot or the live cluster: the root cause, its evidence and dry-run fixes.

    Collects the evidence, runs the checks and asks the model (the built-in offline diagnostician
    unless --model names another gateway alias). The first line is the verdict: root cause,
    culprits, confidence and GPU-hours lost; then the evidence with its times and paths, then each
    fix's commands, shell-quoted, one per line. Nothing is executed. The run is kept in the run
    store (warden runs list). A file that cannot be read is listed as unreadable and the rest used.

    Exit codes: 0 with a Diagnosis (inconclusive included), 2 on bad input (an invalid manifest, incident
    file or config; with --strict any unreadable file), 3 when no evidence at all could be read.

    A run that a limit or the model stops (budget, context, timeout, upstream error, invalid output)
    still exits 0 with a partial, inconclusive Diagnosis naming why (stopped_by).

    Example: warden diagnose evals/incidents/xid79-nccl-watchdog-other-rank
    """
    fmt = pick_output(output, json_out)
    err = Console(stderr=True, highlight=False)
    with warden_errors():
        with import_phase():
            from agent.diagnose import diagnose_path  # the agent stack: imported only by the commands that run it
            from agent.store import RunStore

        if live or path is None:
            from agent.live.cli_support import live_diagnose_fn  # the live collector, only for --live

            run = live_diagnose_fn(live, path, config)
        else:
            run = diagnose_path
        store = RunStore(db)
        from agent.gateway_setup import load_gateway_config

        gw = load_gateway_config(gateway_config)
        root = evidence_root(path) if path is not None else None
        path = path.absolute() if path is not None else None  # the run store keeps where it was: runs show finds it
        if fmt is not Output.rich or not err.is_terminal:
            d = run(path, question, model=model, store=store, strict=strict, gateway_config=gw)
            emit_diagnosis(d, fmt, root=root)
            _exit_for(d)
            return
        with err.status("collecting evidence…") as status:
            def progress(msg: str) -> None:
                status.update(Text(clean_line(msg)))  # file names from a manifest: data, never markup

            def on_tool(name: str, args: dict) -> None:
                shown = ", ".join(f"{k}={v}" for k, v in args.items() if v not in (None, [], {}))
                status.update(Text(clean_line(f"tool {name}({shown})")[:200]))

            d = run(path, question, model=model, store=store, on_progress=progress, on_tool=on_tool, strict=strict,
                    gateway_config=gw)
        emit_diagnosis(d, fmt, root=root)
    _exit_for(d)


EXIT_NOTHING_READ = 3


def _exit_for(d: object) -> None:
    """Exit 3 when no evidence at all could be read (DESIGN.md "Exit codes and partial evidence")."""
    if getattr(d, "nothing_read", False):
        what = "; ".join(f"{u.where()}: {u.reason}" for u in d.unreadable[:3]) or "nothing was collected"  # type: ignore[attr-defined]
        Console(stderr=True, highlight=False).print(f"warden: no evidence could be read ({clean_line(what)[:400]})",
                                                    markup=False)
        raise typer.Exit(EXIT_NOTHING_READ)
