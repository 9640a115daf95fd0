"""Compact tool definitions for models with a small context window (gateway config ``compact_tools``).

The read tools' full descriptions and pydantic's JSON schemas are ~11 KB of the first request
(~2,800 tokens at 4 characters per token): most of a 4k–8k context before any evidence is read.
Compacting keeps what constrains a call and drops what only explains it:

- a tool's description is cut to its first sentence (at most ``DESCRIPTION_CHARS`` characters);
- in the parameter schema, ``title``, ``description`` and ``default`` are dropped, and an optional
  ``anyOf: [X, {"type": "null"}]`` becomes ``X`` (the argument stays optional: it is not in
  ``required``, and Warden's own validation still accepts null);
- every bound stays (``maxLength`` capped at ``STRING_CHARS``): ``type``, ``enum``, ``required``, ``minimum``/``maximum``,
  ``maxItems``, ``additionalProperties``, ``$ref``/``$defs``;
- a string without a bound gets ``maxLength: STRING_CHARS`` and an array ``maxItems: ARRAY_ITEMS``:
  servers that turn the schema into a grammar (llama.cpp's) then cannot let a small model write one
  answer's ``summary`` until the context is full (they ignore ``max_tokens`` under a grammar).

Only what is sent changes; pydantic-ai validates the model's arguments against the tools' full
schemas as before.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from pydantic_ai.tools import ToolDefinition

__all__ = ["ARRAY_ITEMS", "DESCRIPTION_CHARS", "STRING_CHARS", "compact_request", "compact_schema", "compact_tool", "compact_tools"]

DESCRIPTION_CHARS = 120
"""Longest compacted tool description (characters)."""

STRING_CHARS = 400
"""``maxLength`` given to a string the schema leaves unbounded."""
ARRAY_ITEMS = 10
"""``maxItems`` given to an array the schema leaves unbounded."""

_DROPPED = frozenset({"title", "description", "default", "examples"})
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    first = _SENTENCE_END.split(flat, maxsplit=1)[0]
    if len(first) <= DESCRIPTION_CHARS:
        return first
    return first[:DESCRIPTION_CHARS].rsplit(" ", 1)[0].rstrip(",;:(") + " ..."


def compact_schema(schema: Any, *, _key: str | None = None) -> Any:
    """A JSON schema without explanations, every constraint kept (see the module docstring).

    Args:
        schema: A JSON schema (dict/list/scalars), as pydantic generates it; not modified.

    Returns:
        A new schema.
    """
    if isinstance(schema, list):
        return [compact_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if _key != "properties" and key in _DROPPED:  # a property may be *named* "description"
            continue
        out[key] = compact_schema(value, _key=key)
    branches = out.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        other = next(b for b in branches if b != {"type": "null"})
        if isinstance(other, dict):
            del out["anyOf"]
            out = {**other, **out}
    if _key != "properties":
        if out.get("type") == "string" and "enum" not in out:
            # A server that constrains output by grammar (llama.cpp) unrolls maxLength into that many nested
            # rules: the summary's 8,000 failed to parse there and took the server down. The compacted bound
            # is at most STRING_CHARS; the full limit is still enforced when the answer is validated.
            out["maxLength"] = min(int(out.get("maxLength", STRING_CHARS)), STRING_CHARS)
        elif out.get("type") == "array" and "maxItems" not in out:
            out["maxItems"] = ARRAY_ITEMS
    return out


def compact_tool(tool: ToolDefinition) -> ToolDefinition:
    """One tool definition with a first-sentence description and a compact parameter schema."""
    return replace(tool, description=_first_sentence(tool.description or "") or None,
                   parameters_json_schema=compact_schema(tool.parameters_json_schema))


def compact_tools(tools: list[ToolDefinition] | None) -> list[ToolDefinition]:
    """``compact_tool`` over a list (None -> [])."""
    return [compact_tool(t) for t in tools or []]


def compact_request(request_context: Any) -> Any:
    """A pydantic-ai request context whose function and output tools are compacted."""
    params = request_context.model_request_parameters
    params = replace(params, function_tools=compact_tools(params.function_tools),
                     output_tools=compact_tools(params.output_tools))
    return replace(request_context, model_request_parameters=params)
