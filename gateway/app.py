"""The gateway's ASGI app: OpenAI-compatible endpoints over routing, cache, budgets and the ledger.

Endpoints:
    POST /v1/chat/completions   plain JSON or, with ``"stream": true``, server-sent events
    GET  /v1/models             the routable aliases
    GET  /healthz               ``{"status": "ok", "providers": {name: "ok" | "cooled_down"}}``
    GET  /metrics               Prometheus text (``gateway.metrics``)

Request headers: ``Authorization: Bearer <virtual key>`` (when keys are configured),
``X-Warden-Run-Id`` (per-run cap and ledger), ``X-Warden-Cache: off | force``.
``X-Warden-Deadline-S`` (seconds the caller can still wait; 504 ``deadline_exceeded`` after that).
Response headers: ``x-request-id``, ``x-warden-provider`` (name) and ``x-warden-provider-kind``
(``builtin`` | ``openai_compat``) of the provider that answered, ``x-warden-cache: hit | miss | skip``.

The app is a plain ASGI callable (no framework) so the added latency stays small; ledger and
cache writes go to a background writer thread, made durable by ``flush()`` or ``aclose()``
(called on ASGI lifespan shutdown).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

from gateway.asgi import (_JSON, ASGIApp, Receive, Scope, Send, _deadline, _dumps, _header, _max_tokens,
                          _read_json, _send, _send_error, _send_json)
from gateway.budgets import Budgets, Caller, Reservation
from gateway.cache import ResponseCache, cache_key
from gateway.config import GatewayConfig
from gateway.errors import AllProvidersFailed, GatewayError, LimitExceeded, UnknownModel
from gateway.ledger import Ledger, LedgerEntry, price_usd
from gateway.metrics import CONTENT_TYPE_LATEST, GatewayMetrics
from gateway.providers import build_provider
from gateway.providers.base import (Provider, chunks_usage_estimate, completion_to_chunks, estimate_tokens,
                                    message_text)
from gateway.providers.builtin import RespondFn
from gateway.redaction import Redactor
from gateway.routing import RouteProgress, Router
from gateway.store import Store

__all__ = ["ASGIApp", "GatewayApp", "create_app"]

_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


class GatewayApp:
    """The gateway as an ASGI callable.

    Args:
        config: Validated gateway config.
        store_path: SQLite file for the ledger and cache.
        providers: Provider instances by name, overriding those built from ``config``.
        builtin_respond: Message function for the built-in provider (tests, or another diagnostician).
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        store_path: str | Path,
        providers: dict[str, Provider] | None = None,
        builtin_respond: RespondFn | None = None,
    ) -> None:
        self.config = config
        self.metrics = GatewayMetrics()
        self.store = Store(store_path, flush_interval_s=config.ledger_flush_interval_s)
        built = {p.name: build_provider(p, builtin_respond=builtin_respond) for p in config.providers}
        self.providers: dict[str, Provider] = {**built, **(providers or {})}
        redactor = Redactor(config.redaction.extra_patterns) if config.redaction.enabled else None
        self.router = Router(config, self.providers, redactor, self.metrics)
        self.cache = ResponseCache(config.cache, self.store)
        self.budgets = Budgets(config, store_path)
        self.ledger = Ledger(self.store)
        self._ids = itertools.count(1)
        self._id_prefix = f"req-{os.getpid():x}-{int(time.time()):x}-"
        self._closed = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def flush(self) -> None:
        """Block until every ledger and cache row queued so far is in SQLite."""
        self.store.flush()

    async def aclose(self) -> None:
        """Flush the ledger, stop the writer, and close provider connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self.store.close)
        self.budgets.close()
        for provider in self.providers.values():
            await provider.aclose()

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        method = scope["method"]
        if path.startswith("/v1/"):
            path = path[3:]
        if path == "/chat/completions" and method == "POST":
            await self._chat(scope, receive, send)
        elif path == "/models" and method == "GET":
            try:
                self.budgets.authenticate(_header(scope, b"authorization"))
            except GatewayError as exc:
                await _send_error(send, exc)
                return
            data = [{"id": a, "object": "model", "created": 0, "owned_by": "warden"} for a in self.router.aliases]
            await _send_json(send, 200, {"object": "list", "data": data})
        elif path in ("/healthz", "/health") and method == "GET":
            providers = {
                name: ("cooled_down" if self.router.is_cooled_down(name) else "ok") for name in self.providers
            }
            await _send_json(send, 200, {"status": "ok", "providers": providers})
        elif path == "/metrics" and method == "GET":
            await _send(send, 200, self.metrics.render(), [(b"content-type", CONTENT_TYPE_LATEST.encode())])
        else:
            await _send_json(send, 404, {"error": {"message": f"No route for {method} {scope['path']}",
                                                   "type": "invalid_request_error", "param": None,
                                                   "code": "not_found"}})

    async def _chat(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        request_id = self._id_prefix + str(next(self._ids))
        run_id = _header(scope, b"x-warden-run-id")
        entry = LedgerEntry(request_id=request_id, key="unknown", team=None, run_id=run_id, model="")
        caller: Caller | None = None
        held: Reservation | None = None
        progress = RouteProgress()
        try:
            body = await _read_json(receive)
            entry.model = body["model"]
            entry.stream = bool(body.get("stream"))
            caller = self.budgets.authenticate(_header(scope, b"authorization"))
            entry.key, entry.team = caller.key, caller.team
            if entry.model not in self.config.routes:
                raise UnknownModel(f"The model {entry.model!r} does not exist; known models: "
                                   f"{sorted(self.config.routes)}")
            if self.budgets.counted(caller, run_id):
                held = self._reserve(body, caller, run_id)
            if entry.stream:
                await self._chat_stream(body, scope, send, entry, request_id, progress)
            else:
                await self._chat_plain(body, scope, send, entry, request_id, progress)
        except GatewayError as exc:
            if isinstance(exc, LimitExceeded):
                self.metrics.limit_rejections.labels(exc.limit).inc()
            # every failure names the provider last tried and the attempts made (a deadline cancels the
            # attempt in flight, which counts); a request refused before routing has none (NULL, 0)
            if isinstance(exc, AllProvidersFailed) and exc.attempts:
                entry.provider = exc.attempts[-1].provider
            entry.provider = entry.provider or progress.provider
            entry.attempts = max(entry.attempts, progress.attempts)
            entry.status = exc.status
            entry.error = f"{exc.code}: {exc.message}"[:500]
            await _send_error(send, exc, request_id)
        finally:
            entry.latency_ms = (time.perf_counter() - started) * 1000
            self._finish(entry, held)

    def _reserve(self, body: dict[str, Any], caller: Caller, run_id: str | None) -> Reservation:
        """Hold the request's estimated spend; lower its max_tokens to what a budget has left."""
        requested = _max_tokens(body)
        prompt = estimate_tokens(message_text(body["messages"])
                                 + json.dumps(body.get("tools") or "", separators=(",", ":")))
        in_price, out_price = self._route_prices(body["model"])
        held = self.budgets.reserve(caller, run_id, prompt_tokens=prompt, max_completion_tokens=requested,
                                    input_usd_per_token=in_price, output_usd_per_token=out_price)
        allowed = held.max_completion_tokens
        if allowed is not None and (requested is None or allowed < requested):
            body["max_tokens"] = allowed
            if "max_completion_tokens" in body:
                body["max_completion_tokens"] = allowed
        return held

    def _route_prices(self, alias: str) -> tuple[float, float]:
        """USD per token (input, output) of the dearest upstream model on the alias's route; when the
        route's models have no price (the upstream names its model only in the reply), the dearest of
        the price table, so that a cost budget is never under-reserved."""
        chain = set(self.config.routes.get(alias, []))
        models = [getattr(p, "openai_model", None) or alias for p in self.config.providers if p.name in chain]
        prices = [self.config.prices[m] for m in models if m in self.config.prices] or list(self.config.prices.values())
        if not prices:
            return 0.0, 0.0
        return (max(p.input_usd_per_mtok for p in prices) / 1e6, max(p.output_usd_per_mtok for p in prices) / 1e6)

    async def _chat_plain(
        self, body: dict[str, Any], scope: Scope, send: Send, entry: LedgerEntry, request_id: str,
        progress: RouteProgress,
    ) -> None:
        use_cache = self.cache.wanted(body, _header(scope, b"x-warden-cache"))
        key = cache_key(body) if use_cache else None
        if key is not None:
            hit = self.cache.get(key)
            self.metrics.cache.labels("hit" if hit is not None else "miss").inc()
            if hit is not None:
                entry.cache_hit = True
                entry.provider = "cache"
                _usage_into(entry, hit.get("usage"))
                await _send(send, 200, _dumps(hit), [_JSON, (b"x-request-id", request_id.encode()),
                                                     (b"x-warden-provider", b"cache"), (b"x-warden-cache", b"hit")])
                return
        async with _deadline(scope):
            result = await self.router.complete(entry.model, body, progress)
        response = result.response
        self._route_into(entry, result.provider, response.get("model"), result.attempts, result.redactions)
        _usage_into(entry, response.get("usage"))
        entry.cost_usd = price_usd(self.config.prices, entry.upstream_model, entry.prompt_tokens,
                                   entry.completion_tokens)
        if key is not None:
            self.cache.put(key, body, response)
        await _send(send, 200, _dumps(response), [
            _JSON, (b"x-request-id", request_id.encode()), (b"x-warden-provider", result.provider.name.encode()),
            (b"x-warden-provider-kind", result.provider.kind.encode()),
            (b"x-warden-cache", b"miss" if key is not None else b"skip")])

    async def _chat_stream(
        self, body: dict[str, Any], scope: Scope, send: Send, entry: LedgerEntry, request_id: str,
        progress: RouteProgress,
    ) -> None:
        headers = [*_SSE_HEADERS, (b"x-request-id", request_id.encode())]
        use_cache = self.cache.wanted(body, _header(scope, b"x-warden-cache"))
        hit = self.cache.get(cache_key(body)) if use_cache else None
        if use_cache:
            self.metrics.cache.labels("hit" if hit is not None else "miss").inc()
        if hit is not None:
            entry.cache_hit = True
            entry.provider = "cache"
            _usage_into(entry, hit.get("usage"))
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            await send({"type": "http.response.start", "status": 200,
                        "headers": [*headers, (b"x-warden-provider", b"cache"), (b"x-warden-cache", b"hit")]})
            for chunk in completion_to_chunks(hit, include_usage=include_usage):
                await send({"type": "http.response.body", "body": b"data: " + _dumps(chunk) + b"\n\n",
                            "more_body": True})
            await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
            return
        async with _deadline(scope):
            result = await self.router.open_stream(entry.model, body, progress)
        upstream_model = (result.first or {}).get("model")
        self._route_into(entry, result.provider, upstream_model, result.attempts, result.redactions)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*headers, (b"x-warden-provider", result.provider.name.encode()),
                                (b"x-warden-provider-kind", result.provider.kind.encode()),
                                (b"x-warden-cache", b"skip")]})
        text: list[str] = []
        usage: dict[str, Any] | None = None
        chunk = result.first
        try:
            while chunk is not None:
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        text.append(delta["content"])
                    for call in delta.get("tool_calls") or ():
                        text.append((call.get("function") or {}).get("arguments") or "")
                await send({"type": "http.response.body", "body": b"data: " + _dumps(chunk) + b"\n\n",
                            "more_body": True})
                chunk = await anext(result.rest, None)
        except GatewayError as exc:
            entry.error = f"{exc.code}: mid-stream: {exc.message}"[:500]
            await send({"type": "http.response.body", "body": b"data: " + _dumps(exc.body()) + b"\n\n",
                        "more_body": True})
        finally:
            aclose = getattr(result.rest, "aclose", None)
            if aclose is not None:
                await aclose()
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
        _usage_into(entry, usage or chunks_usage_estimate("".join(text), body))
        entry.cost_usd = price_usd(self.config.prices, entry.upstream_model, entry.prompt_tokens,
                                   entry.completion_tokens)

    def _route_into(self, entry: LedgerEntry, provider: Provider, upstream_model: Any, attempts: int,
                    redactions: list[str]) -> None:
        entry.provider = provider.name
        entry.upstream_model = str(upstream_model) if upstream_model else entry.model
        entry.attempts = attempts
        entry.redactions = len(redactions)

    def _finish(self, entry: LedgerEntry, held: Reservation | None) -> None:
        model = entry.model if entry.model in self.config.routes else "unknown"  # bounded label values
        self.metrics.observe_request(model, entry.provider or "none", entry.status, entry.latency_ms / 1000,
                                     entry.prompt_tokens, entry.completion_tokens, entry.cost_usd)
        if held is not None:
            spent = not entry.cache_hit
            self.budgets.settle(held, entry.prompt_tokens + entry.completion_tokens if spent else 0,
                                entry.cost_usd if spent else 0.0)
        self.ledger.record(entry)


def _usage_into(entry: LedgerEntry, usage: Any) -> None:
    if isinstance(usage, dict):
        entry.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        entry.completion_tokens = int(usage.get("completion_tokens") or 0)


def create_app(
    config: GatewayConfig,
    *,
    store_path: str | Path,
    providers: dict[str, Provider] | None = None,
    builtin_respond: RespondFn | None = None,
) -> GatewayApp:
    """Build the gateway ASGI app.

    Args:
        config: Validated gateway config (``gateway.config.load_config`` or ``default_config``).
        store_path: SQLite file for the usage ledger and response cache (created if missing).
        providers: Provider instances by name, replacing those the config would build.
        builtin_respond: Message function for the built-in provider; None uses
            ``gateway.builtin.diagnostician.respond``, imported on first use.

    Returns:
        A ``GatewayApp``: an ASGI callable with ``flush()`` and ``aclose()``.
    """
    return GatewayApp(config, store_path=store_path, providers=providers, builtin_respond=builtin_respond)
