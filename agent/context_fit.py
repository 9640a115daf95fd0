"""Fitting a model request into the model's context window (gateway config ``context_tokens``).

Before each request the prompt is estimated as the gateway estimates it (4 characters per token
over message text, tool-call arguments, instructions and tool schemas). When it and the reserved
completion (``max_output_tokens``) do not fit, the oldest tool results are replaced by a one-line
note — for this request only; the run's history keeps them — until it fits. When even that is not
enough, the run stops with ``LimitExceeded("context")``: Warden trims or refuses, it never sends a
request the model cannot take.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart

from agent.limits import LoopGuard

__all__ = ["estimate_request_tokens", "fit_request"]

_NOTE = "[trimmed to fit the model's context: {n} characters; call the tool again with a narrower filter]"


def _part_chars(part: Any) -> int:
    if isinstance(part, ToolReturnPart):
        return len(part.model_response_str())
    content = getattr(part, "content", None)
    if isinstance(content, str):
        return len(content)
    args = getattr(part, "args", None)
    if args is not None:
        return len(args if isinstance(args, str) else json.dumps(args)) + len(getattr(part, "tool_name", ""))
    return len(str(content or ""))


def _tool_chars(request_context: Any) -> int:
    params = request_context.model_request_parameters
    tools = [*(params.function_tools or []), *(params.output_tools or [])]
    total = sum(len(t.name) + len(t.description or "") + len(json.dumps(t.parameters_json_schema or {}))
                for t in tools)
    for part in getattr(params, "instruction_parts", None) or []:
        total += len(getattr(part, "content", "") or "")
    return total


def estimate_request_tokens(messages: list[ModelMessage], request_context: Any) -> int:
    """Estimated prompt tokens of one request (4 characters per token, as the gateway counts)."""
    chars = sum(_part_chars(p) for m in messages for p in m.parts) + _tool_chars(request_context)
    return (chars + 3) // 4


def fit_request(guard: LoopGuard, request_context: Any) -> Any:
    """The request context, its oldest tool results trimmed when the request would overflow.

    Raises:
        agent.limits.LimitExceeded: ``context``, when nothing left to trim makes it fit.
    """
    if guard.context_tokens is None:
        return request_context
    budget = guard.context_tokens - (guard.max_output_tokens or 0)
    messages = list(request_context.messages)
    used = estimate_request_tokens(messages, request_context)
    if used <= budget:
        return request_context
    for i, message in enumerate(messages):
        if used <= budget:
            break
        if not isinstance(message, ModelRequest):
            continue
        parts = list(message.parts)
        for j, part in enumerate(parts):
            if used <= budget:
                break
            if isinstance(part, ToolReturnPart):
                chars = len(part.model_response_str())
                note = _NOTE.format(n=chars)
                if chars > len(note):
                    parts[j] = replace(part, content=note)
                    used -= (chars - len(note)) // 4
        messages[i] = replace(message, parts=parts)
    if used > budget:
        raise guard._stop("context", f"the request needs ~{used} tokens, more than the model's context of "
                          f"{guard.context_tokens} minus {guard.max_output_tokens or 0} for its answer")
    return replace(request_context, messages=messages)

