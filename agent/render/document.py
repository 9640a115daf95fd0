"""Machine-readable output: a Diagnosis (and other records) as versioned JSON or YAML, full values.

``--output json`` prints :func:`diagnosis_document`: the Diagnosis's own fields (so ``jq .root_cause``
keeps working) plus ``schema_version`` and ``snapshot`` (the directory the evidence ``file`` paths are
relative to). Values are never shortened (whole run ids and plan hashes). Cluster text keeps its
exact characters, but any character a terminal could act on (escapes, bidi overrides, zero-width
characters) is written as a ``\\uXXXX`` escape, which JSON and YAML readers decode back to the same
string: the document is exact for a program and harmless on a screen.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from tools.models.findings import Diagnosis

__all__ = ["SCHEMA_VERSION", "OutputFormat", "diagnosis_document", "dump_json", "dump_yaml", "dump"]

SCHEMA_VERSION = 1
"""Version of the JSON/YAML documents; raised when a field is renamed or removed (not when one is added)."""

OutputFormat = Literal["rich", "json", "yaml", "markdown"]

_CANDIDATES = re.compile(r"[^\x20-\x7e\n]")
"""Characters that may need an escape; those ``str.isprintable`` accepts are kept as they are."""


def diagnosis_document(d: Diagnosis, *, snapshot: Path | None = None) -> dict[str, Any]:
    """``{"schema_version": 1, **Diagnosis, "snapshot": path or None}``, JSON-ready."""
    return {"schema_version": SCHEMA_VERSION, **d.model_dump(mode="json"),
            "snapshot": str(snapshot) if snapshot is not None else None}


def _escape(m: re.Match[str]) -> str:
    if m[0].isprintable():
        return m[0]
    code = ord(m[0])
    if code < 0x10000:
        return f"\\u{code:04x}"
    high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
    return f"\\u{high:04x}\\u{low:04x}"


def dump_json(doc: Any) -> str:
    """Indented JSON; terminal-active characters inside strings escaped (see the module docstring)."""
    text = json.dumps(doc, indent=2, ensure_ascii=False, default=str)
    return _CANDIDATES.sub(_escape, text)  # outside strings JSON has only ASCII, so only string contents change


def dump_yaml(doc: Any) -> str:
    """Block-style YAML with non-ASCII characters escaped in double-quoted scalars (PyYAML's own escaping)."""
    import yaml

    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=False, width=1_000_000)


def dump(doc: Any, fmt: Literal["json", "yaml"]) -> str:
    """``doc`` as ``json`` or ``yaml`` text."""
    return dump_json(doc) if fmt == "json" else dump_yaml(doc)
