"""The gateway's SQLite file: table schemas and a batching writer thread.

One file holds the usage ledger (table ``ledger``) and the response cache (table ``cache``).
The request path never writes: it enqueues rows, and one background thread inserts them in
batches with its own connection. Readers on the request path use a separate connection;
WAL mode keeps them from blocking on the writer.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
from pathlib import Path
from typing import Any

import sqlite_utils

__all__ = ["Store", "open_db"]

_log = logging.getLogger(__name__)

_LEDGER_COLUMNS: dict[str, type] = {
    "ts": float,
    "day": str,
    "request_id": str,
    "key": str,
    "team": str,
    "run_id": str,
    "model": str,
    "provider": str,
    "upstream_model": str,
    "stream": int,
    "status": int,
    "prompt_tokens": int,
    "completion_tokens": int,
    "total_tokens": int,
    "cost_usd": float,
    "latency_ms": float,
    "cache_hit": int,
    "attempts": int,
    "redactions": int,
    "error": str,
}


def open_db(path: str | Path, *, check_same_thread: bool = True) -> sqlite_utils.Database:
    """Open (creating if needed) the gateway store with WAL mode and both tables.

    Args:
        path: SQLite file path; parent directories are created.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(p), check_same_thread=check_same_thread, timeout=30.0)
    db = sqlite_utils.Database(conn)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    if "ledger" not in db.table_names():
        db["ledger"].create(_LEDGER_COLUMNS, pk=None, if_not_exists=True)
        db["ledger"].create_index(["day", "key"], if_not_exists=True)
        db["ledger"].create_index(["run_id"], if_not_exists=True)
    if "cache" not in db.table_names():
        db["cache"].create(
            {"key": str, "model": str, "response": str, "created_at": float, "expires_at": float},
            pk="key",
            if_not_exists=True,
        )
    return db


class Store:
    """The gateway's SQLite file with a background batching writer.

    Args:
        path: SQLite file path.
        flush_interval_s: Longest time a queued row waits before it is written.
    """

    def __init__(self, path: str | Path, *, flush_interval_s: float = 0.2) -> None:
        self.path = Path(path)
        self.reader = open_db(self.path, check_same_thread=False)
        self._interval = flush_interval_s
        self._queue: queue.SimpleQueue[tuple[str, dict[str, Any]] | threading.Event | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self.write_errors = 0

    def enqueue(self, table: str, row: dict[str, Any]) -> None:
        """Queue one row for ``table`` (``ledger`` appends, ``cache`` replaces by key)."""
        if self._thread is None:
            self._start()
        self._queue.put((table, row))

    def flush(self) -> None:
        """Block until every row queued before this call is written."""
        if self._thread is None:
            return
        done = threading.Event()
        self._queue.put(done)
        self._wake.set()
        done.wait()

    def close(self) -> None:
        """Write what is queued, stop the writer, and close the reader connection."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            self._wake.set()
            thread.join()
        self.reader.conn.close()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="warden-gateway-store", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        db = open_db(self.path, check_same_thread=False)
        stop = False
        while not stop:
            # Sleep instead of blocking on the queue: a put() then never has to wake this thread,
            # which keeps the request path free of GIL hand-offs.
            self._wake.wait(self._interval)
            self._wake.clear()
            batch: dict[str, list[dict[str, Any]]] = {}
            waiters: list[threading.Event] = []
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                elif isinstance(item, threading.Event):
                    waiters.append(item)
                else:
                    batch.setdefault(item[0], []).append(item[1])
            self._write(db, batch)
            for w in waiters:
                w.set()
        db.conn.close()

    def _write(self, db: sqlite_utils.Database, batch: dict[str, list[dict[str, Any]]]) -> None:
        if not batch:
            return
        try:
            with db.conn:
                for table, rows in batch.items():
                    if table == "cache":
                        db["cache"].insert_all(rows, replace=True, batch_size=500)
                    else:
                        db[table].insert_all(rows, batch_size=500)
        except sqlite3.Error:
            self.write_errors += 1
            _log.exception("gateway store: could not write %d rows to %s", sum(map(len, batch.values())), self.path)
