"""Summaries of the usage ledger, for ``warden gateway usage``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from gateway.errors import ConfigError
from gateway.store import open_db

__all__ = ["GROUP_FIELDS", "UsageRow", "summarize_usage"]

GROUP_FIELDS = ("key", "team", "model", "day", "provider", "run_id")
"""Ledger columns a summary may group by."""


class UsageRow(BaseModel):
    """One group of ledger rows. Group fields not grouped by are None."""

    key: str | None = None
    team: str | None = None
    model: str | None = None
    day: str | None = None
    """UTC day, ``YYYY-MM-DD``."""
    provider: str | None = None
    run_id: str | None = None
    requests: int
    errors: int
    """Requests that ended with an HTTP status >= 400."""
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost_usd: float
    avg_latency_ms: float
    """Mean latency the gateway measured (ms), cache hits included."""


def summarize_usage(
    store_path: str | Path, by: Sequence[str] = ("key", "team", "model", "day"), *, day: str | None = None
) -> list[UsageRow]:
    """Sum the ledger by the given columns, largest cost first.

    Args:
        store_path: The gateway's SQLite file.
        by: Columns from ``GROUP_FIELDS`` to group by; empty sums everything.
        day: Only this UTC day (``YYYY-MM-DD``), if given.

    Raises:
        ConfigError: when ``by`` names a column not in ``GROUP_FIELDS``.
    """
    bad = [b for b in by if b not in GROUP_FIELDS]
    if bad:
        raise ConfigError(f"cannot group usage by {bad}; choose from {list(GROUP_FIELDS)}")
    cols = ", ".join(by)
    select = (cols + ", ") if by else ""
    group = f" group by {cols}" if by else ""
    where, params = (" where day = ?", [day]) if day else ("", [])
    db = open_db(store_path)
    try:
        rows = db.execute(
            f"select {select}count(*), sum(status >= 400), sum(cache_hit), sum(prompt_tokens),"
            f" sum(completion_tokens), sum(total_tokens), sum(cost_usd), avg(latency_ms)"
            f" from ledger{where}{group} order by sum(cost_usd) desc, count(*) desc",
            params,
        ).fetchall()
    finally:
        db.conn.close()
    out = []
    for row in rows:
        groups = dict(zip(by, row[: len(by)], strict=True))
        n, errors, hits, pt, ct, tt, cost, lat = row[len(by):]
        if n == 0:
            continue
        out.append(
            UsageRow(
                **groups,
                requests=n,
                errors=errors or 0,
                cache_hits=hits or 0,
                prompt_tokens=pt or 0,
                completion_tokens=ct or 0,
                total_tokens=tt or 0,
                cost_usd=round(cost or 0.0, 6),
                avg_latency_ms=round(lat or 0.0, 3),
            )
        )
    return out
