"""The agent's typed dependencies: the evidence context, and where tool calls are recorded.

Each tool call is appended to the audit log (kind ``tool_call``) before it runs, each finding it
returns (kind ``finding``) before the model sees it, and its outcome (``tool_result``: the result's
sha256, size and first ``EXCERPT_CHARS`` characters, or the error) after, so the tamper-evident
record holds every call even when the tool fails, and what the model was shown can be proven
against the hash without storing every result whole. The run store keeps the queryable copy.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from agent.audit import AuditLog
from agent.limits import LoopGuard
from agent.store import RunStore
from tools.models.findings import Finding
from tools.read.context import ReadContext

if TYPE_CHECKING:
    from agent.execute import ExecutionSetup

__all__ = ["WardenDeps", "EXCERPT_CHARS"]

EXCERPT_CHARS = 512
"""Characters of each tool result kept in its audit record (the rest is covered by the hash)."""

T = TypeVar("T", bound=BaseModel)


@dataclass
class WardenDeps:
    """Passed to every tool call of one run."""

    read: ReadContext
    store: RunStore | None = None
    run_id: str | None = None
    on_tool: Callable[[str, dict[str, Any]], None] | None = None
    """Progress hook: called with the tool name and arguments before each call."""
    audit: AuditLog | None = None
    """Tamper-evident log; each call is appended before it runs."""
    guard: LoopGuard = field(default_factory=LoopGuard)
    """This run's loop limits (read by GuardedToolset and LoopGuardCapability)."""
    execution: ExecutionSetup | None = None
    """Set only when the caller enabled the execute_action tool."""

    def call(self, name: str, fn: Callable[..., T], **kwargs: Any) -> T:
        """Run a read tool over this run's evidence, recording the call in the audit log and the store.

        Raises:
            whatever the read tool raises (recorded first), and the audit log's errors: a call
            that cannot be audited does not run.
        """
        if self.audit is not None:
            self.audit.append("tool_call", {"tool": name, "args": to_jsonable_python(kwargs)}, run_id=self.run_id)
        if self.on_tool:
            self.on_tool(name, kwargs)
        start = time.perf_counter()
        error = None
        result: T | None = None
        try:
            result = fn(self.read, **kwargs)
            if self.audit is not None:  # findings are recorded before the model sees them
                for f in getattr(result, "findings", None) or []:
                    if isinstance(f, Finding):
                        self.audit.append("finding", {"source": name, **f.model_dump(mode="json")}, run_id=self.run_id)
            return result
        except Exception as e:  # noqa: BLE001 - recorded, then re-raised unchanged
            error = f"{type(e).__name__}: {e}"
            raise
        finally:
            text = result.model_dump_json() if result is not None else ""
            size = len(text)
            ms = (time.perf_counter() - start) * 1000
            if self.audit is not None:
                self.audit.append("tool_result", {
                    "tool": name, "result_chars": size, "error": error, "duration_ms": round(ms, 2),
                    "result_sha256": hashlib.sha256(text.encode()).hexdigest() if result is not None else None,
                    "excerpt": text[:EXCERPT_CHARS]}, run_id=self.run_id)
            if self.store and self.run_id:
                self.store.tool_call(self.run_id, name, kwargs, result_chars=size, duration_ms=ms, error=error)
