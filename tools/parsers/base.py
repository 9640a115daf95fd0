"""What every parser shares: strict decoding and the ParseError contract."""

from __future__ import annotations

import json
from typing import Any

import orjson

from tools.errors import ParseError

__all__ = ["decode_text", "ParseError", "json_loads"]


def json_loads(text: str) -> Any:
    """Parse JSON with orjson (several times faster than the standard library on the large
    squeue/sacct/Kubernetes documents of big clusters); on any error the standard library parses
    it again, so what is accepted beyond orjson's range (integers past 64 bits) and the errors
    raised (``json.JSONDecodeError`` with line and column, ``ValueError``, ``RecursionError``)
    are exactly the standard library's."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def decode_text(data: bytes, *, path: str, allow_empty: bool = False) -> str:
    """Decode raw bytes as UTF-8, strictly.

    Args:
        data: the raw artifact bytes.
        path: snapshot-relative path or command, used in error messages.
        allow_empty: accept a file with no content (or only whitespace).

    Raises:
        ParseError: when the bytes are not UTF-8 (line and byte offset named) or the file is empty.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ParseError(path, line, f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None
    if not allow_empty and (not text or text.isspace()):  # not text.strip(): that copies the whole text
        raise ParseError(path, None, "file is empty")
    return text
