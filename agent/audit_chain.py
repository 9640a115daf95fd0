"""The audit log's keyed hash chain and its SQLite schema (used by agent/audit.py).

Every hash is an HMAC-SHA256 with the audit key (``$WARDEN_HOME/audit.key``, mode 0600, or the
secret ``audit_key_env`` names), so someone who can write ``audit.db`` but cannot read the key
cannot recompute the chain after editing, inserting or deleting a row::

    genesis    HMAC(key, "warden-audit genesis <log_id>")            prev_hash of row 1
    row n      HMAC(key, prev_hash + canonical JSON of {seq, ts, kind, run_id, payload})
    head       HMAC(key, "warden-audit head <log_id> <seq> <hash>")  audit_head.mac
    meta       HMAC(key, "warden-audit meta <log_id> <created_at> <chain>")   audit_meta.mac

``log_id`` (random, in ``audit_meta``) names one log: an anchor exported by ``warden audit anchor``
carries it, so a log that was deleted and made again is told apart from the one anchored.
"""

from __future__ import annotations

import hmac
import json

__all__ = ["CHAIN", "ChainKey", "canonical_json", "SCHEMA", "TRIGGERS", "LEGACY_GENESIS"]

CHAIN = "hmac-sha256-v1"
"""The chain's algorithm, recorded in audit_meta."""

LEGACY_GENESIS = "0" * 64
"""prev_hash of row 1 in the unkeyed (plain SHA-256) chains Warden wrote before keyed chains."""

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY, ts TEXT NOT NULL, kind TEXT NOT NULL, "
    "run_id TEXT, payload TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS audit_head (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL, "
    "mac TEXT)",
    "CREATE TABLE IF NOT EXISTS audit_meta (id INTEGER PRIMARY KEY, log_id TEXT NOT NULL, created_at TEXT NOT NULL, "
    "chain TEXT NOT NULL, mac TEXT NOT NULL)",
)

TRIGGERS = {
    "audit_no_update": "CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit "
    "BEGIN SELECT RAISE(ABORT, 'audit log is append-only: UPDATE refused'); END",
    "audit_no_delete": "CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit "
    "BEGIN SELECT RAISE(ABORT, 'audit log is append-only: DELETE refused'); END",
    "audit_insert_in_chain": "CREATE TRIGGER IF NOT EXISTS audit_insert_in_chain BEFORE INSERT ON audit "
    "WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), 0) + 1 FROM audit) "
    "OR NEW.prev_hash IS NOT COALESCE((SELECT hash FROM audit ORDER BY seq DESC LIMIT 1), "
    "(SELECT hash FROM audit_head WHERE id = 1 AND seq = 0)) "
    "BEGIN SELECT RAISE(ABORT, 'audit log: row does not extend the chain'); END",
    "audit_head_advance_only": "CREATE TRIGGER IF NOT EXISTS audit_head_advance_only BEFORE UPDATE ON audit_head "
    "WHEN NEW.id IS NOT OLD.id OR NEW.seq IS NOT OLD.seq + 1 "
    "OR NEW.hash IS NOT (SELECT hash FROM audit WHERE seq = NEW.seq) "
    "BEGIN SELECT RAISE(ABORT, 'audit head may only advance to the newest row'); END",
    "audit_head_no_delete": "CREATE TRIGGER IF NOT EXISTS audit_head_no_delete BEFORE DELETE ON audit_head "
    "BEGIN SELECT RAISE(ABORT, 'audit head cannot be deleted'); END",
    "audit_meta_no_update": "CREATE TRIGGER IF NOT EXISTS audit_meta_no_update BEFORE UPDATE ON audit_meta "
    "BEGIN SELECT RAISE(ABORT, 'audit meta cannot be changed'); END",
    "audit_meta_no_delete": "CREATE TRIGGER IF NOT EXISTS audit_meta_no_delete BEFORE DELETE ON audit_meta "
    "BEGIN SELECT RAISE(ABORT, 'audit meta cannot be deleted'); END",
}
"""Defence in depth only: verify() reads the data and never relies on them."""


def canonical_json(value: object) -> str:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept, NaN/Infinity refused.

    Raises:
        ValueError: the value holds NaN or Infinity. TypeError: it is not JSON data.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class ChainKey:
    """The HMACs of one audit key (a prepared HMAC state, copied per digest: no re-keying per row).

    Args:
        key: the secret (at least 16 bytes).
    """

    def __init__(self, key: bytes) -> None:
        self._base = hmac.new(key, digestmod="sha256")

    def _mac(self, text: str) -> str:
        m = self._base.copy()
        m.update(text.encode("utf-8"))
        return m.hexdigest()

    def genesis(self, log_id: str) -> str:
        """prev_hash of row 1 of log ``log_id`` (64 hex)."""
        return self._mac(f"warden-audit genesis {log_id}")

    def row(self, prev_hash: str, seq: int, ts: str, kind: str, run_id: str | None, payload_text: str) -> str:
        """The hash of one row whose payload is already canonical JSON (the bytes stored)."""
        body = (f'{{"kind":{canonical_json(kind)},"payload":{payload_text},"run_id":{canonical_json(run_id)},'
                f'"seq":{seq},"ts":{canonical_json(ts)}}}')
        return self._mac(prev_hash + body)

    def head(self, log_id: str, seq: int, digest: str) -> str:
        """The MAC of the head record (seq and hash of the newest row)."""
        return self._mac(f"warden-audit head {log_id} {seq} {digest}")

    def meta(self, log_id: str, created_at: str, chain: str) -> str:
        """The MAC of the meta record."""
        return self._mac(f"warden-audit meta {log_id} {created_at} {chain}")

    @staticmethod
    def equal(a: object, b: str) -> bool:
        """Constant-time comparison of a stored value with a computed MAC."""
        return isinstance(a, str) and hmac.compare_digest(a, b)
