"""Small helpers shared by the gateway tests."""

from __future__ import annotations

from typing import Any


def builtin_echo(request: dict[str, Any]) -> dict[str, Any]:
    """A stand-in for the diagnostician: echoes the last user message."""
    last = [m for m in request["messages"] if m.get("role") == "user"][-1]
    return {"role": "assistant", "content": f"builtin saw: {last['content']}"}


def provider(name: str, url: str, **kw: Any) -> dict[str, Any]:
    """An openai_compat provider entry for a config dict."""
    return {"name": name, "kind": "openai_compat", "openai_base_url": url, **kw}


def chat(content: str = "hello", model: str = "m", **kw: Any) -> dict[str, Any]:
    """A minimal chat-completions body."""
    return {"model": model, "messages": [{"role": "user", "content": content}], **kw}


async def post(app: Any, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    """POST a chat request to the app through httpx's ASGITransport; returns the httpx response."""
    import httpx

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as client:
        return await client.post("/v1/chat/completions", json=body, headers=headers or {})


async def get(app: Any, path: str, headers: dict[str, str] | None = None) -> Any:
    """GET a path of the app through httpx's ASGITransport."""
    import httpx

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as client:
        return await client.get(path, headers=headers or {})
