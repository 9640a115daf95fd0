"""HTTP mode: the ``/slack/events`` endpoint as a Starlette route (commands, events and
interactions all arrive there, as Slack's request URL settings point them).

bolt's dispatch is synchronous (the listeners only ack and hand work to the pool), so it runs in
Starlette's thread pool and the event loop is never blocked.
"""

from __future__ import annotations

from slack_bolt import App
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent.slackapp.app import dispatch

__all__ = ["slack_route", "EVENTS_PATH"]

EVENTS_PATH = "/slack/events"


def slack_route(app: App, path: str = EVENTS_PATH) -> Route:
    """A POST route handing Slack's requests to ``app``."""

    async def endpoint(request: Request) -> Response:
        body = await request.body()
        resp = await run_in_threadpool(dispatch, app, body, dict(request.headers), request.url.query)
        headers = {k: (v[0] if isinstance(v, list) else v) for k, v in (resp.headers or {}).items()
                   if k.lower() != "content-length"}
        return Response(resp.body, status_code=resp.status, headers=headers)

    return Route(path, endpoint, methods=["POST"])


def build_slack(target: object, *, http: bool = True, workers: int = 2, mode: str = "recommend",
                model: str | None = None, images: bool = True) -> tuple[App, object]:
    """The bolt App over ``target`` and its SlackPoster, from the environment's credentials.

    Raises:
        ConfigError: a variable the mode needs is missing; BoltError: the token is refused.
    """
    from agent.runbooks.pool import BoundedPool
    from agent.slackapp.app import build_app
    from agent.slackapp.client import SlackCredentials, web_client
    from agent.slackapp.poster import SlackPoster
    from agent.slackapp.responder import Responder
    from gateway.config import BUILTIN_MODEL

    creds = SlackCredentials.from_env(http=http)
    poster = SlackPoster(web_client(creds))
    responder = Responder(target, poster, pool=BoundedPool(workers, 16, name="warden-slack"),  # type: ignore[arg-type]
                          mode=mode, model=model or BUILTIN_MODEL, images=images)  # type: ignore[arg-type]
    return build_app(creds, responder, socket_mode=not http), poster
