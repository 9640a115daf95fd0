"""ASGI plumbing of the gateway app: types, request reading and validation, responses, the caller's
deadline. No framework: a plain ASGI callable keeps the gateway's added latency small."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

from gateway.errors import BadRequest, DeadlineExceeded, GatewayError

__all__ = ["ASGIApp", "Scope", "Receive", "Send"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_MAX_BODY = 32 * 1024 * 1024
_JSON = (b"content-type", b"application/json")


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


@contextlib.asynccontextmanager
async def _deadline(scope: Scope) -> AsyncIterator[None]:
    """Bound the upstream call by the caller's ``X-Warden-Deadline-S`` (seconds left in its run).

    Raises:
        BadRequest: the header is not a positive number.
        DeadlineExceeded: no provider answered in time.
    """
    raw = _header(scope, b"x-warden-deadline-s")
    if raw is None:
        yield
        return
    try:
        deadline = float(raw)
    except ValueError:
        deadline = float("nan")
    if not (deadline > 0 and math.isfinite(deadline)):
        raise BadRequest(f"X-Warden-Deadline-S must be a positive number of seconds, got {raw!r}")
    try:
        async with asyncio.timeout(deadline):
            yield
    except TimeoutError as exc:
        raise DeadlineExceeded(deadline) from exc


def _max_tokens(body: dict[str, Any]) -> int | None:
    """The request's completion limit (``max_completion_tokens`` or ``max_tokens``), validated.

    Raises:
        BadRequest: it is not a positive integer.
    """
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise BadRequest(f"{name!r} must be a positive integer, got {value!r}")
        return value
    return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


async def _read_json(receive: Receive) -> dict[str, Any]:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _MAX_BODY:
            raise BadRequest(f"Request body larger than {_MAX_BODY} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    try:
        body = json.loads(b"".join(chunks))
    except ValueError as exc:
        raise BadRequest(f"Request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object")
    if not isinstance(body.get("model"), str):
        raise BadRequest("'model' is required and must be a string")
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        raise BadRequest("'messages' is required and must be a non-empty list")
    return body


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _send_json(send: Send, status: int, obj: Any) -> None:
    await _send(send, status, _dumps(obj), [_JSON])


async def _send_error(send: Send, exc: GatewayError, request_id: str | None = None) -> None:
    headers = [_JSON, *exc.headers()]
    if request_id:
        headers.append((b"x-request-id", request_id.encode()))
    await _send(send, exc.status, _dumps(exc.body()), headers)
