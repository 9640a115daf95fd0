"""Shape checks of what an upstream sends back, so that a malformed reply is a typed 502
(``ProviderBadResponse``, retried and then failed over like any provider error), never a 500 from
code that trusted it.

A ``chat.completion`` must have a non-empty ``choices`` list of objects, each with a ``message``
object whose ``content`` is text, a list of parts or null, and whose ``tool_calls`` (if any) are
objects with a ``function`` naming a tool and carrying its ``arguments`` (text; an object is
re-encoded as JSON text, as some servers send it). ``usage``, when present, holds non-negative
integer token counts. A ``chat.completion.chunk`` has the same rules for its ``delta``; its
``choices`` may be empty (the final usage chunk).
"""

from __future__ import annotations

import json
from typing import Any

from gateway.errors import ProviderBadResponse

__all__ = ["check_chunk", "check_completion"]

_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _usage(provider: str, usage: Any) -> None:
    if usage is None:
        return
    if not isinstance(usage, dict):
        raise ProviderBadResponse(provider, f"usage is {type(usage).__name__}, not an object")
    for name in _USAGE_FIELDS:
        value = usage.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ProviderBadResponse(provider, f"usage.{name} is {value!r}, not a token count")


def _message(provider: str, msg: Any, where: str, *, partial: bool) -> None:
    if not isinstance(msg, dict):
        raise ProviderBadResponse(provider, f"{where} is {type(msg).__name__}, not an object")
    content = msg.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise ProviderBadResponse(provider, f"{where}.content is {type(content).__name__}")
    calls = msg.get("tool_calls")
    if calls is None:
        return
    if not isinstance(calls, list):
        raise ProviderBadResponse(provider, f"{where}.tool_calls is {type(calls).__name__}, not a list")
    for i, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) and not (partial and isinstance(call, dict)):
            raise ProviderBadResponse(provider, f"{where}.tool_calls[{i}] has no function object")
        if not isinstance(fn, dict):
            continue
        name = fn.get("name")
        if not (isinstance(name, str) and name) and not (partial and name is None):
            raise ProviderBadResponse(provider, f"{where}.tool_calls[{i}].function.name is {name!r}")
        args = fn.get("arguments")
        if isinstance(args, dict):
            fn["arguments"] = json.dumps(args)
        elif args is not None and not isinstance(args, str):
            raise ProviderBadResponse(provider, f"{where}.tool_calls[{i}].function.arguments is {type(args).__name__}")


def check_completion(provider: str, data: Any) -> dict[str, Any]:
    """Return ``data`` if it is a well-formed ``chat.completion``.

    Raises:
        ProviderBadResponse: naming the first thing that is wrong.
    """
    if not isinstance(data, dict):
        raise ProviderBadResponse(provider, f"response is {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ProviderBadResponse(provider, "response has no choices")
    for i, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise ProviderBadResponse(provider, f"choices[{i}] is {type(choice).__name__}, not an object")
        _message(provider, choice.get("message"), f"choices[{i}].message", partial=False)
    _usage(provider, data.get("usage"))
    return data


def check_chunk(provider: str, chunk: Any) -> dict[str, Any]:
    """Return ``chunk`` if it is a well-formed ``chat.completion.chunk``.

    Raises:
        ProviderBadResponse: naming the first thing that is wrong.
    """
    if not isinstance(chunk, dict):
        raise ProviderBadResponse(provider, f"stream chunk is {type(chunk).__name__}, not an object")
    choices = chunk.get("choices") or []
    if not isinstance(choices, list):
        raise ProviderBadResponse(provider, "stream chunk's choices is not a list")
    for i, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise ProviderBadResponse(provider, f"chunk choices[{i}] is {type(choice).__name__}, not an object")
        if choice.get("delta") is not None:
            _message(provider, choice["delta"], f"chunk choices[{i}].delta", partial=True)
    _usage(provider, chunk.get("usage"))
    return chunk
