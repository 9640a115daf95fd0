"""Building one typed log event from a parser's values (shared by kernel-log and job-log events)."""

from __future__ import annotations

from pydantic import BaseModel, TypeAdapter, ValidationError

__all__ = ["build_event"]

_REQUIRED = frozenset({"kind", "file", "line", "message", "state", "component", "error", "what"})


def build_event(adapter: TypeAdapter, kind: str, values: dict[str, object]) -> BaseModel:
    """Validate ``values`` as the ``kind`` event; an optional value that does not convert (odd or hostile
    text, e.g. a 5,000-digit number) is dropped rather than failing the line."""
    data = {"kind": kind, **values}
    for _ in range(len(data) + 1):
        try:
            return adapter.validate_python(data)
        except ValidationError as e:
            bad = {str(err["loc"][1]) for err in e.errors() if len(err["loc"]) > 1} - _REQUIRED
            if not bad:
                raise
            for name in bad:
                data.pop(name, None)
    raise AssertionError("unreachable: each retry drops a field")
