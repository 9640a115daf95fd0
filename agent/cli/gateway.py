"""`warden gateway serve|usage`: run the LLM gateway for other clients, and read its ledger."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from agent.cli.errors import warden_errors
from agent.store import warden_home
from gateway.config import default_config, load_config
from gateway.errors import ConfigError as GatewayConfigError
from gateway.serve import serve
from gateway.usage import summarize_usage

__all__ = ["gateway_app", "default_gateway_db"]

gateway_app = typer.Typer(help="Warden's OpenAI-compatible LLM gateway.", no_args_is_help=True)


def default_gateway_db() -> Path:
    """The ledger and cache file the agent's in-process gateway writes: ``$WARDEN_HOME/gateway.db``."""
    return warden_home() / "gateway.db"


@gateway_app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 4000,
    config: Annotated[Path | None, typer.Option("--config", help="Gateway config (TOML or YAML); default: built-in model only.")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="Ledger/cache SQLite file; default $WARDEN_HOME/gateway.db.")] = None,
) -> None:
    """Serve /v1/chat/completions, /v1/models, /healthz and /metrics under uvicorn until interrupted.

    Example: warden gateway serve --port 4000 --config gateway.toml
    """
    with warden_errors(extra=(GatewayConfigError,)):
        cfg = load_config(config) if config else default_config()
        path = db or default_gateway_db()
        path.parent.mkdir(parents=True, exist_ok=True)
        serve(cfg, host, port, store_path=path)


@gateway_app.command("usage")
def usage_cmd(
    by: Annotated[str, typer.Option(help="Comma-separated: key, team, model, day, provider, run_id.")] = "key,team,model,day",
    day: Annotated[str | None, typer.Option(help="Only this UTC day (YYYY-MM-DD).")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="Ledger SQLite file; default $WARDEN_HOME/gateway.db.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print rows as JSON.")] = False,
) -> None:
    """Summarise the usage ledger: requests, errors, cache hits, tokens, cost and mean latency per group.

    Example: warden gateway usage --by team,day
    """
    with warden_errors(extra=(GatewayConfigError,)):
        path = db or default_gateway_db()
        if not path.exists():
            raise GatewayConfigError(f"{path}: no gateway ledger yet (run a diagnosis or `warden gateway serve`)")
        rows = summarize_usage(path, by=[b.strip() for b in by.split(",") if b.strip()], day=day)
        if json_out:
            typer.echo(json.dumps([r.model_dump() for r in rows], indent=2))
            return
        groups = {"key", "team", "model", "day", "provider", "run_id"}
        wanted = [b.strip() for b in by.split(",") if b.strip()]
        fields = [f for f in (list(rows[0].model_dump()) if rows else []) if f not in groups or f in wanted]
        table = Table(title=f"gateway usage ({path})")
        for f in fields:
            table.add_column(f, justify="right" if f not in ("key", "team", "model", "day", "provider", "run_id") else "left")
        for r in rows:
            row = r.model_dump()
            table.add_row(*["" if row[f] is None else str(row[f]) for f in fields])
        Console(width=160).print(table)
