"""`warden audit verify` and `warden audit anchor`: check the audit log's keyed chain, and export its
head where the writer cannot rewrite it (agent/audit_anchor.py)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import err_console, warden_errors
from agent.settings import WardenSettings, audit_path
from agent.store import warden_home
from tools.errors import ConfigError

__all__ = ["audit_app", "audit_verify_cmd", "audit_anchor_cmd"]

audit_app = typer.Typer(help="Warden's tamper-evident audit log.", no_args_is_help=True)

_NO_ANCHOR = ("no anchor checked: deleting the newest rows together with an old copy of the head, or "
              "replacing the whole file, shows only against an anchor; set audit_anchor in config.yaml and run "
              "`warden audit anchor` regularly, or pass --anchor")


def _pinned(anchor: str):  # -> AuditAnchor
    from agent.audit import AuditAnchor

    seq, _, digest = anchor.partition(":")
    if not seq.isdigit() or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest.lower()):
        raise ConfigError(f"--anchor {anchor!r}: expected SEQ:HASH (a row number and a 64-hex hash)")
    return AuditAnchor(seq=int(seq), hash=digest.lower(), source="--anchor")


def _anchor_of(settings: WardenSettings, anchor: str | None, anchor_file: Path | None):  # -> AuditAnchor | None
    from agent.audit_anchor import last_anchor

    if anchor is not None:
        return _pinned(anchor)
    path = anchor_file or (settings.audit_anchor.file if settings.audit_anchor else None)
    return last_anchor(path, audit_path()) if path else None


def _fail(problem: str, row: int | None = None) -> None:
    err_console.print(f"audit log FAILED{f' at row {row}' if row is not None else ''}: {problem}", markup=False)
    raise typer.Exit(1)


def _verified(settings: WardenSettings, pin):  # -> AuditVerification
    """Verify the log against ``pin``; a missing log with evidence that it existed fails (exit 1)."""
    from agent.audit import audit_key_path

    db = audit_path()
    if not db.exists():
        if pin is not None:
            when = f" at {pin.at.isoformat(timespec='seconds')}" if pin.at else ""
            _fail(f"{db} is missing, but {pin.source} (seq {pin.seq}{when}) says the log held {pin.seq} rows: "
                  "the log was deleted")
        if audit_key_path(db).exists() and not settings.audit_key_env:
            _fail(f"{db} is missing, but its key {audit_key_path(db).name} exists: the log was deleted or moved")
        raise ConfigError(f"{db}: no audit log yet")
    if not settings.audit_key_env and not audit_key_path(db).exists():
        _fail(f"{db} exists but its key {audit_key_path(db)} is missing: the log cannot be verified "
              "(the key was deleted, or the log was copied here without it)")
    return settings.open_audit(create=False).verify(anchor=pin)


def audit_verify_cmd(
    anchor: Annotated[str | None, typer.Option("--anchor", help="SEQ:HASH exported earlier (syslog, webhook); the chain must still hold it.")] = None,
    anchor_file: Annotated[Path | None, typer.Option("--anchor-file", help="Read the last anchor from this file instead of audit_anchor.file.")] = None,
) -> None:
    """Verify the audit log: an edited, deleted, inserted or reordered row, a rewritten head, an
    emptied, truncated, missing or recreated log, or one that no longer matches the last exported
    anchor (audit_anchor.file by default) is reported with the first bad row and exit code 1.

    Example: warden audit verify --anchor 1042:9f2c1e...
    """
    with warden_errors():
        settings = WardenSettings.load()
        pin = _anchor_of(settings, anchor, anchor_file)
        result = _verified(settings, pin)
    for w in result.warnings:
        err_console.print(f"warning: {w}", markup=False)
    if not result.ok:
        _fail(str(result.problem), result.first_bad_seq)
    against = f"; matches {pin.source} (seq {pin.seq})" if pin is not None else ""
    Console(highlight=False, soft_wrap=True).print(f"audit log ok: {result.rows_checked} rows; head {result.head_seq}:"
                                                   f"{result.head_hash}{against}", markup=False)
    if pin is None:
        err_console.print(f"warning: {_NO_ANCHOR}", markup=False)


def audit_anchor_cmd(
    to: Annotated[list[str] | None, typer.Option("--to", help="file:PATH, syslog:/dev/log, syslog:HOST:PORT or webhook:URL (default: audit_anchor in config.yaml).")] = None,
) -> None:
    """Verify the audit log against the last anchor, then export its head (seq, hash, log id) to
    the anchor sinks, where `warden audit verify` checks it later. Run it from cron or a timer.

    Example: warden audit anchor --to file:/var/log/warden/audit-anchors.jsonl
    """
    from agent.audit_anchor import anchor_record, export_anchor, parse_sink

    with warden_errors():
        settings = WardenSettings.load()
        sinks = [parse_sink(t, home=warden_home()) for t in to] if to else \
            [settings.audit_anchor] if settings.audit_anchor else []
        if not sinks:
            raise ConfigError("no anchor sink: set `audit_anchor: {file: PATH}` (outside $WARDEN_HOME) in "
                              "config.yaml, or pass --to file:PATH")
        pin = _anchor_of(settings, None, next((s.file for s in sinks if s.file), None))
        result = _verified(settings, pin)
        if not result.ok:
            _fail(f"{result.problem} (nothing anchored)", result.first_bad_seq)
        assert result.log_id is not None
        record = anchor_record(audit_path(), result.log_id, result.head_seq, result.head_hash,
                               datetime.now(timezone.utc))
        done = [d for s in sinks for d in export_anchor(s, record)]
    Console(highlight=False, soft_wrap=True).print(f"anchored {result.head_seq}:{result.head_hash} (log {result.log_id}) to "
                                   f"{', '.join(done)}", markup=False)


audit_app.command("verify")(audit_verify_cmd)
audit_app.command("anchor")(audit_anchor_cmd)
