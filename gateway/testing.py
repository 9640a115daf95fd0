"""Test helpers: a scriptable OpenAI-compatible upstream and a loopback server in a thread.

Used by the gateway's tests and ``bench/gateway.py``, and by anyone who needs a fake
OpenAI-compatible server that records what it was sent (like httpx's ``MockTransport``,
but over a real socket when served).

Example::

    upstream = StubUpstream(script=[StubReply(status=500)])
    with serve_in_thread(upstream) as base_url:   # "http://127.0.0.1:<port>/v1"
        ...
    upstream.received  # request bodies, in arrival order
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn

from gateway.app import ASGIApp, Receive, Scope, Send
from gateway.providers.base import completion_to_chunks, estimate_tokens, message_text

__all__ = ["StubReply", "StubUpstream", "asgi_get", "asgi_post", "chat", "echo_respond", "provider_entry",
           "serve_in_thread"]


@dataclass
class StubReply:
    """What the stub answers to one request.

    Attributes:
        status: HTTP status; >= 400 sends an OpenAI error body.
        content: Assistant text (ignored when ``tool_calls`` is set).
        tool_calls: OpenAI ``tool_calls`` list to answer with instead of text.
        delay_s: Seconds to wait before answering (added to the stub's service time).
        finish_reason: Sent instead of the one the stub works out (``length``: an answer cut at max_tokens).
    """

    status: int = 200
    content: str | None = "ok"
    tool_calls: list[dict[str, Any]] | None = None
    delay_s: float = 0.0
    finish_reason: str | None = None


class StubUpstream:
    """An OpenAI-compatible ``/v1/chat/completions`` ASGI app that records requests.

    Args:
        script: Replies for the first requests, in order; after that, ``default`` (or
            ``responder`` when given).
        default: Reply once the script is used up.
        responder: ``(request_body) -> StubReply`` deciding each unscripted reply.
        service_time_s: Fixed delay before every answer (s).
        model: ``model`` field of responses.
    """

    def __init__(
        self,
        script: list[StubReply] | None = None,
        *,
        default: StubReply | None = None,
        responder: Callable[[dict[str, Any]], StubReply] | None = None,
        service_time_s: float = 0.0,
        model: str = "stub-model",
    ) -> None:
        self.script = list(script or [])
        self.default = default or StubReply()
        self.responder = responder
        self.service_time_s = service_time_s
        self.model = model
        self.received: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def _next(self, body: dict[str, Any]) -> StubReply:
        if self.script:
            return self.script.pop(0)
        return self.responder(body) if self.responder else self.default

    def completion(self, body: dict[str, Any], reply: StubReply) -> dict[str, Any]:
        """The ``chat.completion`` the stub sends for a request and reply."""
        content = None if reply.tool_calls else reply.content
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        finish = "tool_calls" if reply.tool_calls else "stop"
        if isinstance(content, str) and isinstance(limit, int) and estimate_tokens(content) > limit:
            content, finish = content[:4 * limit], "length"  # as a real server stops at max_tokens
        finish = reply.finish_reason or finish
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        prompt = estimate_tokens(message_text(body.get("messages", [])))
        completion = estimate_tokens(message_text([message]))
        return {
            "id": f"chatcmpl-stub-{len(self.received)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        if not scope["path"].endswith("/chat/completions"):
            await _respond(send, 404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        body = json.loads(b"".join(chunks))
        self.received.append(body)
        self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
        reply = self._next(body)
        if self.service_time_s + reply.delay_s > 0:
            await asyncio.sleep(self.service_time_s + reply.delay_s)
        if reply.status >= 400:
            error = {"error": {"message": f"stub error {reply.status}", "type": "server_error", "code": None}}
            await _respond(send, reply.status, error)
            return
        completion = self.completion(body, reply)
        if not body.get("stream"):
            await _respond(send, 200, completion)
            return
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        for chunk in completion_to_chunks(completion, include_usage=include_usage):
            await send({"type": "http.response.body", "body": f"data: {json.dumps(chunk)}\n\n".encode(),
                        "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


async def _respond(send: Send, status: int, obj: Any) -> None:
    data = json.dumps(obj).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


@contextmanager
def serve_in_thread(app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0, http: str = "auto",
                    startup_timeout_s: float = 10.0) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on loopback in a daemon thread.

    Args:
        app: Any ASGI app (e.g. ``StubUpstream`` or the gateway app).
        host: Bind address; keep it on loopback.
        port: 0 picks a free port.
        http: uvicorn HTTP implementation (``auto``, ``h11``, ``httptools``).

    Yields:
        The base URL, ``http://<host>:<port>/v1``. The server stops (lifespan shutdown) on exit.

    Raises:
        RuntimeError: if the server does not start within ``startup_timeout_s``.
    """
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, http=http,
                            lifespan="on", backlog=4096)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="warden-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"uvicorn did not start on {host}:{port}")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def echo_respond(request: dict[str, Any]) -> dict[str, Any]:
    """A stand-in for the diagnostician's ``respond``: echoes the last user message."""
    last = [m for m in request["messages"] if m.get("role") == "user"][-1]
    return {"role": "assistant", "content": f"builtin saw: {last['content']}"}


def provider_entry(name: str, url: str, **settings: Any) -> dict[str, Any]:
    """An ``openai_compat`` provider entry for a config dict (``settings`` are ``openai_*`` fields)."""
    return {"name": name, "kind": "openai_compat", "openai_base_url": url, **settings}


def chat(content: str = "hello", model: str = "m", **fields: Any) -> dict[str, Any]:
    """A minimal chat-completions request body with one user message."""
    return {"model": model, "messages": [{"role": "user", "content": content}], **fields}


async def asgi_post(app: ASGIApp, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    """POST a chat request to an ASGI app through ``httpx.ASGITransport`` (no socket)."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as client:
        return await client.post("/v1/chat/completions", json=body, headers=headers or {})


async def asgi_get(app: ASGIApp, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """GET a path of an ASGI app through ``httpx.ASGITransport``."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as client:
        return await client.get(path, headers=headers or {})
