"""`warden approve ID`: approve one pending action for its exact plan, then resume its run."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import warden_errors
from agent.cli.resume import resume_if_ready
from agent.identity import acting_user
from agent.settings import WardenSettings
from policies import PolicyError

__all__ = ["approve_cmd"]


def approve_cmd(
    approval_id: Annotated[str, typer.Argument(help="The approval id (see `warden approvals list`).")],
    approver: Annotated[str | None, typer.Option("--approver", help="Who approves; only where config.yaml says this channel authenticates names (asserted_identity). Default: the login user of this process.")] = None,
    plan_hash: Annotated[str | None, typer.Option("--plan-hash", help="Approve only if the plan still has exactly this (whole) hash.")] = None,
    execute: Annotated[bool, typer.Option("--execute", help="Resume the paused run for real (run commands); default is a dry run.")] = False,
    db: Annotated[Path | None, typer.Option("--db", help="Run store of the paused run; default $WARDEN_HOME/warden.db.")] = None,
) -> None:
    """Approve a pending action. Shows the exact commands first. The approver is the operating
    system's login user of this process (not a typed name); the approval names the plan's whole
    hash, the approver and an expiry, carries a MAC and is used once; the requester cannot approve
    their own irreversible action. When every approval of the paused run is decided, the run
    resumes (dry run unless --execute).

    Example: warden approve 3f9a1c2b7d10
    """
    with warden_errors(extra=(PolicyError,)):
        settings = WardenSettings.load()
        audit = settings.open_audit()
        store = settings.open_approvals(audit)
        req = store.get(approval_id)
        who = acting_user(approver, allowed=settings.asserted_identity, option="--approver")
        out = Console(highlight=False, soft_wrap=True)
        if execute and req.status == "approved":
            done = req  # approved earlier (e.g. resumed as a dry run then); now resume for real
        else:
            done = store.approve(approval_id, who, plan_hash or req.plan_hash)
            out.print(f"approved {done.id}: {done.action} {done.params} (plan {done.plan_hash}) by {who}",
                      markup=False)
            for argv in done.commands:
                out.print(f"    $ {shlex.join(argv)}", markup=False)
        resume_if_ready(done.run_id, settings, audit, store, execute=execute, db=db, console=out)
