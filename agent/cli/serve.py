"""`warden serve`: receive Alertmanager and generic webhooks, investigate with the matching runbook."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.errors import warden_errors
from policies import PolicyError

__all__ = ["serve_cmd"]


def serve_cmd(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", min=0, max=65535)] = 9095,
    snapshot: Annotated[Path | None, typer.Option("--snapshot", help="Investigate this snapshot or incident directory instead of the live cluster.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Live config (default $WARDEN_HOME/warden.toml).")] = None,
    runbooks: Annotated[list[Path] | None, typer.Option("--runbooks", help="Runbook directory (repeatable); default $WARDEN_HOME/runbooks and the bundled examples.")] = None,
    workers: Annotated[int, typer.Option(help="Investigations run at once.", min=1, max=16)] = 2,
    max_queued: Annotated[int, typer.Option("--max-queued", help="Grouped investigations waiting at most; more are dropped and counted.", min=1, max=10000)] = 64,
) -> None:
    """Serve POST /alertmanager (Alertmanager webhook, payload version 4), POST /webhook (generic
    JSON alerts), GET /status and, with WARDEN_SLACK_SIGNING_SECRET set, the Slack app's
    /slack/events for the Approve / Deny buttons it posts. Alerts are matched to runbooks, grouped,
    cooled down per node and condition, and investigated by a bounded pool of workers.

    Example: warden serve --port 9095
    """
    with warden_errors(extra=(PolicyError,)):
        from agent.cli.gateway import bind_socket
        from agent.runbooks.target import Target
        from agent.serve.server import build_server
        from agent.settings import WardenSettings

        WardenSettings.load().validate_all()
        target = Target.of(snapshot=snapshot, config=config)
        server = build_server(target, workers=workers, max_queued=max_queued, runbook_dirs=runbooks or None)
        sock = bind_socket(host, port)
        import uvicorn

        names = ", ".join(rb.name for rb in server.runbooks) or "none (add YAML files to $WARDEN_HOME/runbooks)"
        print(f"warden serve on http://{host}:{sock.getsockname()[1]} (POST /alertmanager, /webhook"
              f"{', /slack/events' if server.slack else ''}; GET /status); target {target.name}; runbooks: {names}; "
              "Ctrl-C stops it", file=sys.stderr, flush=True)
        try:
            uvicorn.Server(uvicorn.Config(server.asgi, log_level="warning", access_log=False,
                                          lifespan="off")).run(sockets=[sock])
        finally:
            server.queue.close()
