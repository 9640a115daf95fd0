"""Spend counters shared by every gateway process on one store: daily budgets and per-run caps.

Table ``quota`` in the gateway's SQLite file, one row per (scope, period)::

    scope    key:alice | team:ml | run:r-42
    period   a UTC day (YYYY-MM-DD) for daily budgets, "run" for run caps
    tokens   tokens reserved or spent (prompt + completion)
    cost_usd USD reserved or spent

A request *reserves* its estimate before the upstream call and *settles* to what it really used
after, each in one ``BEGIN IMMEDIATE`` transaction: check-and-add cannot interleave with another
request, another app on the same file, or another ``warden`` process. So N concurrent requests can
never together spend more than a budget allows (up to the error of the prompt-size estimate).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

__all__ = ["QuotaRow", "QuotaStore"]

T = TypeVar("T")

_SCHEMA = """create table if not exists quota (
    scope text not null, period text not null, tokens integer not null default 0,
    cost_usd real not null default 0, primary key (scope, period))"""


@dataclass(frozen=True)
class QuotaRow:
    """One counter: whose (``scope``) and which window (``period``)."""

    scope: str
    period: str


class QuotaStore:
    """The ``quota`` table on its own connection (autocommit; transactions are explicit).

    Args:
        path: The gateway's SQLite file (created if missing).
        seed: Called with the connection once, when the table is first created, to fill it from
            the ledger (spend recorded before quotas existed).
    """

    def __init__(self, path: str | Path, *, seed: Callable[[sqlite3.Connection], None] | None = None) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()  # one connection, possibly used from several threads
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            # as the ledger on the same file (gateway.store): no fsync per commit (four per run of the
            # built-in model); WAL commits stay atomic and survive a crashed process, and only a power
            # loss can drop the last ones, of the ledger and the counters alike
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA busy_timeout=30000")
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                fresh = not self._conn.execute(
                    "select 1 from sqlite_master where type='table' and name='quota'").fetchone()
                self._conn.execute(_SCHEMA)
                if fresh and seed is not None:
                    seed(self._conn)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def transaction(self, fn: Callable[[Callable[[QuotaRow], tuple[int, float]]], T],
                    adds: Callable[[T], Sequence[tuple[QuotaRow, int, float]]]) -> T:
        """Read counters, decide, and add to them atomically.

        ``fn(used)`` is called inside the transaction with ``used(row) -> (tokens, cost_usd)`` and
        may raise to refuse (nothing is written); ``adds(result)`` then names what to add to which rows.

        Returns:
            What ``fn`` returned.
        """
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self._used)
                self._add(adds(result))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return result

    def add(self, rows: Sequence[tuple[QuotaRow, int, float]]) -> None:
        """Add (possibly negative) tokens and cost to rows in one transaction."""
        if not rows:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._add(rows)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def used(self, row: QuotaRow) -> tuple[int, float]:
        """Current (tokens, cost_usd) of a counter; (0, 0.0) when it has none."""
        with self._lock:
            return self._used(row)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def _used(self, row: QuotaRow) -> tuple[int, float]:
        got = self._conn.execute("select tokens, cost_usd from quota where scope = ? and period = ?",
                                 (row.scope, row.period)).fetchone()
        return (int(got[0]), float(got[1])) if got else (0, 0.0)

    def _add(self, rows: Sequence[tuple[QuotaRow, int, float]]) -> None:
        self._conn.executemany(
            "insert into quota (scope, period, tokens, cost_usd) values (?, ?, ?, ?) on conflict (scope, period) "
            "do update set tokens = tokens + excluded.tokens, cost_usd = cost_usd + excluded.cost_usd",
            [(r.scope, r.period, int(t), float(c)) for r, t, c in rows])
