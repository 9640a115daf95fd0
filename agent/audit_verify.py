"""Verifying an audit log: the keyed chain row by row, the head and meta records, the log's age
against its key, and the last exported anchor (agent/audit.py describes the chain).

Each kind of tampering is reported as what it is, with the first bad row:

    row edited                   a row's hash is not the HMAC of its contents
    row inserted/deleted/moved   a seq gap, or a prev_hash that does not link
    rows deleted at the end      the head (or the anchor) names a later row than the last one
    log emptied                  no rows, but the anchor says the log had some
    head rewritten               the head's MAC does not verify
    log recreated                the anchor names another log id, or the log is younger than its key
    unkeyed / meta gone          no audit_meta record (a pre-HMAC log, or one rebuilt without the key)
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from sqlite_utils import Database

from agent.audit import AuditAnchor, AuditVerification
from agent.audit_chain import CHAIN, LEGACY_GENESIS, ChainKey, canonical_json

__all__ = ["verify_log", "KEY_AGE_SLACK_S"]

KEY_AGE_SLACK_S = 60.0
"""A log is made with its key; one created this much later than its key file was made again."""


class _Bad(Exception):
    def __init__(self, seq: int, problem: str) -> None:
        self.seq, self.problem = seq, problem


def _meta(db: Database, chain: ChainKey, key_file: Path | None) -> tuple[str, str]:
    """(log_id, created_at), after checking the meta record's MAC and the log's age against its key."""
    row = None
    if "audit" not in db.table_names():
        raise _Bad(1, "the file holds no audit table: the log was replaced or emptied")
    if "audit_meta" in db.table_names():
        row = db.execute("SELECT log_id, created_at, chain, mac FROM audit_meta WHERE id = 1").fetchone()
    if row is None:
        first = db.execute("SELECT prev_hash FROM audit WHERE seq = 1").fetchone()
        if first and first[0] == LEGACY_GENESIS:
            raise _Bad(1, "the chain is not keyed (no audit_meta; row 1 starts an unkeyed SHA-256 chain): written "
                          "by a Warden before keyed chains, or rewritten by someone without the key; move it aside")
        raise _Bad(1, "audit_meta is missing (deleted): the log's id and key binding are gone")
    log_id, created, alg, mac = row
    if alg != CHAIN or not chain.equal(mac, chain.meta(str(log_id), str(created), str(alg))):
        raise _Bad(1, "audit_meta's MAC does not verify: the log was rebuilt or edited without the key, "
                      "or this is not the audit key it was written with")
    if key_file is not None:
        try:
            key_made = os.stat(key_file).st_mtime
            made = datetime.fromisoformat(str(created)).timestamp()
        except (OSError, ValueError):
            key_made = made = 0.0
        if made - key_made > KEY_AGE_SLACK_S:
            when = datetime.fromtimestamp(key_made, timezone.utc).isoformat(timespec="seconds")
            raise _Bad(1, f"the log was recreated: it was made at {created}, after its key {key_file.name} "
                          f"({when}); the earlier log was deleted (move the key aside with a log on purpose)")
    return str(log_id), str(created)


def _head_row(db: Database) -> tuple[object, object, object]:
    """(seq, hash, mac) of the head record, read before the rows: a writer may append while the
    rows are walked, and the head it leaves then names a later row than the walk saw last."""
    head = None
    if "audit_head" in db.table_names():
        cols = db["audit_head"].columns_dict
        head = db.execute(f"SELECT seq, hash, {'mac' if 'mac' in cols else 'NULL'} FROM audit_head WHERE id = 1").fetchone()
    if head is None:
        raise _Bad(1, "audit head record is missing (deleted)")
    return tuple(head)  # type: ignore[return-value]


def _chain(db: Database, chain: ChainKey, genesis: str, marks: set[int]) -> tuple[int, str, dict[int, str]]:
    """Walk every row; (last seq, last hash, the hash of each row in ``marks`` that was seen; seq 0
    is the genesis)."""
    prev_hash, expected_seq = genesis, 1
    seen = {0: genesis} if 0 in marks else {}
    rows = db.execute("SELECT seq, ts, kind, run_id, payload, prev_hash, hash FROM audit ORDER BY seq")
    for seq, ts, kind, run_id, payload_text, stored_prev, stored_hash in rows:
        if not isinstance(seq, int) or seq != expected_seq:
            what = "missing (deleted)" if isinstance(seq, int) and seq > expected_seq else f"out of order ({seq!r})"
            raise _Bad(expected_seq, f"row {expected_seq}: {what}; next row found is seq {seq!r}")
        if stored_prev != prev_hash:
            raise _Bad(seq, f"row {seq}: prev_hash does not link to row {seq - 1} (row inserted, deleted or moved)")
        try:
            payload = json.loads(payload_text)
            canonical = isinstance(payload, dict) and canonical_json(payload) == payload_text
        except (TypeError, ValueError):
            canonical = False
        if not canonical:
            raise _Bad(seq, f"row {seq}: payload is not the canonical JSON that was hashed (row edited)")
        if not chain.equal(stored_hash, chain.row(prev_hash, seq, str(ts), str(kind), run_id, payload_text)):
            raise _Bad(seq, f"row {seq}: hash mismatch (row edited, or later hashes recomputed without the key)")
        if seq in marks:
            seen[seq] = stored_hash
        prev_hash, expected_seq = stored_hash, expected_seq + 1
    return expected_seq - 1, prev_hash, seen


def _head(head: tuple[object, object, object], chain: ChainKey, log_id: str, last_seq: int,
          seen: dict[int, str]) -> None:
    """The head (read before the walk) names a row the walk saw, with that row's hash and a valid MAC.
    Rows after it were appended while the rows were read (they are chained like the rest)."""
    seq, digest, mac = head
    if not isinstance(seq, int) or seq < 0:
        raise _Bad(last_seq, f"audit head (seq {seq!r}) is not a row number")
    if seq > last_seq:
        raise _Bad(last_seq + 1, f"rows {last_seq + 1}..{seq} missing at the end (head says seq {seq})")
    if seen.get(seq) != digest:
        raise _Bad(seq, f"audit head (seq {seq}) disagrees with row {seq} (hash {str(digest)[:16]}...)")
    if not chain.equal(mac, chain.head(log_id, seq, str(digest))):
        raise _Bad(seq + 1, f"audit head's MAC does not verify: the head was rewritten (rows after seq "
                            f"{seq} deleted?)")


def _against(anchor: AuditAnchor, log_id: str, last_seq: int, at_anchor: str | None) -> None:
    src = anchor.source or "the anchor"
    when = f" at {anchor.at.isoformat(timespec='seconds')}" if anchor.at else ""
    said = f"{src} (seq {anchor.seq}{when})"
    if anchor.log_id is not None and anchor.log_id != log_id:
        raise _Bad(1, f"audit.db was recreated: it is log {log_id[:12]}, but {said} names log {anchor.log_id[:12]}")
    if anchor.seq > last_seq:
        if last_seq == 0:
            raise _Bad(1, f"the log is empty, but {said} says it held {anchor.seq} rows (emptied)")
        raise _Bad(last_seq + 1, f"rows {last_seq + 1}..{anchor.seq} missing at the end: {said} says the log "
                                 f"reached seq {anchor.seq} (truncated)")
    if at_anchor is None or not ChainKey.equal(at_anchor, anchor.hash):
        raise _Bad(anchor.seq, f"row {anchor.seq}: does not match {said}: hash {anchor.hash[:16]}... (log rewritten)")


def verify_log(db: Database, chain: ChainKey, *, anchor: AuditAnchor | None, key_file: Path | None,
               missing_triggers: list[str]) -> AuditVerification:
    """Verify the audit tables in ``db`` with ``chain``'s key (see the module docstring).

    Args:
        anchor: the last exported head, or None (then only what the data shows is checked).
        key_file: the key file the chain's key came from (None: a configured secret), for the age check.
        missing_triggers: triggers that were gone when the log was opened (reported as warnings).
    """
    warnings = [f"trigger {name} was missing when the log was opened" for name in missing_triggers]
    checked, last_seq, last_hash, log_id = 0, 0, "", None
    try:
        log_id, _ = _meta(db, chain, key_file)
        head = _head_row(db)
        marks = {head[0]} | ({anchor.seq} if anchor is not None else set())
        last_seq, last_hash, seen = _chain(db, chain, chain.genesis(log_id), marks)  # type: ignore[arg-type]
        checked = last_seq
        _head(head, chain, log_id, last_seq, seen)
        if anchor is not None:
            _against(anchor, log_id, last_seq, seen.get(anchor.seq))
    except _Bad as bad:
        return AuditVerification(ok=False, first_bad_seq=bad.seq, problem=bad.problem, rows_checked=checked,
                                 head_seq=last_seq, head_hash=last_hash, log_id=log_id, anchor=anchor,
                                 warnings=warnings)
    return AuditVerification(ok=True, rows_checked=checked, head_seq=last_seq, head_hash=last_hash, log_id=log_id,
                             anchor=anchor, warnings=warnings)
