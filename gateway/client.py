"""Clients of the gateway: an OpenAI SDK client and a pydantic-ai model, in-process or remote.

In-process, requests reach the ASGI app through ``httpx2.ASGITransport`` (no socket). When
``WARDEN_GATEWAY_URL`` is set (e.g. ``http://127.0.0.1:4000/v1``), ``make_model`` points at
that gateway instead; ``WARDEN_GATEWAY_KEY`` then supplies the virtual key. The SDK's own
retries are off: the gateway retries and falls back. The SDK is imported only when one of these is
made; a route of built-in providers only is reached without it (``gateway.inprocess``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.asgi import ASGIApp

if TYPE_CHECKING:  # the SDK and pydantic-ai's OpenAI model cost ~1.5 s of imports: only when a client is made
    import httpx2
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel

__all__ = ["GATEWAY_KEY_ENV", "GATEWAY_URL_ENV", "IN_PROCESS_BASE_URL", "ProviderHook", "make_model",
           "make_openai_client"]

ProviderHook = Callable[[str, str], None]
"""Called with (provider name, provider kind) of every gateway answer (``x-warden-provider[-kind]``)."""

GATEWAY_URL_ENV = "WARDEN_GATEWAY_URL"
GATEWAY_KEY_ENV = "WARDEN_GATEWAY_KEY"
IN_PROCESS_BASE_URL = "http://warden-gateway.invalid/v1"
_NO_KEY = "warden-local"


def _headers(run_id: str | None) -> dict[str, str] | None:
    return {"X-Warden-Run-Id": run_id} if run_id else None


def _hooks(on_provider: ProviderHook | None) -> dict[str, list]:
    if on_provider is None:
        return {}

    async def record(response: httpx2.Response) -> None:
        name = response.headers.get("x-warden-provider")
        if name:
            on_provider(name, response.headers.get("x-warden-provider-kind", ""))

    return {"response": [record]}


def make_openai_client(
    app: ASGIApp, *, api_key: str | None = None, run_id: str | None = None, timeout_s: float = 600.0,
    on_provider: ProviderHook | None = None,
) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` client that calls the ASGI app in-process, without a socket.

    Args:
        app: The gateway app (``gateway.app.create_app``).
        api_key: Virtual key, if the gateway has keys configured.
        run_id: Sent as ``X-Warden-Run-Id`` on every request (per-run cap, ledger).
        timeout_s: Overall request timeout (s).
        on_provider: Told which provider answered each request.
    """
    import httpx2
    from openai import AsyncOpenAI

    http_client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), timeout=timeout_s,
                                     event_hooks=_hooks(on_provider))
    return AsyncOpenAI(
        base_url=IN_PROCESS_BASE_URL,
        api_key=api_key or _NO_KEY,
        http_client=http_client,
        max_retries=0,
        default_headers=_headers(run_id),
    )


def make_model(
    alias: str, app_or_url: ASGIApp | str | None = None, *, api_key: str | None = None, run_id: str | None = None,
    on_provider: ProviderHook | None = None,
) -> OpenAIChatModel:
    """A pydantic-ai ``OpenAIChatModel`` for a gateway alias.

    Args:
        alias: Model alias routed by the gateway (e.g. ``warden-builtin``).
        app_or_url: The in-process app, or a gateway base URL (``http://host:port/v1``).
            ``WARDEN_GATEWAY_URL``, when set, wins over both.
        api_key: Virtual key; defaults to ``WARDEN_GATEWAY_KEY`` for remote gateways.
        run_id: Sent as ``X-Warden-Run-Id``, so the gateway can cap this run's cost.
        on_provider: Told which provider answered each request (to tell a fallback from the model).

    The caller closes the model's client when done (``await model.client.close()``).

    Raises:
        ValueError: when neither an app, a URL nor ``WARDEN_GATEWAY_URL`` is given.
    """
    import httpx2
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    url = os.environ.get(GATEWAY_URL_ENV) or (app_or_url if isinstance(app_or_url, str) else None)
    if url:
        client = AsyncOpenAI(
            base_url=url.rstrip("/"),
            api_key=api_key or os.environ.get(GATEWAY_KEY_ENV) or _NO_KEY,
            max_retries=0,
            default_headers=_headers(run_id),
            http_client=httpx2.AsyncClient(timeout=600.0, event_hooks=_hooks(on_provider)),
        )
    elif app_or_url is not None:
        client = make_openai_client(app_or_url, api_key=api_key, run_id=run_id, on_provider=on_provider)
    else:
        raise ValueError(f"make_model needs the gateway app, a URL, or {GATEWAY_URL_ENV}")
    return OpenAIChatModel(alias, provider=OpenAIProvider(openai_client=client))
