"""OpenAI-shaped upstreams on loopback for the gateway's and the agent's failure tests: ASGI apps to
serve with ``gateway.testing.serve_in_thread`` (uvicorn in a thread) behind a gateway route.

* :class:`Raw` answers every ``/v1/chat/completions`` request with one fixed status and body —
  garbage on purpose (an HTML error page, empty ``choices``, a 500);
* :class:`Flood` answers 200 and then MiB after MiB of bytes, a body without end;
* :class:`RecordingProxy` forwards to a real OpenAI-compatible server (llama-cpp-python's) and keeps
  every body it forwarded and every answer, so a test sees exactly what the model was sent.

The well-behaved upstream that answers scripted chat completions is ``gateway.testing.StubUpstream``.
This module imports nothing of Warden (bench/hardening.py loads it by path, to attack another
checkout's code with the same upstreams) and httpx only when a proxy forwards.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["Flood", "LoopbackUpstream", "Raw", "RecordingProxy"]

Scope = dict[str, Any]


class LoopbackUpstream:
    """The ASGI plumbing every upstream here shares: the lifespan handshake, then for each HTTP
    request its whole body read and handed to :meth:`respond`."""

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await self.respond(scope, body, send)

    async def respond(self, scope: Scope, body: bytes, send: Any) -> None:
        """Answer one request (``body``: the raw request body)."""
        raise NotImplementedError


async def _start(send: Any, status: int, content_type: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]})


class Raw(LoopbackUpstream):
    """Answers every request with ``status`` and the raw ``body``; ``received`` counts the requests."""

    def __init__(self, body: bytes, status: int = 200, content_type: bytes = b"application/json") -> None:
        self.body, self.status, self.content_type = body, status, content_type
        self.received = 0

    async def respond(self, scope: Scope, body: bytes, send: Any) -> None:
        self.received += 1
        await _start(send, self.status, self.content_type)
        await send({"type": "http.response.body", "body": self.body})


class Flood(LoopbackUpstream):
    """Answers 200 with ``prefix`` and then ``mib`` MiB of ``x`` in 1 MiB chunks; ``sent`` counts the
    chunks that went out before the gateway hung up (what a flood test measures)."""

    def __init__(self, mib: int, content_type: bytes = b"application/json", prefix: bytes = b"") -> None:
        self.mib, self.content_type, self.prefix = mib, content_type, prefix
        self.sent = 0

    async def respond(self, scope: Scope, body: bytes, send: Any) -> None:
        await _start(send, 200, self.content_type)
        if self.prefix:
            await send({"type": "http.response.body", "body": self.prefix, "more_body": True})
        chunk = b"x" * (1 << 20)
        try:
            for _ in range(self.mib):
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                self.sent += 1
            await send({"type": "http.response.body", "body": b""})
        except OSError:  # the gateway hung up
            return


class RecordingProxy(LoopbackUpstream):
    """Forwards each request to ``target`` (a server's base URL, without ``/v1``) and records it.

    Attributes:
        received: every request body forwarded (parsed JSON), in order.
        answers: (HTTP status, the model's message or None) of every request, in order; a server that
            went away (a test's teardown) is answered 502, as a proxy would.
    """

    def __init__(self, target: str, timeout_s: float = 600.0) -> None:
        self.target, self.timeout_s = target, timeout_s
        self.received: list[dict[str, Any]] = []
        self.answers: list[tuple[int, dict[str, Any] | None]] = []

    async def respond(self, scope: Scope, body: bytes, send: Any) -> None:
        import httpx

        self.received.append(json.loads(body))
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                r = await client.post(self.target + scope["path"], content=body,
                                      headers={"content-type": "application/json"})
            status, content = r.status_code, r.content
        except httpx.HTTPError as e:
            status, content = 502, json.dumps({"error": {"message": f"proxy: {e}", "type": "api_error"}}).encode()
        try:
            message = json.loads(content)["choices"][0]["message"] if status == 200 else None
        except (ValueError, KeyError, IndexError, TypeError):
            message = None
        self.answers.append((status, message))
        await _start(send, status, b"application/json")
        await send({"type": "http.response.body", "body": content})
