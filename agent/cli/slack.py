"""`warden slack`: run the Slack app (Socket Mode by default, or signed HTTP with --http)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.errors import warden_errors
from gateway.config import BUILTIN_MODEL
from policies import PolicyError

__all__ = ["slack_cmd", "slack_asgi"]


def slack_asgi(target: object, *, http: bool = True, workers: int = 2, mode: str = "recommend",
               model: str = BUILTIN_MODEL, images: bool = True) -> tuple[object, object]:
    """The bolt App and (HTTP mode) a Starlette app serving /slack/events and /healthz over ``target``."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from agent.slackapp.http import build_slack, slack_route

    app, _ = build_slack(target, http=http, workers=workers, mode=mode, model=model, images=images)

    async def healthz(_request: object) -> PlainTextResponse:
        return PlainTextResponse("ok\n")

    return app, Starlette(routes=[slack_route(app), Route("/healthz", healthz)])


def slack_cmd(
    http: Annotated[bool, typer.Option("--http", help="HTTP mode: serve Slack's request URL /slack/events (signatures verified with WARDEN_SLACK_SIGNING_SECRET) instead of Socket Mode.")] = False,
    host: Annotated[str, typer.Option(help="HTTP mode: address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP mode: TCP port.", min=0, max=65535)] = 3000,
    snapshot: Annotated[Path | None, typer.Option("--snapshot", help="Answer about this snapshot or incident directory instead of the live cluster (nothing can run against a recording).")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Live config (default $WARDEN_HOME/warden.toml).")] = None,
    mode: Annotated[str, typer.Option("--mode", help="Autonomy for questions asked in Slack: observe | recommend | execute (never above config.yaml's).")] = "recommend",
    model: Annotated[str, typer.Option("--model", help="Gateway model alias.")] = BUILTIN_MODEL,
    workers: Annotated[int, typer.Option(help="Investigations run at once.", min=1, max=16)] = 2,
    images: Annotated[bool, typer.Option("--images/--no-images", help="Upload the report's GPU heat map and evidence timeline into each answer's thread.")] = True,
) -> None:
    """Run Warden's Slack app: `/warden <question>` and @warden mentions are answered in a thread
    with the Diagnosis; plans that need approval get Approve / Deny buttons, authorised by Slack user
    id against slack_approvers in config.yaml. Reads WARDEN_SLACK_TOKEN, WARDEN_SLACK_APP_TOKEN
    (Socket Mode) or WARDEN_SLACK_SIGNING_SECRET (--http), and WARDEN_SLACK_API_URL.

    Example: warden slack --http --port 3000
    """
    if mode not in ("observe", "recommend", "execute"):
        raise typer.BadParameter("--mode must be observe, recommend or execute")
    with warden_errors(extra=(PolicyError,)):
        from agent.runbooks.target import Target
        from agent.settings import WardenSettings

        WardenSettings.load().validate_all()
        target = Target.of(snapshot=snapshot, config=config)
        app, asgi = slack_asgi(target, http=http, workers=workers, mode=mode, model=model, images=images)
        if not http:
            from agent.slackapp.app import run_socket_mode
            from agent.slackapp.client import SlackCredentials

            print(f"warden slack: Socket Mode, answering about {target.name}; Ctrl-C stops it", file=sys.stderr,
                  flush=True)
            run_socket_mode(app, SlackCredentials.from_env(http=False))  # type: ignore[arg-type]
            return
        import uvicorn

        from agent.cli.gateway import bind_socket

        sock = bind_socket(host, port)
        print(f"warden slack: HTTP mode on http://{host}:{sock.getsockname()[1]}/slack/events, answering about "
              f"{target.name}; Ctrl-C stops it", file=sys.stderr, flush=True)
        uvicorn.Server(uvicorn.Config(asgi, log_level="warning", access_log=False, lifespan="off")).run(sockets=[sock])
