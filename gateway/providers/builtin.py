"""The built-in provider: Warden's deterministic offline diagnostician behind the OpenAI wire format.

It wraps a pure ``respond(request) -> message`` function (by default
``gateway.builtin.diagnostician.respond``, imported on first use) into a full
``chat.completion``. It runs in-process, so its requests are never redacted.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from gateway.config import BuiltinProviderConfig
from gateway.errors import ProviderBadResponse
from gateway.providers.base import Provider, completion_to_chunks, estimate_tokens, message_text

__all__ = ["BuiltinProvider", "RespondFn"]

RespondFn = Callable[[dict[str, Any]], dict[str, Any]]
"""``respond(request_body) -> {"role": "assistant", "content": ..., "tool_calls": [...]}``."""

_DEFAULT_RESPOND = "gateway.builtin.diagnostician:respond"


class BuiltinProvider(Provider):
    """Serves the built-in diagnostician.

    Args:
        config: Its (name-only) settings.
        respond: The message function; None imports ``gateway.builtin.diagnostician.respond`` lazily.
    """

    redacts = False
    kind = "builtin"

    def __init__(self, config: BuiltinProviderConfig | None = None, *, respond: RespondFn | None = None):
        self.name = (config or BuiltinProviderConfig()).name
        self._respond = respond

    def _fn(self) -> RespondFn:
        if self._respond is None:
            module, _, attr = _DEFAULT_RESPOND.partition(":")
            self._respond = getattr(importlib.import_module(module), attr)
        return self._respond

    async def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """Call ``respond`` and wrap its message into a ``chat.completion``.

        Token counts are estimated from text length (4 characters per token).

        Raises:
            ProviderBadResponse: when ``respond`` fails on the conversation or returns something that is
                not a message dict.
        """
        try:
            message = self._fn()(request)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
            # a conversation the diagnostician cannot read (hostile or garbled) is a bad reply, not a crash
            raise ProviderBadResponse(self.name, f"respond() failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(message, dict) or message.get("role") != "assistant":
            raise ProviderBadResponse(self.name, f"respond() returned {type(message).__name__}, not an assistant message")
        tool_calls = message.get("tool_calls") or []
        prompt = message_text(request.get("messages", []))
        prompt_tokens = estimate_tokens(prompt + json.dumps(request.get("tools") or "", separators=(",", ":")))
        completion_tokens = estimate_tokens(message_text([message]))
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:24]
        return {
            "id": f"chatcmpl-builtin-{digest}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": message.get("content"), **(
                        {"tool_calls": tool_calls} if tool_calls else {}
                    )},
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Yield the completion as chunks (one content/tool-call chunk, one finish chunk, usage)."""
        completion = await self.complete(request)
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        for chunk in completion_to_chunks(completion, include_usage=include_usage):
            yield chunk
