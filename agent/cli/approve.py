"""`warden approve ID`: approve one pending action for its exact plan, then resume its run."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import warden_errors
from agent.cli.resume import resume_if_ready
from agent.settings import WardenSettings
from policies import PolicyError

__all__ = ["approve_cmd"]


def approve_cmd(
    approval_id: Annotated[str, typer.Argument(help="The approval id (see `warden approvals list`).")],
    approver: Annotated[str | None, typer.Option("--approver", help="Who approves (default: the login name).")] = None,
    plan_hash: Annotated[str | None, typer.Option("--plan-hash", help="Approve only if the plan still has this hash (prefix ok).")] = None,
    execute: Annotated[bool, typer.Option("--execute", help="Resume the paused run for real (run commands); default is a dry run.")] = False,
    db: Annotated[Path | None, typer.Option("--db", help="Run store of the paused run; default $WARDEN_HOME/warden.db.")] = None,
) -> None:
    """Approve a pending action. The approval names the plan's hash, the approver and an expiry,
    and is used once; the requester cannot approve their own irreversible action. When every
    approval of the paused run is decided, the run resumes (dry run unless --execute).

    Example: warden approve 3f9a1c2b7d10 --approver bob
    """
    with warden_errors(extra=(PolicyError,)):
        settings = WardenSettings.load()
        audit = settings.open_audit()
        store = settings.open_approvals(audit)
        req = store.get(approval_id)
        who = approver or getpass.getuser()
        out = Console(highlight=False, soft_wrap=True)
        if execute and req.status == "approved":
            done = req  # approved earlier (e.g. resumed as a dry run then); now resume for real
        else:
            shown = req.plan_hash if plan_hash and req.plan_hash.startswith(plan_hash) else (plan_hash or req.plan_hash)
            done = store.approve(approval_id, who, shown)
            out.print(f"approved {done.id}: {done.action} {done.params} (plan {done.plan_hash[:16]}) by {who}",
                      markup=False)
        resume_if_ready(done.run_id, settings, audit, store, execute=execute, db=db, console=out)
