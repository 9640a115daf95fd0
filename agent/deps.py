"""The agent's typed dependencies: the evidence context, and where tool calls are recorded."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from agent.store import RunStore
from tools.read.context import ReadContext

__all__ = ["WardenDeps"]

T = TypeVar("T", bound=BaseModel)


@dataclass
class WardenDeps:
    """Passed to every tool call of one run."""

    read: ReadContext
    store: RunStore | None = None
    run_id: str | None = None
    on_tool: Callable[[str, dict[str, Any]], None] | None = None
    """Progress hook: called with the tool name and arguments before each call."""

    def call(self, name: str, fn: Callable[..., T], **kwargs: Any) -> T:
        """Run a read tool over this run's evidence, recording the call in the store."""
        if self.on_tool:
            self.on_tool(name, kwargs)
        start = time.perf_counter()
        error = None
        result: T | None = None
        try:
            result = fn(self.read, **kwargs)
            return result
        except Exception as e:  # noqa: BLE001 - recorded, then re-raised unchanged
            error = f"{type(e).__name__}: {e}"
            raise
        finally:
            if self.store and self.run_id:
                size = len(result.model_dump_json()) if result is not None else 0
                self.store.tool_call(self.run_id, name, kwargs, result_chars=size,
                                     duration_ms=(time.perf_counter() - start) * 1000, error=error)
