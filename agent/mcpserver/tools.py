"""Warden's read tools as MCP tools: the same names, arguments, descriptions and bounded results the
agent's model gets (agent/toolset.py), redacted, audited, and marked read-only.

Each MCP tool is made from the agent's own tool wrapper: its signature without the pydantic-ai
``RunContext``, its docstring as the description, its result model as the output schema. A call
goes through :meth:`agent.deps.WardenDeps.call` (the audit log records the call, the findings it
returns and a hash of the result, before the result leaves), then every string of the result passes
the gateway's :class:`~gateway.redaction.Redactor` — value by value, so the JSON stays valid — exactly
as text does before it reaches an external model. Only the read toolset is registered: no tool that
can change the cluster (``execute_action``, any action) is ever offered.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ValidationError

from agent.deps import WardenDeps
from agent.toolset import TOOL_NAMES, read_toolset
from gateway.redaction import Redactor
from tools import read
from tools.errors import WardenError

__all__ = ["READ_ONLY", "register_read_tools", "redact_value"]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
"""Every Warden MCP tool reads recorded or live evidence and changes nothing."""


def redact_value(value: Any, redactor: Redactor | None) -> Any:
    """``value`` (JSON data) with every string redacted; keys and numbers unchanged."""
    if redactor is None:
        return value
    if isinstance(value, str):
        return redactor.redact_text(value)[0]
    if isinstance(value, list):
        return [redact_value(v, redactor) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(v, redactor) for k, v in value.items()}
    return value


def _signature(name: str) -> inspect.Signature:
    """The agent tool's signature without its RunContext parameter."""
    fn = read_toolset.tools[name].function
    sig = inspect.signature(fn, eval_str=True)
    return sig.replace(parameters=list(sig.parameters.values())[1:])


def _make(name: str, deps_of: Callable[[], WardenDeps], redactor: Redactor | None,
          lock: threading.Lock) -> Callable[..., CallToolResult]:
    read_fn = getattr(read, name)

    def tool(**kwargs: Any) -> CallToolResult:
        deps = deps_of()
        try:
            with lock:  # one ReadContext, parsed lazily: one call at a time
                result: BaseModel = deps.call(name, read_fn, **kwargs)
        except (ValueError, ValidationError, WardenError) as e:  # a bad cursor, a bad filter: the caller's to fix
            raise ToolError(f"{name}: {' '.join(str(e).split())[:500]}") from None
        finally:
            if deps.audit is not None:
                deps.audit.flush()  # a long-lived server: each call's records reach the chain now
        data = redact_value(result.model_dump(mode="json"), redactor)
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    tool.__name__ = name
    tool.__qualname__ = name
    tool.__signature__ = _signature(name)  # type: ignore[attr-defined]
    return tool


def register_read_tools(server: MCPServer, deps_of: Callable[[], WardenDeps], redactor: Redactor | None) -> list[str]:
    """Register every read tool of the agent's toolset on ``server``; returns their names.

    Args:
        deps_of: the dependencies of the call about to run (the evidence context may be refreshed
            between calls, for a live cluster).
        redactor: applied to every string of every result; None sends results unredacted.
    """
    lock = threading.Lock()
    for name in TOOL_NAMES:
        tool_def = read_toolset.tools[name]
        server.add_tool(_make(name, deps_of, redactor, lock), name=name, description=tool_def.description,
                        annotations=READ_ONLY.model_copy(update={"title": name.replace("_", " ")}),
                        structured_output=True)
    return list(TOOL_NAMES)
