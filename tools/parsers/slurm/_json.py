"""Loading Slurm's ``--json`` documents and reading the values whose shape changed across versions.

Shapes (detected from the document, never from a flag):

* Slurm 22.05, openapi ``v0.0.38`` / ``dbv0.0.38``: ``meta.plugin.type`` names the version,
  ``meta.Slurm.release``; numbers are bare (NO_VAL sentinels), states are strings, job
  ``exit_code`` is a wait status (768 = exit 3, 15 = signal 15).
* Slurm 23.02+ data_parser ``v0.0.39``...``v0.0.42`` (23.11, 24.05, 24.11): ``meta.plugin.data_parser``
  names the version, ``meta.slurm.release``; numbers are ``{"set", "infinite", "number"}``,
  states are lists, ``exit_code`` is ``{"status": [...], "return_code": {...}, "signal": {...}}``.
"""

from __future__ import annotations

import json
from typing import Any

from tools.errors import ParseError
from tools.parsers.slurm._values import unwrap_number
from tools.parsers.base import json_loads

__all__ = ["load_slurm_json", "data_parser_version", "exit_code_str", "as_int", "as_str"]


def load_slurm_json(text: str, *, path: str, key: str | tuple[str, ...]) -> tuple[dict[str, Any], list[Any]]:
    """Parse a Slurm JSON document and return it with its list under ``key`` (first key present).

    Raises:
        ParseError: invalid or truncated JSON (with its line), a document that is not an object,
            or one without the list (naming Slurm's own ``errors`` when it printed some).
    """
    try:
        doc = json_loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(path, e.lineno, f"invalid JSON: {e.msg} (column {e.colno})") from None
    except (ValueError, RecursionError) as e:  # over-long integers, absurd nesting
        raise ParseError(path, None, f"invalid JSON: {str(e)[:120]}") from None
    if not isinstance(doc, dict):
        raise ParseError(path, 1, f"expected a JSON object, got {type(doc).__name__}")
    keys = (key,) if isinstance(key, str) else key
    for name in keys:
        items = doc.get(name)
        if isinstance(items, list):
            return doc, items
    errors = doc.get("errors") or []
    detail = ""
    if isinstance(errors, list) and errors:
        first = errors[0]
        said = (first.get("description") or first.get("error") or first) if isinstance(first, dict) else first
        detail = f": Slurm reported {said}"
    raise ParseError(path, None, f"no {' or '.join(repr(k) for k in keys)} list in the document{detail}")


def data_parser_version(doc: dict[str, Any]) -> str | None:
    """The openapi/data_parser version that printed ``doc``: ``v0.0.38``, ``v0.0.41``, ... or None."""
    meta = doc.get("meta")
    if not isinstance(meta, dict):
        return None
    plugin = meta.get("plugin")
    if not isinstance(plugin, dict):
        return None
    for field in ("data_parser", "type"):
        value = plugin.get(field)
        if isinstance(value, str) and "v0.0." in value:
            return "v" + value.rsplit("v", 1)[-1]
    return None


def as_int(value: object) -> int | None:
    """A JSON integer in either shape -> int or None (sentinels, unset)."""
    number = unwrap_number(value)
    return None if number is None else int(number)


def as_str(value: object) -> str | None:
    """A JSON string -> stripped str, None for null or empty."""
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def exit_code_str(value: object) -> str | None:
    """Any Slurm JSON exit code -> ``"status:signal"`` as sacct prints it.

    Accepts a v0.0.38 wait status (``768`` -> ``"3:0"``, ``15`` -> ``"0:15"``), v0.0.38 sacct
    objects (``{"status": "SIGNALED", "return_code": null, "signal": {"signal_id": 15}}``) and
    v0.0.39+ objects (``{"return_code": {"number": 3}, "signal": {"id": {"number": 15}}}``).

    Raises:
        ValueError: an unrecognised shape.
    """
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{(value >> 8) & 0xFF}:{value & 0x7F}"
    if not isinstance(value, dict):
        raise ValueError(f"bad exit_code {value!r}")
    code = as_int(value.get("return_code")) or 0
    signal = value.get("signal") or {}
    sig: int | None = None
    if isinstance(signal, dict):
        raw = signal.get("id", signal.get("signal_id"))
        sig = as_int(raw)
    return f"{code}:{sig or 0}"
