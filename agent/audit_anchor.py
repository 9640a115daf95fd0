"""Audit anchors: the log's head exported where the writer cannot rewrite it, and read back.

``warden audit anchor`` sends one JSON record per export to each configured sink::

    {"warden_audit_anchor": 1, "db": "/var/lib/warden/audit.db", "log_id": "9c1e…", "seq": 1042,
     "hash": "5be0…", "at": "2026-03-04T10:15:00.123456+00:00"}

Sinks (``audit_anchor:`` in ``$WARDEN_HOME/config.yaml``)::

    audit_anchor:
      file: /var/log/warden/audit-anchors.jsonl   # appended; must lie outside $WARDEN_HOME
      syslog: /dev/log                            # a Unix datagram socket (journald, rsyslog) or host:port (UDP)
      webhook: https://siem.example.org/warden    # POST of the JSON record

The file is the sink ``warden audit verify`` reads back by default (its last record for this
database); make it append-only (``chattr +a``) or owned by another account. Syslog and webhook
records are kept by another system: pass one to ``verify --anchor SEQ:HASH``.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.audit import AuditAnchor
from tools.errors import WardenError

__all__ = ["AnchorConfig", "AnchorError", "anchor_record", "export_anchor", "last_anchor", "parse_sink"]

_TAIL_BYTES = 1 << 20
"""How much of the end of an anchor file is read back (about 5,000 records)."""


class AnchorError(WardenError):
    """An anchor could not be exported or read back; the message names the sink."""


class AnchorConfig(BaseModel):
    """``audit_anchor:`` in config.yaml (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: Path | None = None
    syslog: str | None = None
    """``/dev/log`` (a Unix socket path) or ``host:port`` (UDP)."""
    webhook: str | None = Field(default=None, pattern=r"^https?://")
    webhook_timeout_s: float = Field(default=10.0, gt=0, le=300)

    def sinks(self) -> list[str]:
        """The configured sinks as ``kind:target`` strings."""
        return [f"{k}:{v}" for k, v in (("file", self.file), ("syslog", self.syslog), ("webhook", self.webhook)) if v]


def parse_sink(text: str, *, home: Path) -> AnchorConfig:
    """One ``--to`` value (``file:PATH``, ``syslog:/dev/log``, ``syslog:HOST:PORT``, ``webhook:URL``).

    Raises:
        AnchorError: an unknown kind, or a file inside ``home``.
    """
    kind, _, target = text.partition(":")
    if kind not in ("file", "syslog", "webhook") or not target:
        raise AnchorError(f"--to {text!r}: expected file:PATH, syslog:/dev/log, syslog:HOST:PORT or webhook:URL")
    try:
        cfg = AnchorConfig.model_validate({kind: target})
    except ValidationError as e:
        raise AnchorError(f"--to {text!r}: {e.errors()[0]['msg']}") from None
    check_outside(cfg, home, field="--to")
    return cfg


def check_outside(cfg: AnchorConfig, home: Path, *, field: str = "audit_anchor.file") -> None:
    """The anchor file must not be under ``$WARDEN_HOME`` (whoever can rewrite the log could rewrite it).

    Raises:
        AnchorError: naming the field when it is.
    """
    if cfg.file is None:
        return
    f, h = Path(os.path.abspath(cfg.file.expanduser())), Path(os.path.realpath(home))
    if f == h or h in f.parents or Path(os.path.realpath(f)).is_relative_to(h):
        raise AnchorError(f"{field}: {cfg.file} is inside $WARDEN_HOME ({home}); anchors must be kept where the "
                          "audit log's writer cannot rewrite them")


def anchor_record(db: Path, log_id: str, seq: int, digest: str, at: datetime) -> dict[str, object]:
    """The JSON record of one anchor."""
    return {"warden_audit_anchor": 1, "db": str(Path(os.path.abspath(db))), "log_id": log_id, "seq": seq,
            "hash": digest, "at": at.isoformat(timespec="microseconds")}


def _to_file(path: Path, line: str) -> None:
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
    try:
        os.write(fd, line.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def _to_syslog(target: str, line: str) -> None:
    import logging
    from logging.handlers import SysLogHandler

    host, sep, port = target.rpartition(":")
    address: str | tuple[str, int] = (host, int(port)) if sep and port.isdigit() and not target.startswith("/") \
        else target
    handler = SysLogHandler(address=address, facility=SysLogHandler.LOG_AUTHPRIV)
    handler.ident = "warden-audit: "

    def fail(record: logging.LogRecord) -> None:
        raise  # noqa: PLE0704 - re-raise what emit() caught: a lost anchor is an error, not a stderr line

    handler.handleError = fail  # type: ignore[method-assign]
    try:
        handler.emit(logging.LogRecord("warden.audit", logging.INFO, __file__, 0, line, None, None))
    finally:
        handler.close()


def _to_webhook(url: str, record: dict[str, object], timeout_s: float) -> None:
    import httpx

    try:
        resp = httpx.post(url, json=record, timeout=timeout_s)
    except httpx.HTTPError as e:
        raise AnchorError(f"webhook {url}: {type(e).__name__}: {e}") from None
    if resp.status_code >= 300:
        raise AnchorError(f"webhook {url}: answered HTTP {resp.status_code}")


def export_anchor(cfg: AnchorConfig, record: dict[str, object]) -> list[str]:
    """Send ``record`` to every sink of ``cfg``; the sinks it reached (``kind:target``).

    Raises:
        AnchorError: naming the first sink that failed (the ones before it have the record).
    """
    line = json.dumps(record, sort_keys=True, separators=(",", ":"))
    done = []
    if cfg.file is not None:
        try:
            _to_file(cfg.file, line)
        except OSError as e:
            raise AnchorError(f"audit_anchor.file {cfg.file}: {e.strerror or e}") from None
        done.append(f"file:{cfg.file}")
    if cfg.syslog:
        try:
            _to_syslog(cfg.syslog, line)
        except (OSError, ValueError) as e:
            raise AnchorError(f"audit_anchor.syslog {cfg.syslog}: {type(e).__name__}: {e}") from None
        done.append(f"syslog:{cfg.syslog}")
    if cfg.webhook:
        _to_webhook(cfg.webhook, record, cfg.webhook_timeout_s)
        done.append(f"webhook:{cfg.webhook}")
    return done


def last_anchor(path: Path, db: Path) -> AuditAnchor | None:
    """The newest anchor in the file ``path`` for the database ``db``; None when it holds none.

    Raises:
        AnchorError: the file cannot be read, or a record for ``db`` is malformed (an anchor file
            is evidence: a damaged one is reported, not skipped).
    """
    path = path.expanduser()
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - _TAIL_BYTES))
            tail = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise AnchorError(f"anchor file {path}: {e.strerror or e}") from None
    want = str(Path(os.path.abspath(db)))
    lines = tail.splitlines()[1:] if size > _TAIL_BYTES else tail.splitlines()
    for raw in reversed(lines):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
            if rec.get("db") != want:
                continue
            return AuditAnchor(seq=int(rec["seq"]), hash=str(rec["hash"]), log_id=str(rec["log_id"]),
                               at=datetime.fromisoformat(rec["at"]), source=str(path))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise AnchorError(f"anchor file {path}: a record is not an anchor: {raw[:80]!r}") from None
    return None
