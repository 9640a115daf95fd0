"""The audit store: an append-only, hash-chained table in SQLite (through sqlite-utils).

Every tool call, finding, policy decision, approval and execution is appended here before it
takes effect (DESIGN.md, safety invariant 5). Row ``n`` stores::

    seq        1, 2, 3, ... (no gaps)
    ts         UTC time, ISO 8601 with microseconds
    kind       AuditKind, e.g. "policy_decision"
    run_id     the agent run, or NULL
    payload    canonical JSON (sorted keys, no spaces, UTF-8)
    prev_hash  hash of row n-1 ("0" * 64 for row 1)
    hash       sha256(prev_hash + canonical JSON of {seq, ts, kind, run_id, payload})

:meth:`AuditLog.verify` recomputes the chain and reports the first bad row, so an edited row
(its hash no longer matches), a deleted or inserted row (a seq gap, or a broken prev_hash link)
and reordered rows (seq is inside the hash) are all detected, by reading data alone. A single
``audit_head`` row holds the last seq and hash, so deleting rows from the end is detected too;
for protection against someone who rewrites the whole file, record :meth:`AuditLog.head`
elsewhere and pass it to ``verify(anchor=...)``.

SQLite triggers refuse UPDATE and DELETE on the table, out-of-chain INSERTs, and any head change
other than advancing by one row: defence in depth only — verify() never relies on them.

Records of what a run *read* (``run_start``, ``tool_call``, ``tool_result``, ``finding``,
``diagnosis``, ``limit``) change nothing on the cluster, so they are kept in memory and written
together, in one transaction, with the next record that does take effect or ends the run
(``policy_decision``, ``approval_request``, ``approval``, ``execution``, ``verification``,
``run_end``), or when the log is read, flushed or closed: a diagnosis writes its whole trail in
one transaction. Records that take effect are written (with everything before them) before
append() returns, as invariant 5 asks. The first deferred record after a write checks the head
against the last row, so a damaged log is refused at once. Rows are numbered and chained when
they are written; a deferred record's ``seq``/``hash`` as append() returned it are provisional
if another process writes to the same log in between.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, JsonValue
from sqlite_utils import Database

from tools.errors import WardenError

__all__ = [
    "AuditKind",
    "AuditRecord",
    "AuditVerification",
    "AuditLog",
    "AuditIntegrityError",
    "GENESIS_HASH",
    "canonical_json",
]

AuditKind = Literal[
    "run_start",
    "tool_call",
    "tool_result",
    "finding",
    "diagnosis",
    "policy_decision",
    "approval_request",
    "approval",
    "execution",
    "verification",
    "limit",
    "run_end",
]

GENESIS_HASH = "0" * 64

DEFERRED_KINDS = frozenset({"run_start", "tool_call", "tool_result", "finding", "diagnosis", "limit"})
"""Kinds that record what was read or concluded: written with the next record that takes effect."""

_TRIGGERS = {
    "audit_no_update": "CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit "
    "BEGIN SELECT RAISE(ABORT, 'audit log is append-only: UPDATE refused'); END",
    "audit_no_delete": "CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit "
    "BEGIN SELECT RAISE(ABORT, 'audit log is append-only: DELETE refused'); END",
    "audit_insert_in_chain": "CREATE TRIGGER IF NOT EXISTS audit_insert_in_chain BEFORE INSERT ON audit "
    "WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), 0) + 1 FROM audit) "
    f"OR NEW.prev_hash IS NOT COALESCE((SELECT hash FROM audit ORDER BY seq DESC LIMIT 1), '{GENESIS_HASH}') "
    "BEGIN SELECT RAISE(ABORT, 'audit log: row does not extend the chain'); END",
    "audit_head_advance_only": "CREATE TRIGGER IF NOT EXISTS audit_head_advance_only BEFORE UPDATE ON audit_head "
    "WHEN NEW.id IS NOT OLD.id OR NEW.seq IS NOT OLD.seq + 1 "
    "OR NEW.hash IS NOT (SELECT hash FROM audit WHERE seq = NEW.seq) "
    "BEGIN SELECT RAISE(ABORT, 'audit head may only advance to the newest row'); END",
    "audit_head_no_delete": "CREATE TRIGGER IF NOT EXISTS audit_head_no_delete BEFORE DELETE ON audit_head "
    "BEGIN SELECT RAISE(ABORT, 'audit head cannot be deleted'); END",
}


class AuditIntegrityError(WardenError):
    """The audit log cannot be appended to because its integrity records are damaged."""


def canonical_json(value: object) -> str:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept, NaN/Infinity refused.

    Raises:
        ValueError: the value holds NaN or Infinity. TypeError: it is not JSON data.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _row_hash(prev_hash: str, seq: int, ts: str, kind: str, run_id: str | None, payload: object) -> str:
    body = canonical_json({"seq": seq, "ts": ts, "kind": kind, "run_id": run_id, "payload": payload})
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


def _row_hash_text(prev_hash: str, seq: int, ts: str, kind: str, run_id: str | None, payload_text: str) -> str:
    """_row_hash of a payload already in canonical JSON (the same bytes, without re-encoding it)."""
    body = (f'{{"kind":{canonical_json(kind)},"payload":{payload_text},"run_id":{canonical_json(run_id)},'
            f'"seq":{seq},"ts":{canonical_json(ts)}}}')
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


def _flush_at_exit(ref: weakref.ref[AuditLog]) -> None:
    log = ref()
    if log is not None:
        log.flush()


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


class AuditVerification(BaseModel):
    """The result of :meth:`AuditLog.verify`."""

    ok: bool
    first_bad_seq: int | None = None
    """seq of the first row that fails (for a deletion at the end: the first missing seq)."""
    problem: str | None = None
    """One line: what is wrong, e.g. "row 7: hash mismatch (row edited)"."""
    rows_checked: int = 0
    head_seq: int = 0
    head_hash: str = GENESIS_HASH
    warnings: list[str] = []
    """Non-fatal findings, e.g. triggers that were missing when the log was opened."""


class AuditLog:
    """The hash-chained audit table in a SQLite file (created if missing).

    Args:
        db_path: SQLite file; it may be shared with other stores and other processes.
        clock: returns the current UTC time; tests may pass a fixed one.
    """

    def __init__(self, db_path: Path | str, *, clock: Callable[[], datetime] | None = None) -> None:
        # One connection shared by the threads pydantic-ai runs sync tools in; _lock serialises it.
        self._db = Database(sqlite3.connect(str(db_path), check_same_thread=False))
        self._lock = threading.RLock()
        self._db.execute("PRAGMA busy_timeout = 5000")
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        existed = "audit" in self._db.table_names()
        present = set(self._db.triggers_dict)
        self._missing_at_open = sorted(set(_TRIGGERS) - present) if existed else []
        self._db["audit"].create(
            {"seq": int, "ts": str, "kind": str, "run_id": str, "payload": str, "prev_hash": str, "hash": str},
            pk="seq",
            not_null=["ts", "kind", "payload", "prev_hash", "hash"],
            if_not_exists=True,
        )
        self._db["audit_head"].create(
            {"id": int, "seq": int, "hash": str}, pk="id", not_null=["seq", "hash"], if_not_exists=True
        )
        if self._last()[0] == 0 and self._db.execute("SELECT COUNT(*) FROM audit_head").fetchone()[0] == 0:
            # A new, empty log gets its head. A log with rows never gets a head silently rebuilt:
            # a missing head is evidence, reported by verify() and refused by append().
            self._db["audit_head"].insert({"id": 1, "seq": 0, "hash": GENESIS_HASH})
        for sql in _TRIGGERS.values():
            self._db.execute(sql)
        self._pending: list[tuple[str, str, str, str | None]] = []
        """Deferred records: (kind, canonical payload, ts, run_id)."""
        self._tail: tuple[int, str] | None = None
        """(seq, hash) the pending records were numbered from, plus their own."""
        atexit.register(_flush_at_exit, weakref.ref(self))

    def _last(self) -> tuple[int, str]:
        row = self._db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        return (int(row[0]), str(row[1])) if row else (0, GENESIS_HASH)

    def append(self, kind: AuditKind, payload: dict[str, JsonValue], run_id: str | None = None) -> AuditRecord:
        """Append one record and return it; atomic, safe with several writer processes.

        Args:
            kind: what happened (``tool_call``, ``finding``, ``policy_decision``, ``approval``,
                ``execution``, ``diagnosis``, ...).
            payload: JSON data describing it (use ``model_dump(mode="json")`` for models).
            run_id: the agent run it belongs to, if any.

        Raises:
            ValueError: unknown kind, or a payload that is not JSON data (NaN, sets, objects).
            AuditIntegrityError: the head record is gone (the log was tampered with).
            sqlite3.IntegrityError: a trigger refused the row (the chain was tampered with).
        """
        if kind not in get_args(AuditKind):
            raise ValueError(f"unknown audit kind {kind!r}")
        try:
            payload_text = canonical_json(payload)
        except TypeError as exc:
            raise ValueError(f"audit payload is not JSON data: {exc}") from exc
        ts = self._clock().astimezone(timezone.utc).isoformat(timespec="microseconds")
        with self._lock:
            if kind in DEFERRED_KINDS:
                return self._defer(kind, payload_text, ts, run_id)
            return self._write([*self._pending, (kind, payload_text, ts, run_id)])

    def _defer(self, kind: str, payload_text: str, ts: str, run_id: str | None) -> AuditRecord:
        if self._tail is None:
            self._tail = self._checked_tail()
        seq, prev_hash = self._tail[0] + 1, self._tail[1]
        digest = _row_hash_text(prev_hash, seq, ts, kind, run_id, payload_text)
        self._pending.append((kind, payload_text, ts, run_id))
        self._tail = (seq, digest)
        return AuditRecord(seq=seq, ts=datetime.fromisoformat(ts), kind=kind, run_id=run_id,
                           payload=json.loads(payload_text), prev_hash=prev_hash, hash=digest)

    def _checked_tail(self) -> tuple[int, str]:
        """The last row, after checking the head agrees with it (what the write would check)."""
        last = self._last()
        head = self._db.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone() \
            if "audit_head" in self._db.table_names() else None
        if head is None:
            raise AuditIntegrityError("audit head record is missing; run `warden audit verify` and repair the log")
        if (head[0], head[1]) != last:
            raise AuditIntegrityError("audit head disagrees with the last row; run `warden audit verify`")
        return last

    def flush(self) -> None:
        """Write the deferred records now (one transaction). Safe to call at any time.

        Raises:
            AuditIntegrityError / sqlite3.IntegrityError: as append().
        """
        with self._lock:
            if self._pending:
                self._write(list(self._pending))

    def _write(self, rows: list[tuple[str, str, str, str | None]]) -> AuditRecord:
        """Write ``rows`` in order in one transaction, chained from the current last row; return the last."""
        conn = self._db.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            seq, prev_hash = self._last()
            values = []
            for kind, payload_text, ts, run_id in rows:
                seq += 1
                digest = _row_hash_text(prev_hash, seq, ts, kind, run_id, payload_text)
                values.append((seq, ts, kind, run_id, payload_text, prev_hash, digest))
                prev_hash = digest
            conn.executemany(
                "INSERT INTO audit (seq, ts, kind, run_id, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
                values)
            moved = 0
            for v in values:  # the head's trigger lets it advance one row at a time
                moved += conn.execute("UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1", [v[0], v[6]]).rowcount
            if moved != len(values):
                raise AuditIntegrityError("audit head record is missing; run `warden audit verify` and repair the log")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._pending.clear()
        self._tail = None
        seq, ts, kind, run_id, payload_text, prev, digest = values[-1]
        return AuditRecord(seq=seq, ts=datetime.fromisoformat(ts), kind=kind, run_id=run_id,
                           payload=json.loads(payload_text), prev_hash=prev, hash=digest)

    def records(self, *, run_id: str | None = None, since_seq: int = 0) -> Iterator[AuditRecord]:
        """Yield records in seq order, optionally for one run and after ``since_seq``."""
        self.flush()
        sql = "SELECT seq, ts, kind, run_id, payload, prev_hash, hash FROM audit WHERE seq > ?"
        params: list[object] = [since_seq]
        if run_id is not None:
            sql += " AND run_id = ?"
            params.append(run_id)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY seq", params).fetchall()
        for seq, ts, kind, rid, payload, prev_hash, digest in rows:
            yield AuditRecord(
                seq=seq, ts=datetime.fromisoformat(ts), kind=kind, run_id=rid,
                payload=json.loads(payload), prev_hash=prev_hash, hash=digest,
            )

    def head(self) -> tuple[int, str]:
        """(seq, hash) of the newest row, ``(0, GENESIS_HASH)`` when empty: record it elsewhere
        as an anchor for ``verify(anchor=...)``."""
        with self._lock:
            self.flush()
            return self._last()

    def verify(self, *, anchor: tuple[int, str] | None = None) -> AuditVerification:
        """Recompute the whole chain and report the first row that breaks it.

        Args:
            anchor: a (seq, hash) from an earlier :meth:`head`, kept outside this database; the
                chain must still contain exactly that row.

        Returns:
            AuditVerification with ``ok`` False, ``first_bad_seq`` and a one-line ``problem`` on
            any edited, deleted, inserted or reordered row, or a head that disagrees.
        """
        self.flush()
        warnings = [f"trigger {name} was missing when the log was opened" for name in self._missing_at_open]
        checked, prev_hash, expected_seq = 0, GENESIS_HASH, 1
        hashes: dict[int, str] = {}

        def bad(seq: int, problem: str) -> AuditVerification:
            return AuditVerification(
                ok=False, first_bad_seq=seq, problem=problem, rows_checked=checked,
                head_seq=expected_seq - 1, head_hash=prev_hash, warnings=warnings,
            )

        rows = self._db.execute("SELECT seq, ts, kind, run_id, payload, prev_hash, hash FROM audit ORDER BY seq")
        for seq, ts, kind, run_id, payload_text, stored_prev, stored_hash in rows:
            if not isinstance(seq, int) or seq != expected_seq:
                what = "missing (deleted)" if isinstance(seq, int) and seq > expected_seq else f"out of order ({seq!r})"
                return bad(expected_seq, f"row {expected_seq}: {what}; next row found is seq {seq!r}")
            if stored_prev != prev_hash:
                return bad(seq, f"row {seq}: prev_hash does not link to row {seq - 1} (row inserted, deleted or moved)")
            try:
                payload = json.loads(payload_text)
                canonical = canonical_json(payload) == payload_text
            except (TypeError, ValueError):
                canonical = False
            if not canonical or not isinstance(payload, dict):
                return bad(seq, f"row {seq}: payload is not the canonical JSON that was hashed (row edited)")
            if _row_hash(prev_hash, seq, str(ts), str(kind), run_id, payload) != stored_hash:
                return bad(seq, f"row {seq}: hash mismatch (row edited)")
            hashes[seq] = stored_hash
            prev_hash, expected_seq, checked = stored_hash, expected_seq + 1, checked + 1

        last_seq = expected_seq - 1
        head = None
        if "audit_head" in self._db.table_names():
            head = self._db.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
        if head is None:
            return bad(last_seq + 1, "audit head record is missing (deleted)")
        if (head[0], head[1]) != (last_seq, prev_hash):
            if isinstance(head[0], int) and head[0] > last_seq:
                return bad(last_seq + 1, f"rows {last_seq + 1}..{head[0]} missing at the end (head says seq {head[0]})")
            return bad(last_seq, f"audit head (seq {head[0]!r}) disagrees with the last row (seq {last_seq})")
        if anchor is not None and hashes.get(anchor[0], GENESIS_HASH if anchor[0] == 0 else None) != anchor[1]:
            return bad(anchor[0], f"row {anchor[0]}: does not match the external anchor {anchor[1][:16]}")
        return AuditVerification(
            ok=True, rows_checked=checked, head_seq=last_seq, head_hash=prev_hash, warnings=warnings
        )

    def close(self) -> None:
        """Write what is deferred and close the database connection."""
        try:
            self.flush()
        finally:
            self._db.close()

    def __del__(self) -> None:
        try:
            if self._pending:
                self.flush()
        except Exception:  # noqa: BLE001 - a finaliser cannot raise; close()/flush() report errors
            pass
