"""`warden watch`: sweep on a schedule with the deterministic engine; post only new findings."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.errors import warden_errors
from policies import PolicyError

__all__ = ["watch_cmd"]


def watch_cmd(
    path: Annotated[Path | None, typer.Argument(help="A snapshot or incident directory to sweep (re-read every sweep); omit with --live.")] = None,
    live: Annotated[bool, typer.Option("--live", help="Sweep the live cluster of warden.toml.")] = False,
    every: Annotated[str, typer.Option("--every", help="Time between sweeps: 30s, 5m, 1h.")] = "5m",
    once: Annotated[bool, typer.Option("--once", help="One sweep, then exit (for cron and tests).")] = False,
    post: Annotated[list[str] | None, typer.Option("--post", help="Where new findings go: slack:CHANNEL_ID, webhook:URL, file:PATH (repeatable; relative files under $WARDEN_HOME/posts).")] = None,
    cooldown: Annotated[str, typer.Option("--cooldown", help="An unchanged finding is posted again only after this long.")] = "1h",
    mode: Annotated[str, typer.Option("--mode", help="observe (findings only) | recommend (Approve/Deny buttons) | execute.")] = "observe",
    config: Annotated[Path | None, typer.Option("--config", help="Live config (default $WARDEN_HOME/warden.toml).")] = None,
) -> None:
    """Run the deterministic engine (the built-in model: no LLM call) on a schedule and post only new
    or changed findings, deduplicated by root cause and culprits with a cool-down kept in the run
    store. Each sweep prints one line; exits 0 after --once.

    Example: warden watch --live --every 5m --post slack:C0123ONCALL
    """
    from agent.watch.sweep import parse_every, parse_post

    if live == (path is not None):
        raise typer.BadParameter("give a snapshot PATH or --live (not both)")
    if mode not in ("observe", "recommend", "execute"):
        raise typer.BadParameter("--mode must be observe, recommend or execute")
    try:
        interval, cool = parse_every(every), parse_every(cooldown)
        posts = [parse_post(p) for p in (post or ["file:watch.jsonl"])]
    except ValueError as e:
        raise typer.BadParameter(str(e).splitlines()[0]) from None
    with warden_errors(extra=(PolicyError,)):
        from agent.runbooks.cooldown import Cooldowns
        from agent.runbooks.target import Target
        from agent.settings import WardenSettings
        from agent.watch.sweep import sweep

        WardenSettings.load().validate_all()
        target = Target.of(snapshot=path, config=config)
        slack = None
        if any(p.slack for p in posts) and os.environ.get("WARDEN_SLACK_TOKEN"):
            from agent.slackapp.client import web_client
            from agent.slackapp.poster import SlackPoster

            poster = SlackPoster(web_client())
            slack = lambda: poster  # noqa: E731
        cooldowns = Cooldowns()
        n = 0
        while True:
            n += 1
            r = sweep(target, posts, cooldowns=cooldowns, cooldown_s=cool, mode=mode, slack=slack)  # type: ignore[arg-type]
            where = "; ".join(f"{d.where} {'ok' if d.ok else 'FAILED: ' + d.detail}" for d in r.deliveries)
            print(f"sweep {n}: {r.root_cause} {', '.join(r.culprits) or '-'} (run {r.run_id}) — "
                  f"{'posted: ' + where if r.deliveries else r.why}", file=sys.stderr, flush=True)
            if once:
                return
            time.sleep(interval)
