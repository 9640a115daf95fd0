"""`warden approvals list`: pending approvals, newest last."""

from __future__ import annotations

import json
import shlex
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent.cli.errors import warden_errors
from agent.settings import WardenSettings

__all__ = ["approvals_app", "approvals_list_cmd"]

approvals_app = typer.Typer(help="Pending approvals of Warden actions.", no_args_is_help=True)


def approvals_list_cmd(
    json_out: Annotated[bool, typer.Option("--json", help="Print the requests as JSON.")] = False,
) -> None:
    """List approval requests that are pending and not expired: id, action, the exact commands
    (shell-quoted), parameters, plan hash, requester, expiry. Requests found expired are recorded as
    expired in the audit log.

    Example: warden approvals list
    """
    with warden_errors():
        settings = WardenSettings.load()
        pending = settings.open_approvals(settings.open_audit()).list_pending()
        if json_out:
            typer.echo(json.dumps([r.model_dump(mode="json") for r in pending], indent=2))
            return
        if not pending:
            Console().print("No pending approvals.")
            return
        t = Table(title="Pending approvals")
        for col in ("id", "action", "parameters", "plan", "requester", "run", "expires (UTC)"):
            t.add_column(col, no_wrap=col in ("id", "plan"))
        for r in pending:
            cells = (r.id, r.action, json.dumps(r.params, sort_keys=True), r.plan_hash[:12], r.requester,
                     r.run_id[:12], f"{r.expires_at:%Y-%m-%d %H:%M}")
            t.add_row(*(Text(c) for c in cells))  # cluster text is never read as rich markup
        out = Console(highlight=False, soft_wrap=True)
        out.print(t)
        for r in pending:  # the exact commands, one per line, as a shell would need them
            for argv in r.commands or [[]]:
                out.print(f"{r.id}: $ {shlex.join(argv)}" if argv else f"{r.id}: (no command)", markup=False)


approvals_app.command("list")(approvals_list_cmd)
