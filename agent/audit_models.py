"""What the audit log hands out: an appended record, an exported anchor, a verification result
(agent/audit.py re-exports them)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, JsonValue

__all__ = ["AuditRecord", "AuditAnchor", "AuditVerification"]


class AuditRecord(BaseModel):
    """One appended row."""

    model_config = ConfigDict(frozen=True)

    seq: int
    ts: datetime
    kind: str
    run_id: str | None
    payload: dict[str, JsonValue]
    prev_hash: str
    hash: str


class AuditAnchor(BaseModel):
    """A head exported by ``warden audit anchor``: the log must still hold exactly this row."""

    model_config = ConfigDict(frozen=True)

    seq: int
    hash: str
    log_id: str | None = None
    """The anchored log's id (None: an anchor typed as SEQ:HASH)."""
    at: datetime | None = None
    """When it was exported (UTC)."""
    source: str | None = None
    """Where it was read from (the anchor file, ``--anchor``)."""


class AuditVerification(BaseModel):
    """The result of :meth:`AuditLog.verify`."""

    ok: bool
    first_bad_seq: int | None = None
    """seq of the first row that fails (for a deletion at the end: the first missing seq)."""
    problem: str | None = None
    """One line: what is wrong, e.g. "row 7: hash mismatch (row edited)"."""
    rows_checked: int = 0
    head_seq: int = 0
    head_hash: str = ""
    log_id: str | None = None
    anchor: AuditAnchor | None = None
    """The anchor the log was checked against, if any."""
    warnings: list[str] = []
    """Non-fatal findings, e.g. triggers that were missing when the log was opened."""
