"""The `warden` command: the composition root, wiring one typer command per module."""

from __future__ import annotations

import typer

from agent.cli.diagnose import diagnose_cmd

__all__ = ["app", "main"]

app = typer.Typer(name="warden", help="A safe operations agent for GPU and HPC clusters.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def _root() -> None:
    """Warden: diagnose stalled and slow GPU/HPC work, propose policy-checked fixes."""


app.command("diagnose")(diagnose_cmd)


def main() -> None:
    """Console-script entry point."""
    app()
