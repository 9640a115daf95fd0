"""Provider for any OpenAI-compatible server: the OpenAI API, vLLM, llama.cpp server, Ollama.

Owns one pooled ``httpx.AsyncClient`` (keep-alive connections, no client-side retries: the
gateway's router retries), the auth header, the base URL, timeouts, and the mapping of httpx
errors and upstream statuses to ``gateway.errors``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx

from gateway.config import OpenAICompatProviderConfig
from gateway.errors import (
    ProviderBadResponse,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderServerError,
    ProviderTimeout,
)
from gateway.providers.base import Provider

__all__ = ["OpenAICompatProvider"]


class OpenAICompatProvider(Provider):
    """Talks to ``{openai_base_url}/chat/completions`` over pooled HTTP/1.1.

    Args:
        config: The provider's typed settings (``openai_*``).
        transport: Optional httpx transport (e.g. ``httpx.ASGITransport`` for an in-process upstream).
    """

    redacts = True

    def __init__(self, config: OpenAICompatProviderConfig, *, transport: httpx.AsyncBaseTransport | None = None):
        self.name = config.name
        self.config = config
        key = config.openai_api_key.get_secret_value() if config.openai_api_key else None
        if key is None and config.openai_api_key_env:
            key = os.environ.get(config.openai_api_key_env)
        headers = {"content-type": "application/json", **config.openai_extra_headers}
        if key:
            headers["authorization"] = f"Bearer {key}"
        self._url = config.openai_base_url.rstrip("/") + "/chat/completions"
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(config.openai_timeout_s, connect=config.openai_connect_timeout_s),
            limits=httpx.Limits(
                max_connections=config.openai_max_connections,
                max_keepalive_connections=config.openai_max_connections,
                keepalive_expiry=30.0,
            ),
            transport=transport,
            trust_env=False,
        )

    def _body(self, request: dict[str, Any], *, stream: bool) -> bytes:
        body = dict(request)
        if self.config.openai_model:
            body["model"] = self.config.openai_model
        body["stream"] = stream
        if not stream:
            body.pop("stream_options", None)
        return json.dumps(body, separators=(",", ":")).encode()

    def _status_error(self, status: int, content: bytes) -> ProviderError:
        detail = content[:300].decode("utf-8", "replace")
        msg = f"upstream answered HTTP {status}: {detail}"
        if status == 429:
            return ProviderRateLimited(self.name, msg, upstream_status=status)
        if status >= 500:
            return ProviderServerError(self.name, msg, upstream_status=status)
        return ProviderRejected(self.name, msg, upstream_status=status)

    def _transport_error(self, exc: httpx.HTTPError) -> ProviderError:
        if isinstance(exc, httpx.TimeoutException):
            return ProviderTimeout(self.name, f"timed out: {type(exc).__name__}")
        return ProviderConnectionError(self.name, f"{type(exc).__name__}: {exc}")

    async def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """POST the request and return the upstream ``chat.completion``.

        Raises:
            ProviderTimeout, ProviderConnectionError, ProviderRateLimited, ProviderServerError,
            ProviderRejected, ProviderBadResponse.
        """
        try:
            resp = await self._client.post(self._url, content=self._body(request, stream=False))
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from exc
        if resp.status_code >= 400:
            raise self._status_error(resp.status_code, resp.content)
        try:
            data = json.loads(resp.content)
        except ValueError as exc:
            raise ProviderBadResponse(self.name, f"invalid JSON: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            raise ProviderBadResponse(self.name, "response has no choices list")
        return data

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """POST with ``stream: true`` and yield each SSE ``data:`` chunk until ``[DONE]``.

        Raises:
            ProviderError subclasses, before the first chunk for status and connect errors.
        """
        try:
            async with self._client.stream("POST", self._url, content=self._body(request, stream=True)) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    raise self._status_error(resp.status_code, resp.content)
                async for line in resp.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        yield json.loads(data)
                    except ValueError as exc:
                        raise ProviderBadResponse(self.name, f"invalid JSON chunk: {exc}") from exc
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from exc

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._client.aclose()
