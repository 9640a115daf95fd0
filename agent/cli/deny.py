"""`warden deny ID --reason TEXT`: refuse one pending action, then resume its run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import warden_errors
from agent.cli.resume import resume_if_ready
from agent.identity import acting_user
from agent.settings import WardenSettings
from policies import PolicyError

__all__ = ["deny_cmd"]


def deny_cmd(
    approval_id: Annotated[str, typer.Argument(help="The approval id (see `warden approvals list`).")],
    reason: Annotated[str, typer.Option("--reason", help="Why; shown to the requester and the agent.")],
    approver: Annotated[str | None, typer.Option("--approver", help="Who denies; only where config.yaml says this channel authenticates names. Default: the login user.")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="Run store of the paused run; default $WARDEN_HOME/warden.db.")] = None,
) -> None:
    """Deny a pending action (an allowed approver, or the requester withdrawing it). When every
    approval of the paused run is decided, the run resumes and the agent is told the reason.

    Example: warden deny 3f9a1c2b7d10 --reason "maintenance window starts at 14:00"
    """
    with warden_errors(extra=(PolicyError,)):
        settings = WardenSettings.load()
        audit = settings.open_audit()
        store = settings.open_approvals(audit)
        who = acting_user(approver, allowed=settings.asserted_identity, option="--approver")
        done = store.deny(approval_id, who, reason)
        out = Console(highlight=False, soft_wrap=True)
        out.print(f"denied {done.id}: {done.action} {done.params} by {who}: {reason}", markup=False)
        resume_if_ready(done.run_id, settings, audit, store, execute=False, db=db, console=out)
