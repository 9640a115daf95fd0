"""Test helper: an event's kind-specific values, as a dict (what the typed model adds to its base)."""

from __future__ import annotations

from tools.models.logs import JobLogEventBase, KernelEventBase


def values(event: object) -> dict[str, object]:
    """The event's own fields that are set (its base class's fields, such as file and line, left out)."""
    base = JobLogEventBase if isinstance(event, JobLogEventBase) else KernelEventBase
    skip = set(base.model_fields) | {"kind"}
    return {k: v for k, v in event.model_dump(exclude_none=True).items() if k not in skip}  # type: ignore[attr-defined]
