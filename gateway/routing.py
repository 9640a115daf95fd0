"""Routing: a model alias to an ordered provider chain, with retries, fallback and cool-down.

For each provider in the alias's chain (providers in cool-down are skipped unless all are),
the router makes up to ``retry.attempts_per_provider`` attempts with jittered exponential
backoff (tenacity) on retryable failures (timeouts, connection errors, 5xx, 429), then falls
back to the next provider. An upstream 400/413/422 ends the chain (the request itself is bad);
other 4xx move to the next provider. A provider with ``cooldown.failures`` failed attempts in
``cooldown.window_s`` is skipped for ``cooldown.cooldown_s``.

Requests to providers with ``redacts`` set go through the redactor first; the built-in one
sees the original.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from gateway.config import GatewayConfig
from gateway.errors import AllProvidersFailed, ProviderError, ProviderRejected, UnknownModel
from gateway.metrics import GatewayMetrics
from gateway.providers.base import Provider
from gateway.redaction import Redactor

__all__ = ["RouteProgress", "RouteResult", "Router", "StreamResult"]

T = TypeVar("T")
_FATAL_STATUSES = frozenset({400, 413, 422})


@dataclass
class RouteProgress:
    """How far a request got along its chain, updated as it goes: what the ledger records when the
    caller's deadline cancels the request mid-attempt (no result, no ``AllProvidersFailed``)."""

    provider: str | None = None
    """The provider of the latest attempt (the one in flight, if any)."""
    attempts: int = 0
    """Attempts started, the one in flight included."""


@dataclass
class RouteResult:
    """A non-streamed answer and how it was obtained."""

    response: dict[str, Any]
    provider: Provider
    attempts: int
    failures: list[ProviderError]
    redactions: list[str]


@dataclass
class StreamResult:
    """An open stream: the first chunk already read, the rest still to come."""

    first: dict[str, Any] | None
    rest: AsyncIterator[dict[str, Any]]
    provider: Provider
    attempts: int
    failures: list[ProviderError]
    redactions: list[str]


class _Exhausted(Exception):
    """Internal: a provider's tries are used up; ``tries`` says how many were made."""

    def __init__(self, tries: int) -> None:
        super().__init__(tries)
        self.tries = tries


class _FirstRetry:
    """The tenacity retry state a wait strategy needs to size the first backoff."""

    attempt_number = 1


@dataclass
class _Health:
    failures: deque[float] = field(default_factory=deque)
    cooled_until: float = 0.0


class Router:
    """Sends requests along provider chains.

    Args:
        config: Routes, retry and cool-down settings.
        providers: Provider name -> provider.
        redactor: Applied to requests for providers that redact; None disables redaction.
        metrics: Where failures, fallbacks, redactions and cool-downs are counted.
    """

    def __init__(
        self,
        config: GatewayConfig,
        providers: dict[str, Provider],
        redactor: Redactor | None,
        metrics: GatewayMetrics,
    ) -> None:
        self._routes = {alias: [providers[n] for n in chain] for alias, chain in config.routes.items()}
        self._retry = config.retry
        self._cooldown = config.cooldown
        self._redactor = redactor
        self._metrics = metrics
        self._health: dict[str, _Health] = {name: _Health() for name in providers}
        self._wait = wait_random_exponential(multiplier=config.retry.backoff_initial_s, max=config.retry.backoff_max_s)

    @property
    def aliases(self) -> list[str]:
        """Every routable model alias."""
        return list(self._routes)

    def is_cooled_down(self, provider: str, now: float | None = None) -> bool:
        """Whether a provider is being skipped after repeated failures."""
        return self._health[provider].cooled_until > (time.monotonic() if now is None else now)

    def _chain(self, alias: str) -> list[Provider]:
        chain = self._routes.get(alias)
        if chain is None:
            raise UnknownModel(f"The model {alias!r} does not exist; known models: {sorted(self._routes)}")
        now = time.monotonic()
        live = [p for p in chain if not self.is_cooled_down(p.name, now)]
        return live or chain

    def _fail(self, provider: Provider, exc: ProviderError) -> None:
        self._metrics.provider_failures.labels(provider.name, exc.code).inc()
        health = self._health[provider.name]
        now = time.monotonic()
        health.failures.append(now)
        while health.failures and health.failures[0] <= now - self._cooldown.window_s:
            health.failures.popleft()
        if len(health.failures) >= self._cooldown.failures and self._cooldown.cooldown_s > 0:
            health.cooled_until = now + self._cooldown.cooldown_s
            health.failures.clear()
            self._metrics.cooled_down.labels(provider.name).set(1)

    def _ok(self, provider: Provider) -> None:
        health = self._health[provider.name]
        if health.failures:
            health.failures.clear()
        if health.cooled_until:
            health.cooled_until = 0.0
            self._metrics.cooled_down.labels(provider.name).set(0)

    async def _run_chain(
        self, alias: str, request: dict[str, Any], call: Callable[[Provider, dict[str, Any]], Awaitable[T]],
        progress: RouteProgress | None = None,
    ) -> tuple[T, Provider, int, list[ProviderError], list[str]]:
        if progress is not None:
            untracked = call

            async def call(provider: Provider, body: dict[str, Any]) -> T:
                progress.provider = provider.name
                progress.attempts += 1
                return await untracked(provider, body)

        failures: list[ProviderError] = []
        redacted: dict[str, Any] | None = None
        kinds: list[str] = []
        attempts = 0
        chain = self._chain(alias)
        for index, provider in enumerate(chain):
            body = request
            if provider.redacts and self._redactor is not None:
                if redacted is None:
                    redacted, kinds = self._redactor.redact_request(request)
                    for kind in kinds:
                        self._metrics.redactions.labels(kind).inc()
                body = redacted
            try:
                result, tries = await self._attempts(provider, body, call, failures)
            except ProviderRejected as exc:
                attempts += 1
                if exc.upstream_status in _FATAL_STATUSES:
                    raise AllProvidersFailed(alias, failures) from exc
                continue
            except _Exhausted as exc:
                attempts += exc.tries
                continue
            attempts += tries
            self._ok(provider)
            if index > 0:
                self._metrics.fallbacks.labels(alias).inc()
            return result, provider, attempts, failures, kinds
        raise AllProvidersFailed(alias, failures)

    def _retryable(self, provider: Provider, exc: BaseException) -> bool:
        return isinstance(exc, ProviderError) and exc.retryable and not self.is_cooled_down(provider.name)

    async def _attempts(
        self,
        provider: Provider,
        body: dict[str, Any],
        call: Callable[[Provider, dict[str, Any]], Awaitable[T]],
        failures: list[ProviderError],
    ) -> tuple[T, int]:
        """Up to ``attempts_per_provider`` tries of one provider; returns (result, tries).

        The first try runs bare (no retry machinery on the hot path); retries run under tenacity
        with jittered exponential backoff (``wait_random_exponential``), the first one after
        one backoff interval too.

        Raises:
            ProviderRejected: a non-retryable upstream 4xx (after one try).
            _Exhausted: every try failed with a retryable error, or the provider cooled down.
        """
        try:
            return await call(provider, body), 1
        except ProviderError as exc:
            failures.append(exc)
            self._fail(provider, exc)
            if isinstance(exc, ProviderRejected):
                raise
            if self._retry.attempts_per_provider == 1 or not self._retryable(provider, exc):
                raise _Exhausted(1) from exc
        tries = 1
        await asyncio.sleep(self._wait(_FirstRetry()))

        async def once() -> T:
            nonlocal tries
            tries += 1
            try:
                return await call(provider, body)
            except ProviderError as exc:
                failures.append(exc)
                self._fail(provider, exc)
                raise

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._retry.attempts_per_provider - 1),
            wait=self._wait,
            retry=retry_if_exception(lambda e: self._retryable(provider, e)),
            reraise=True,
        )
        try:
            return await retrying(once), tries
        except ProviderRejected:
            raise
        except ProviderError as exc:
            raise _Exhausted(tries) from exc

    async def complete(self, alias: str, request: dict[str, Any], progress: RouteProgress | None = None) -> RouteResult:
        """Answer a non-streamed request from the first provider that succeeds.

        ``progress``, when given, is updated before every attempt (provider, attempts so far).

        Raises:
            UnknownModel: the alias has no route.
            AllProvidersFailed: every provider failed (carries each attempt's error).
        """
        response, provider, attempts, failures, kinds = await self._run_chain(
            alias, request, lambda p, body: p.complete(body), progress
        )
        return RouteResult(response, provider, attempts, failures, kinds)

    async def open_stream(self, alias: str, request: dict[str, Any],
                          progress: RouteProgress | None = None) -> StreamResult:
        """Open a stream on the first provider whose first chunk arrives; fallback ends there.

        Raises:
            UnknownModel, AllProvidersFailed: as ``complete``.
        """

        async def first_chunk(
            provider: Provider, body: dict[str, Any]
        ) -> tuple[dict[str, Any] | None, AsyncIterator[dict[str, Any]]]:
            iterator = provider.stream(body).__aiter__()
            try:
                return await iterator.__anext__(), iterator
            except StopAsyncIteration:
                return None, iterator

        (first, rest), provider, attempts, failures, kinds = await self._run_chain(alias, request, first_chunk, progress)
        return StreamResult(first, rest, provider, attempts, failures, kinds)
