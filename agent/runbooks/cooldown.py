"""Cool-downs: "this node and condition was investigated (or this finding posted) recently".

Kept in the run store (``$WARDEN_HOME/warden.db``, table ``cooldowns``, through sqlite-utils), so a
restarted ``warden serve`` or ``warden watch`` does not investigate or post the same thing again.
Keys are claimed atomically (one ``BEGIN IMMEDIATE`` transaction reads which are cooling down and
writes the rest), so two processes or two requests racing for the same key cannot both win. Keys are Warden's own strings:
``alert:<runbook>:<alertname>:<node>`` and ``finding:<root cause>:<culprits>``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from sqlite_utils import Database

from agent.store import default_db_path

__all__ = ["Cooldowns"]


class Cooldowns:
    """Cool-down keys with an expiry (UNIX seconds), in one SQLite file shared by processes."""

    def __init__(self, path: Path | None = None) -> None:
        p = Path(path) if path else default_db_path()
        p.parent.mkdir(parents=True, exist_ok=True)
        self._db = Database(sqlite3.connect(str(p), check_same_thread=False, timeout=10))
        self._db.execute("PRAGMA busy_timeout = 10000")
        self._lock = threading.Lock()
        self._db["cooldowns"].create({"key": str, "until": float, "at": float, "note": str}, pk="key",
                                     if_not_exists=True)

    def claim(self, keys: Iterable[str], seconds: float, *, note: str = "", now: float | None = None) -> list[str]:
        """Claim each key not cooling down now, for ``seconds``; returns the keys claimed (in order).

        One write transaction (``BEGIN IMMEDIATE``) for all keys: a 1,000-node alert costs one commit.
        """
        t = time.time() if now is None else now
        wanted = list(dict.fromkeys(keys))
        with self._lock:
            conn = self._db.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                busy: set[str] = set()
                for i in range(0, len(wanted), 500):
                    chunk = wanted[i:i + 500]
                    rows = conn.execute(f"SELECT key FROM cooldowns WHERE until > ? AND key IN ({','.join('?' * len(chunk))})",
                                        [t, *chunk]).fetchall()
                    busy.update(r[0] for r in rows)
                won = [k for k in wanted if k not in busy]
                conn.executemany("INSERT OR REPLACE INTO cooldowns (key, until, at, note) VALUES (?, ?, ?, ?)",
                                 [(k, t + seconds, t, note[:200]) for k in won])
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return won

    def release(self, keys: Iterable[str]) -> None:
        """Forget ``keys`` (an investigation that failed may be retried by the next alert)."""
        with self._lock, self._db.conn:
            self._db.conn.executemany("DELETE FROM cooldowns WHERE key = ?", [(k,) for k in keys])

    def active(self, key: str, *, now: float | None = None) -> bool:
        """True while ``key`` is cooling down."""
        t = time.time() if now is None else now
        with self._lock:
            row = self._db.conn.execute("SELECT until FROM cooldowns WHERE key = ?", [key]).fetchone()
        return bool(row and row[0] > t)

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()
