"""`warden audit verify`: recompute the audit log's hash chain."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import err_console, warden_errors
from agent.settings import WardenSettings, audit_path
from tools.errors import ConfigError

__all__ = ["audit_app", "audit_verify_cmd"]

audit_app = typer.Typer(help="Warden's tamper-evident audit log.", no_args_is_help=True)


def audit_verify_cmd(
    anchor: Annotated[str | None, typer.Option("--anchor", help="SEQ:HASH from an earlier verify, kept elsewhere; the chain must still hold it.")] = None,
) -> None:
    """Verify the audit log: any edited, deleted, inserted or reordered row, or a head that
    disagrees, is reported with the first bad row and exit code 1. Prints the head (SEQ:HASH)
    to keep elsewhere as the next --anchor.

    Example: warden audit verify --anchor 1042:9f2c1e...
    """
    with warden_errors():
        pin = None
        if anchor is not None:
            seq, _, digest = anchor.partition(":")
            if not seq.isdigit() or len(digest) != 64:
                raise ConfigError(f"--anchor {anchor!r}: expected SEQ:HASH (a row number and a 64-hex hash)")
            pin = (int(seq), digest.lower())
        if not audit_path().exists():
            raise ConfigError(f"{audit_path()}: no audit log yet")
        result = WardenSettings.load().open_audit().verify(anchor=pin)
    for w in result.warnings:
        err_console.print(f"warning: {w}", markup=False)
    if not result.ok:
        err_console.print(f"audit log FAILED at row {result.first_bad_seq}: {result.problem}", markup=False)
        raise typer.Exit(1)
    Console(highlight=False).print(f"audit log ok: {result.rows_checked} rows; head {result.head_seq}:{result.head_hash}",
                                   markup=False)


audit_app.command("verify")(audit_verify_cmd)
