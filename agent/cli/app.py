"""The `warden` command: the composition root, wiring one typer command per module."""

from __future__ import annotations

import typer

from agent.cli.approvals import approvals_app
from agent.cli.approve import approve_cmd
from agent.cli.audit import audit_app
from agent.cli.deny import deny_cmd
from agent.cli.diagnose import diagnose_cmd
from agent.cli.sandbox import sandbox_app
from agent.cli.record import record_cmd
from agent.cli.act import act_cmd
from agent.cli.eval import eval_cmd
from agent.cli.gateway import gateway_app
from agent.cli.policy import policy_app

__all__ = ["app", "main"]

app = typer.Typer(name="warden", help="A safe operations agent for GPU and HPC clusters.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def _root() -> None:
    """Warden: diagnose stalled and slow GPU/HPC work, propose policy-checked fixes."""


app.command("diagnose")(diagnose_cmd)
app.add_typer(sandbox_app, name="sandbox")
app.command("record")(record_cmd)
app.command("act")(act_cmd)
app.add_typer(policy_app, name="policy")
app.add_typer(approvals_app, name="approvals")
app.command("approve")(approve_cmd)
app.command("deny")(deny_cmd)
app.add_typer(audit_app, name="audit")
app.command("eval")(eval_cmd)
app.add_typer(gateway_app, name="gateway")


def main() -> None:
    """Console-script entry point."""
    app()
