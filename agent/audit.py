"""The audit store: an append-only, HMAC-chained table in SQLite (through sqlite-utils).

Every tool call, finding, policy decision, approval and execution is appended here before it
takes effect (DESIGN.md, safety invariant 5). Row ``n`` stores::

    seq        1, 2, 3, ... (no gaps)
    ts         UTC time, ISO 8601 with microseconds
    kind       AuditKind, e.g. "policy_decision"
    run_id     the agent run, or NULL
    payload    canonical JSON (sorted keys, no spaces, UTF-8)
    prev_hash  hash of row n-1 (the log's genesis hash for row 1)
    hash       HMAC-SHA256(audit key, prev_hash + canonical JSON of {seq, ts, kind, run_id, payload})

The key (agent/audit_chain.py) is ``audit.key`` beside the database (mode 0600, made with the log)
or a configured secret, so an edited row cannot be given a hash that verifies, nor can every
later hash be recomputed. ``audit_head`` holds the newest seq and hash with a MAC (deleting rows at
the end and rewriting the head is detected), ``audit_meta`` the log's random id and creation time.
What data alone cannot show — the whole file deleted, emptied and rebuilt, or put back from an
old copy — an *anchor* shows: ``warden audit anchor`` exports the head (seq, hash, log id) to a
place the writer cannot rewrite (agent/audit_anchor.py) and ``warden audit verify`` checks the
log against the last one (:func:`agent.audit_verify.verify_log`).

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
import json
import secrets
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, get_args

from pydantic import JsonValue
from sqlite_utils import Database

from agent.audit_chain import CHAIN, SCHEMA, TRIGGERS, ChainKey, canonical_json
from agent.audit_models import AuditAnchor, AuditRecord, AuditVerification
from agent.keys import load_key_file
from tools.errors import WardenError

__all__ = [
    "AuditKind",
    "AuditRecord",
    "AuditVerification",
    "AuditAnchor",
    "AuditLog",
    "AuditIntegrityError",
    "AuditStoreError",
    "canonical_json",
    "audit_key_path",
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

DEFERRED_KINDS = frozenset({"run_start", "tool_call", "tool_result", "finding", "diagnosis", "limit"})
"""Kinds that record what was read or concluded: written with the next record that takes effect."""


class AuditIntegrityError(WardenError):
    """The audit log cannot be appended to because its integrity records are damaged."""


class AuditStoreError(WardenError):
    """The audit database cannot be opened (not SQLite, unreadable): one line naming the file."""


def audit_key_path(db_path: Path | str) -> Path:
    """The key file of the log at ``db_path``: ``audit.key`` in the same directory."""
    return Path(db_path).with_name("audit.key")


def _flush_at_exit(ref: weakref.ref[AuditLog]) -> None:
    log = ref()
    if log is not None:
        log.flush()


class AuditLog:
    """The HMAC-chained audit table in a SQLite file (created, with its key, if missing).

    Args:
        db_path: SQLite file; it may be shared with other stores and other processes.
        key: the chain's secret; None reads (or creates, mode 0600) ``audit.key`` beside ``db_path``.
        clock: returns the current UTC time; tests may pass a fixed one.
        create: make the log (and its key) when missing; False opens only what exists, as
            ``warden audit verify`` does (a file without the audit tables is then reported by verify).

    Raises:
        AuditStoreError: the file is not a SQLite database, or is absent with ``create=False`` (names it).
        agent.keys.KeyFileError: the key file is readable by others, cannot be made, or (``create=False``) is absent.
    """

    def __init__(self, db_path: Path | str, *, key: bytes | None = None,
                 clock: Callable[[], datetime] | None = None, create: bool = True) -> None:
        self.path = Path(db_path)
        if not create and not self.path.is_file():
            raise AuditStoreError(f"{db_path}: no audit log")
        self.key_file: Path | None = None if key is not None else audit_key_path(db_path)
        self._chain = ChainKey(key if key is not None else
                               load_key_file(audit_key_path(db_path), what="audit key", create=create))
        self._create = create
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        # One connection shared by the threads pydantic-ai runs sync tools in; _lock serialises it.
        self._db = Database(sqlite3.connect(str(db_path), check_same_thread=False))
        self._lock = threading.RLock()
        try:
            self._open()
        except sqlite3.OperationalError as e:
            self._db.close()
            if "locked" in str(e) or "busy" in str(e):  # another writer held it past busy_timeout: not damage
                raise AuditStoreError(f"{db_path}: the audit database stayed locked by another writer for 5 s; "
                                      "try again") from None
            raise AuditStoreError(f"{db_path}: not a usable audit database ({' '.join(str(e).split())}); "
                                  "move it aside and run `warden audit verify` on the copy") from None
        except sqlite3.DatabaseError as e:
            self._db.close()
            raise AuditStoreError(f"{db_path}: not a usable audit database ({' '.join(str(e).split())}); "
                                  "move it aside and run `warden audit verify` on the copy") from None
        self._pending: list[tuple[str, str, str, str | None]] = []
        """Deferred records: (kind, canonical payload, ts, run_id)."""
        self._tail: tuple[int, str] | None = None
        """(seq, hash) the pending records were numbered from, plus their own."""
        atexit.register(_flush_at_exit, weakref.ref(self))

    def _open(self) -> None:
        """Create what is missing (in one transaction, safe against a second process doing the same).
        A complete log is only read: opening it takes no write lock from the processes writing to it."""
        conn = self._db.conn
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("BEGIN")
        try:
            names = {(t, n) for t, n in conn.execute("SELECT type, name FROM sqlite_master")}
        finally:
            conn.execute("COMMIT")
        if {("table", t) for t in ("audit", "audit_head", "audit_meta")} | {("trigger", t) for t in TRIGGERS} <= names:
            self._missing_at_open = []
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = set(self._db.table_names())
            present = set(self._db.triggers_dict)
            self._missing_at_open = sorted(set(TRIGGERS) - present) if "audit" in tables else []
            if "audit" not in tables and self._create:  # a new log: its id, its genesis and its head, made together
                for sql in SCHEMA:
                    conn.execute(sql)
                log_id = secrets.token_hex(16)
                # Wall time, not the clock rows are stamped with: verify compares it with the key file's age.
                created = datetime.now(timezone.utc).isoformat(timespec="microseconds")
                conn.execute("INSERT INTO audit_meta (id, log_id, created_at, chain, mac) VALUES (1, ?, ?, ?, ?)",
                             [log_id, created, CHAIN, self._chain.meta(log_id, created, CHAIN)])
                genesis = self._chain.genesis(log_id)
                conn.execute("INSERT INTO audit_head (id, seq, hash, mac) VALUES (1, 0, ?, ?)",
                             [genesis, self._chain.head(log_id, 0, genesis)])
                tables |= {"audit", "audit_head", "audit_meta"}
            if {"audit_head", "audit_meta"} <= tables:
                # A log that lost either is never given new ones silently: verify() reports it.
                for sql in TRIGGERS.values():
                    conn.execute(sql)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _meta(self) -> tuple[str, str, str, str] | None:
        """(log_id, created_at, chain, mac) of the meta record, or None when it is gone."""
        if "audit_meta" not in self._db.table_names():
            return None
        row = self._db.execute("SELECT log_id, created_at, chain, mac FROM audit_meta WHERE id = 1").fetchone()
        return tuple(row) if row else None  # type: ignore[return-value]

    def _log_id(self) -> str:
        """The log's id after checking its meta record; raises AuditIntegrityError when it is damaged."""
        meta = self._meta()
        if meta is None:
            raise AuditIntegrityError(f"{self.path}: no keyed-chain record (audit_meta): written by a Warden before "
                                      "keyed chains, or tampered with; run `warden audit verify`, then move it aside")
        if not self._chain.equal(meta[3], self._chain.meta(meta[0], meta[1], meta[2])):
            raise AuditIntegrityError(f"{self.path}: audit_meta's MAC does not verify (edited, or another audit key); "
                                      "run `warden audit verify`")
        return meta[0]

    def _last(self) -> tuple[int, str] | None:
        row = self._db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def append(self, kind: AuditKind, payload: dict[str, JsonValue], run_id: str | None = None) -> AuditRecord:
        """Append one record and return it; atomic, safe with several writer processes.

        Args:
            kind: what happened (``tool_call``, ``finding``, ``policy_decision``, ``approval``,
                ``execution``, ``diagnosis``, ...).
            payload: JSON data describing it (use ``model_dump(mode="json")`` for models).
            run_id: the agent run it belongs to, if any.

        Raises:
            ValueError: unknown kind, or a payload that is not JSON data (NaN, sets, objects).
            AuditIntegrityError: the head or meta record is gone or fails its MAC (tampering).
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
            conn = self._db.conn
            conn.execute("BEGIN")  # one read transaction: another writer cannot commit between the reads
            try:
                self._tail = self._checked_tail()[1:]
            finally:
                conn.execute("COMMIT")
        seq, prev_hash = self._tail[0] + 1, self._tail[1]
        digest = self._chain.row(prev_hash, seq, ts, kind, run_id, payload_text)
        self._pending.append((kind, payload_text, ts, run_id))
        self._tail = (seq, digest)
        return AuditRecord(seq=seq, ts=datetime.fromisoformat(ts), kind=kind, run_id=run_id,
                           payload=json.loads(payload_text), prev_hash=prev_hash, hash=digest)

    def _checked_tail(self) -> tuple[str, int, str]:
        """(log id, seq, hash) of the last row (seq 0 and the genesis hash when empty), after checking
        the meta record and that the head agrees with the last row and carries a valid MAC."""
        log_id = self._log_id()
        head = self._db.execute("SELECT seq, hash, mac FROM audit_head WHERE id = 1").fetchone() \
            if "audit_head" in self._db.table_names() else None
        if head is None:
            raise AuditIntegrityError("audit head record is missing; run `warden audit verify` and repair the log")
        last = self._last() or (0, self._chain.genesis(log_id))
        if (head[0], head[1]) != last:
            raise AuditIntegrityError("audit head disagrees with the last row; run `warden audit verify`")
        if not self._chain.equal(head[2], self._chain.head(log_id, head[0], head[1])):
            raise AuditIntegrityError("audit head's MAC does not verify; run `warden audit verify`")
        return log_id, last[0], last[1]

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
            log_id, seq, prev_hash = self._checked_tail()
            values = []
            for kind, payload_text, ts, run_id in rows:
                seq += 1
                digest = self._chain.row(prev_hash, seq, ts, kind, run_id, payload_text)
                values.append((seq, ts, kind, run_id, payload_text, prev_hash, digest))
                prev_hash = digest
            conn.executemany(
                "INSERT INTO audit (seq, ts, kind, run_id, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
                values)
            moved = 0
            for v in values[:-1]:  # the head's trigger lets it advance one row at a time
                moved += conn.execute("UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1", [v[0], v[6]]).rowcount
            last = values[-1]
            moved += conn.execute("UPDATE audit_head SET seq = ?, hash = ?, mac = ? WHERE id = 1",
                                  [last[0], last[6], self._chain.head(log_id, last[0], last[6])]).rowcount
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
        """(seq, hash) of the newest row (seq 0 and the genesis hash when empty): export it as an
        anchor (``warden audit anchor``) and check it with ``verify(anchor=...)``.

        Raises:
            AuditIntegrityError: the meta record is gone or fails its MAC.
        """
        with self._lock:
            self.flush()
            return self._last() or (0, self._chain.genesis(self._log_id()))

    def log_id(self) -> str:
        """This log's random id (in every anchor; a recreated log has another).

        Raises:
            AuditIntegrityError: the meta record is gone or fails its MAC.
        """
        return self._log_id()

    def verify(self, *, anchor: AuditAnchor | tuple[int, str] | None = None) -> AuditVerification:
        """Recompute the whole chain and report the first row that breaks it.

        Args:
            anchor: a head exported earlier (agent/audit_anchor.py) or a ``(seq, hash)``, kept
                outside this database; the chain must still contain exactly that row, and be the
                log the anchor names.

        Returns:
            AuditVerification with ``ok`` False, ``first_bad_seq`` and a one-line ``problem`` on
            any edited, deleted, inserted or reordered row, a head or meta record that is missing or
            fails its MAC, a log younger than its key, or a log the anchor does not match.
        """
        from agent.audit_verify import verify_log

        with self._lock:
            self.flush()
            if isinstance(anchor, tuple):
                anchor = AuditAnchor(seq=anchor[0], hash=anchor[1])
            return verify_log(self._db, self._chain, anchor=anchor, key_file=self.key_file,
                              missing_triggers=self._missing_at_open)

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
