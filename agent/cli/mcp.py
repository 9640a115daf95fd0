"""`warden mcp [SNAPSHOT | --live]`: serve the read tools over the Model Context Protocol (stdio or HTTP)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.errors import warden_errors

__all__ = ["mcp_cmd"]


def mcp_cmd(
    path: Annotated[Path | None, typer.Argument(help="Incident or snapshot directory to serve; omit with --live.")] = None,
    live: Annotated[bool, typer.Option("--live", help="Serve the live cluster that warden.toml describes.")] = False,
    config: Annotated[Path | None, typer.Option("--config", help="Live config (default $WARDEN_HOME/warden.toml).")] = None,
    http: Annotated[bool, typer.Option("--http", help="Streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option("--host", help="With --http: address to bind (keep it local unless a proxy authenticates callers).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="With --http: port (0 picks a free one).")] = 8765,
    max_age: Annotated[float, typer.Option("--max-age", min=0, help="With --live: re-collect the evidence when older than this many seconds (0: never).")] = 300.0,
) -> None:
    """Serve Warden's read tools over the Model Context Protocol, so other agents can read a cluster
    through Warden's bounded, redacted tools. Only the read tools are offered (each annotated
    readOnlyHint); nothing that changes the cluster. Results are the ones Warden's own model gets,
    with secrets redacted as the gateway redacts them, and every call is written to the audit log.
    stdio by default (an MCP client starts this command); --http serves streamable HTTP at
    http://HOST:PORT/mcp and prints the URL on stderr.

    Example: warden mcp evals/incidents/xid79-nccl-watchdog-other-rank
    """
    with warden_errors():
        from agent.mcpserver import EvidenceHolder, build_server, serve_http, serve_stdio, site_redactor
        from agent.render.view import evidence_root
        from agent.settings import WardenSettings
        from tools.errors import ConfigError, SnapshotError
        from tools.read.context import ReadContext

        if live == (path is not None):
            raise ConfigError("give an incident or snapshot PATH, or --live (not both)")
        if path is not None:
            snap = evidence_root(path)
            if snap is None:
                raise SnapshotError(f"{path}: not an incident (incident.yaml) or snapshot (manifest.yaml) directory")
            holder = EvidenceHolder(lambda: ReadContext.from_snapshot(snap))
        else:
            from agent.live.act import collect_live
            from agent.live.config import load_live_config

            cfg = load_live_config(config)
            holder = EvidenceHolder(lambda: collect_live(cfg).ctx, max_age_s=max_age)
        holder.audit = WardenSettings.load().open_audit()
        holder.context()  # read (or collect) once now: bad evidence is an error before any client connects
        server = build_server(holder, redactor=site_redactor())
        if not http:
            serve_stdio(server)
            return
        serve_http(server, host=host, port=port,
                   on_listen=lambda url: print(f"warden mcp: serving {url} (Ctrl-C stops)", file=sys.stderr, flush=True))
