"""The Provider interface: one upstream that answers OpenAI chat-completions requests.

A provider takes the request body (a dict in the OpenAI wire format, already redacted when
``redacts`` is True) and returns a ``chat.completion`` dict, or streams ``chat.completion.chunk``
dicts. It maps its own transport errors to ``gateway.errors.ProviderError`` subclasses; routing,
cache, budgets and redaction live outside providers.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["Provider", "chunks_usage_estimate", "completion_to_chunks", "estimate_tokens", "message_text"]


class Provider(ABC):
    """One upstream model server.

    Attributes:
        name: The configured provider name (used in ledger, metrics, cool-down).
        redacts: Whether outgoing text must be redacted before this provider sees it.
        kind: The provider kind from the config.
    """

    name: str
    redacts: bool = True
    kind: str = "openai_compat"
    """The config ``kind`` (``builtin`` | ``openai_compat``), sent as ``x-warden-provider-kind``."""

    @abstractmethod
    async def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer a non-streamed request.

        Args:
            request: OpenAI chat-completions body (``model`` is the requested alias).

        Returns:
            A ``chat.completion`` dict with ``id``, ``object``, ``model``, ``choices`` and ``usage``.

        Raises:
            ProviderError: a subclass saying whether the failure is retryable.
        """

    @abstractmethod
    def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Answer a streamed request as ``chat.completion.chunk`` dicts.

        Failures before the first chunk raise ``ProviderError`` from the first ``__anext__``,
        so the caller can still fall back to another provider.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the default holds none."""


def estimate_tokens(text: str) -> int:
    """Rough token count of text: one token per 4 characters, at least 1 for non-empty text."""
    return (len(text) + 3) // 4 if text else 0


def message_text(messages: list[dict[str, Any]]) -> str:
    """All text of a message list (contents, text parts, tool-call arguments), joined by newlines."""
    out: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(p.get("text", "") for p in content if isinstance(p, dict))
        for call in m.get("tool_calls") or ():
            fn = call.get("function") or {}
            out.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
    return "\n".join(out)


def completion_to_chunks(completion: dict[str, Any], *, include_usage: bool) -> list[dict[str, Any]]:
    """Render a full ``chat.completion`` as the chunks a streaming server would send.

    One chunk carries role, content and complete tool calls, one carries finish_reason, and,
    when ``include_usage``, a last chunk with empty ``choices`` carries ``usage``.
    """
    base = {
        "id": completion.get("id", "chatcmpl-warden"),
        "object": "chat.completion.chunk",
        "created": completion.get("created", int(time.time())),
        "model": completion.get("model", ""),
    }
    chunks: list[dict[str, Any]] = []
    for choice in completion.get("choices", []):
        msg = choice.get("message") or {}
        delta: dict[str, Any] = {"role": "assistant"}
        if msg.get("content") is not None:
            delta["content"] = msg["content"]
        if msg.get("tool_calls"):
            delta["tool_calls"] = [
                {"index": i, "id": c.get("id"), "type": "function", "function": dict(c.get("function") or {})}
                for i, c in enumerate(msg["tool_calls"])
            ]
        idx = choice.get("index", 0)
        chunks.append({**base, "choices": [{"index": idx, "delta": delta, "finish_reason": None}]})
        chunks.append(
            {**base, "choices": [{"index": idx, "delta": {}, "finish_reason": choice.get("finish_reason", "stop")}]}
        )
    if include_usage and completion.get("usage") is not None:
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    return chunks


def chunks_usage_estimate(chunks_text: str, request: dict[str, Any]) -> dict[str, int]:
    """Estimated usage for a stream whose upstream sent none (prompt from request text)."""
    prompt = estimate_tokens(message_text(request.get("messages", [])) + json.dumps(request.get("tools") or ""))
    completion = estimate_tokens(chunks_text)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
