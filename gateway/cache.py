"""Exact-match response cache: an in-memory LRU in front of the SQLite ``cache`` table.

The key is the SHA-256 of the canonical JSON of the request without transport-only fields
(``stream``, ``stream_options``, ``user``, ``metadata``, ``store``), so it covers model,
messages, tools, tool_choice and every sampling parameter. Only deterministic requests
(temperature 0, one choice) are cached unless the config or the ``X-Warden-Cache: force``
header asks otherwise; ``X-Warden-Cache: off`` bypasses the cache. Non-streamed answers fill
the cache; streamed requests are served from it (re-chunked) but do not fill it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from typing import Any

from gateway.config import CacheConfig
from gateway.store import Store

__all__ = ["ResponseCache", "cache_key"]

_IGNORED = frozenset({"stream", "stream_options", "user", "metadata", "store"})


def cache_key(request: dict[str, Any]) -> str:
    """SHA-256 hex of the request's semantic fields (everything but transport-only ones)."""
    semantic = {k: v for k, v in request.items() if k not in _IGNORED}
    blob = json.dumps(semantic, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """Looks up and stores full ``chat.completion`` responses.

    Args:
        config: TTL, memory size and the non-deterministic switch.
        store: The gateway store (reads on its reader connection, writes queued).
    """

    def __init__(self, config: CacheConfig, store: Store) -> None:
        self.config = config
        self._store = store
        self._memory: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()

    def wanted(self, request: dict[str, Any], header: str | None) -> bool:
        """Whether this request may be served from or stored in the cache.

        Args:
            request: The chat-completions body.
            header: Value of ``X-Warden-Cache`` (``off`` | ``force``) or None.
        """
        if header == "off" or not self.config.enabled:
            return False
        if header == "force" or self.config.cache_nondeterministic:
            return True
        return request.get("temperature") == 0 and request.get("n", 1) == 1

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached response for ``key`` if present and not expired, else None."""
        now = time.time()
        hit = self._memory.get(key)
        if hit is not None:
            if hit[0] > now:
                self._memory.move_to_end(key)
                return hit[1]
            del self._memory[key]
            return None
        row = self._store.reader.execute(
            "select response, expires_at from cache where key = ?", [key]
        ).fetchone()
        if row is None or row[1] <= now:
            return None
        response = json.loads(row[0])
        self._remember(key, row[1], response)
        return response

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        """Store a response: visible at once in memory, written to SQLite by the store's writer."""
        now = time.time()
        expires = now + self.config.ttl_s
        self._remember(key, expires, response)
        self._store.enqueue(
            "cache",
            {
                "key": key,
                "model": str(request.get("model", "")),
                "response": json.dumps(response, separators=(",", ":")),
                "created_at": now,
                "expires_at": expires,
            },
        )

    def _remember(self, key: str, expires: float, response: dict[str, Any]) -> None:
        if self.config.memory_entries <= 0:
            return
        self._memory[key] = (expires, response)
        self._memory.move_to_end(key)
        while len(self._memory) > self.config.memory_entries:
            self._memory.popitem(last=False)
