"""The execution trip-wire: evals never execute.

The diagnose callable an eval is given has no command runner and no execution setup, so it cannot
run a remediation. As a second line, :func:`execution_tripwire` replaces ``execute()`` on
``tools.actions.base.Action`` and every subclass that overrides it for the duration of an eval:
a call is recorded (action type, plan hash, case) and refused with ``NotAllowedError`` before any
command runs. A recorded attempt fails the whole eval run.

The replacement is process-wide while any trip-wire is active (nested and concurrent trip-wires
share it; each sees every attempt); the originals are restored when the last one exits.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from tools.actions.base import Action
from tools.errors import ActionError, NotAllowedError

__all__ = ["execution_tripwire", "current_case", "ExecutionAttempts"]

current_case: ContextVar[str | None] = ContextVar("warden_eval_case", default=None)
"""The case being evaluated in this context (set by the runner's task), named in recorded attempts."""

_lock = threading.Lock()
_active: list[ExecutionAttempts] = []
_originals: dict[type, Any] = {}


class ExecutionAttempts(list[str]):
    """The attempts one trip-wire saw: ``"<action_type> plan <hash12> (case <id>)"`` strings."""

    def for_case(self, case: str) -> list[str]:
        """The attempts attributed to one case."""
        return [a for a in self if a.endswith(f"(case {case})")]


def _classes() -> list[type]:
    seen: list[type] = []
    todo: list[type] = [Action]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return [c for c in seen if "execute" in c.__dict__]


def _refuse(self: Action, *args: Any, **kwargs: Any) -> Any:
    try:
        plan_hash = self.plan().plan_hash[:12]
    except ActionError:
        plan_hash = "unplannable"
    what = f"{self.action_type} plan {plan_hash} (case {current_case.get() or 'unknown'})"
    with _lock:
        for rec in _active:
            rec.append(what)
    raise NotAllowedError(f"{self.action_type}: execution refused during an eval (evals never execute)")


@contextmanager
def execution_tripwire() -> Iterator[ExecutionAttempts]:
    """Refuse and record every ``Action.execute()`` call inside the block.

    Yields:
        ExecutionAttempts: filled as attempts happen; empty when nothing tried to execute.
    """
    attempts = ExecutionAttempts()
    with _lock:
        if not _active:
            for cls in _classes():
                _originals[cls] = cls.__dict__["execute"]
                cls.execute = _refuse  # type: ignore[method-assign]
        _active.append(attempts)
    try:
        yield attempts
    finally:
        with _lock:
            _active.remove(attempts)
            if not _active:
                for cls, fn in _originals.items():
                    cls.execute = fn  # type: ignore[method-assign]
                _originals.clear()
