"""`warden approvals list`: pending approvals, newest last."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import warden_errors
from agent.cli.tables import Column, print_table
from agent.render.safe import shell_command
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
        cols = [Column("id", 12, 9, wrap=False), Column("action", 10, 8), Column("parameters", 16, 5),
                Column("plan", 12, 7, wrap=False), Column("requester", 8, 6), Column("run", 12, 3, wrap=False),
                Column("expires (UTC)", 16, 7, wrap=False)]
        rows = [(r.id, r.action, json.dumps(r.params, sort_keys=True), r.plan_hash[:12], r.requester, r.run_id[:12],
                 f"{r.expires_at:%Y-%m-%d %H:%M}") for r in pending]
        out = Console(highlight=False, soft_wrap=True)
        print_table(out, "Pending approvals", cols, rows, note="full plan hashes and run ids: --json")  # cells: data
        for r in pending:  # the exact commands, one per line, as a shell would need them
            for argv in r.commands or [[]]:
                out.print(f"{r.id}: {shell_command(argv)}" if argv else f"{r.id}: (no command)", markup=False)


approvals_app.command("list")(approvals_list_cmd)
