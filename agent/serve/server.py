"""Assemble ``warden serve``: runbooks, cool-downs, the queue, the runner, the ASGI app (and the
Slack app's route when Slack's HTTP-mode credentials are in the environment)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette

from agent.runbooks.cooldown import Cooldowns
from agent.runbooks.model import Runbook, load_runbooks
from agent.runbooks.target import Target
from agent.serve.app import create_app
from agent.serve.intake import Intake
from agent.serve.queue import InvestigationQueue
from agent.serve.runner import Runner

__all__ = ["Server", "build_server"]


@dataclass
class Server:
    """The parts of a running ``warden serve`` (tests and /status read them)."""

    asgi: Starlette
    intake: Intake
    queue: InvestigationQueue
    runner: Runner
    runbooks: list[Runbook]
    slack: bool
    """True when /slack/events is mounted and Slack posts are possible."""


def build_server(target: Target, *, workers: int = 2, max_queued: int = 64, runbook_dirs: list[Path] | None = None,
                 db: Path | None = None) -> Server:
    """Everything ``warden serve`` runs, not yet listening.

    Raises:
        ConfigError: an invalid runbook (file and field named), or missing Slack settings.
    """
    runbooks = load_runbooks(runbook_dirs)
    cooldowns = Cooldowns(db)
    extra, poster = [], None
    if os.environ.get("WARDEN_SLACK_TOKEN") and os.environ.get("WARDEN_SLACK_SIGNING_SECRET"):
        from agent.slackapp.http import build_slack, slack_route

        app, poster = build_slack(target, http=True, workers=workers)
        extra.append(slack_route(app))
    elif os.environ.get("WARDEN_SLACK_TOKEN"):
        from agent.slackapp.client import web_client
        from agent.slackapp.poster import SlackPoster

        poster = SlackPoster(web_client())  # posts only; buttons go to a `warden slack` process
    runner = Runner(target, cooldowns, slack=(lambda: poster) if poster is not None else None)
    queue = InvestigationQueue(runner, workers=workers, max_queued=max_queued)
    intake = Intake(runbooks, cooldowns, queue)
    return Server(asgi=create_app(intake, runner, extra_routes=extra), intake=intake, queue=queue, runner=runner,
                  runbooks=runbooks, slack=bool(extra))
