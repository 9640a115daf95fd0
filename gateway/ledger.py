"""The usage ledger: one SQLite row per request, written off the request path.

Columns (table ``ledger``): ts (Unix s), day (UTC ``YYYY-MM-DD``), request_id, key, team,
run_id, model (requested alias), provider, upstream_model, stream (0/1), status (HTTP),
prompt_tokens, completion_tokens, total_tokens, cost_usd (from the price table), latency_ms,
cache_hit (0/1), attempts (provider attempts made), redactions (matches redacted), error.

A failed request's row names the provider last tried and the attempts made, the one a deadline
cancelled included; a request refused before any provider was tried (budget, rate limit, unknown
model, bad body) has provider NULL and attempts 0.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from gateway.budgets import utc_day
from gateway.config import Price
from gateway.store import Store

__all__ = ["Ledger", "LedgerEntry", "price_usd"]


def price_usd(prices: dict[str, Price], model: str | None, prompt_tokens: int, completion_tokens: int) -> float:
    """Cost of a call in USD from the per-million-token price table; unknown models cost 0."""
    price = prices.get(model or "")
    if price is None:
        return 0.0
    return (prompt_tokens * price.input_usd_per_mtok + completion_tokens * price.output_usd_per_mtok) / 1e6


@dataclass
class LedgerEntry:
    """What the request path knows about one finished request."""

    request_id: str
    key: str
    team: str | None
    run_id: str | None
    model: str
    provider: str | None = None
    upstream_model: str | None = None
    stream: bool = False
    status: int = 200
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    cache_hit: bool = False
    attempts: int = 0
    redactions: int = 0
    error: str | None = None


class Ledger:
    """Queues ledger rows on the store's batching writer.

    Args:
        store: The gateway store; ``store.flush()`` makes queued rows visible.
    """

    def __init__(self, store: Store) -> None:
        self._store = store

    def record(self, entry: LedgerEntry) -> None:
        """Queue one row; returns at once."""
        now = time.time()
        row: dict[str, Any] = {
            "ts": now,
            "day": utc_day(now),
            "request_id": entry.request_id,
            "key": entry.key,
            "team": entry.team,
            "run_id": entry.run_id,
            "model": entry.model,
            "provider": entry.provider,
            "upstream_model": entry.upstream_model,
            "stream": int(entry.stream),
            "status": entry.status,
            "prompt_tokens": entry.prompt_tokens,
            "completion_tokens": entry.completion_tokens,
            "total_tokens": entry.prompt_tokens + entry.completion_tokens,
            "cost_usd": entry.cost_usd,
            "latency_ms": round(entry.latency_ms, 3),
            "cache_hit": int(entry.cache_hit),
            "attempts": entry.attempts,
            "redactions": entry.redactions,
            "error": entry.error,
        }
        self._store.enqueue("ledger", row)

    def flush(self) -> None:
        """Block until every queued row is written."""
        self._store.flush()
