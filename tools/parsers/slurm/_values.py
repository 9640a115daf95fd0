"""Slurm value conventions shared by the Slurm parsers (private to this package).

Slurm prints the same kinds of values in every command: durations (``1-02:03:04``), timestamps
(``2024-01-25T15:12:23``), hostlists (``gpu[01-04]``), TRES strings (``cpu=8,gres/gpu=8``), GRES
strings (``gpu:a100:4(S:0-1)``) and state words with flags (``MIXED+DRAIN``, ``down*``). JSON adds
"no value" sentinels: 22.05 (openapi v0.0.38) prints plain numbers where 0xFFFFFFFE/0xFFFFFFFF mean
unset/infinite; 23.02+ (data_parser v0.0.39+) wraps them as ``{"set", "infinite", "number"}``.

Every helper raises ``ValueError`` on malformed input; parsers turn that into ``ParseError``
with the file and line. A large cluster prints the same few thousand timestamps, hostlists and
TRES strings hundreds of thousands of times (every job row and its steps), so the conversions of
text are cached by the text (results are immutable, or copied out).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from functools import lru_cache

import hostlist

__all__ = [
    "EMPTY_WORDS",
    "clean",
    "unwrap_number",
    "epoch_to_utc",
    "parse_timestamp",
    "parse_duration_s",
    "expand_nodes",
    "tres_gpus",
    "gres_gpus",
    "parse_tres",
    "mem_to_mib",
    "parse_int",
]

EMPTY_WORDS = frozenset({"", "(null)", "null", "N/A", "n/a", "None", "none", "None assigned", "Unknown", "NONE"})
"""Words Slurm prints for "no value"."""

_U32_SENTINELS = frozenset({0xFFFFFFFE, 0xFFFFFFFF})
_U64_SENTINELS = frozenset({0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF})
_U16_SENTINELS = frozenset({0xFFFE, 0xFFFF})


def clean(value: object) -> str | None:
    """Return a stripped string, or None for Slurm's empty words (``(null)``, ``N/A``, ``None``...)."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text in EMPTY_WORDS else text


def unwrap_number(value: object, *, u16: bool = False) -> int | float | None:
    """Unwrap a JSON number in either Slurm shape.

    ``{"set": true, "infinite": false, "number": 5}`` -> 5; unset or infinite -> None.
    A bare number equal to a NO_VAL/INFINITE sentinel (u32 or u64; u16 when ``u16``) -> None.
    None stays None.

    Raises:
        ValueError: when the value is neither a number nor a number object.
    """
    if value is None:
        return None
    if isinstance(value, dict):
        if "number" not in value:
            raise ValueError(f"expected a number object, got keys {sorted(value)[:5]}")
        if value.get("infinite") or value.get("set") is False:
            return None
        value = value["number"]
        if value is None:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if isinstance(value, int) and (value in _U32_SENTINELS or value in _U64_SENTINELS):
        return None
    if u16 and isinstance(value, int) and value in _U16_SENTINELS:
        return None
    return value


def epoch_to_utc(value: object) -> datetime | None:
    """Seconds since the epoch (bare or wrapped) -> aware UTC datetime; 0 / unset -> None."""
    number = unwrap_number(value)
    if not number:
        return None
    try:
        return datetime.fromtimestamp(int(number), tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"timestamp {number!r} out of range") from None


def parse_timestamp(text: str | None) -> datetime | None:
    """Parse a Slurm text timestamp ``YYYY-MM-DDTHH:MM:SS`` as UTC.

    Slurm prints local time without a zone; Warden reads cluster text as UTC (the sandbox and
    most clusters run in UTC). ``Unknown``, ``None``, ``N/A`` and empty -> None.

    Raises:
        ValueError: any other text.
    """
    value = clean(text)
    if value is None:
        return None
    return _timestamp(value)


@lru_cache(maxsize=1 << 16)
def _timestamp(value: str) -> datetime:
    if len(value) == 19 and value[10] == "T" and value[4] == "-" and value.isascii() and value[:4].isdigit():
        try:  # the one shape Slurm prints; fromisoformat reads it as strptime would, in C
            return datetime.fromisoformat(value).replace(tzinfo=timezone.utc)
        except ValueError:
            pass
    try:
        parsed = datetime.strptime(value, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise ValueError(f"bad timestamp {value!r}") from None
    return parsed.replace(tzinfo=timezone.utc)


_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+(?:\.\d+)?))?$")
_NO_LIMIT = frozenset({"UNLIMITED", "INFINITE", "NOT_SET", "INVALID", "Partition_Limit"})


def parse_duration_s(text: str | None) -> int | None:
    """Parse a Slurm printed duration into whole seconds.

    Output forms: ``M:SS``, ``H:MM:SS``, ``D-HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``MM:SS.mmm``.
    ``UNLIMITED``, ``INFINITE``, ``NOT_SET``, ``N/A`` and empty -> None.

    Raises:
        ValueError: any other text.
    """
    value = clean(text)
    if value is None or value in _NO_LIMIT:
        return None
    return _duration(value)


@lru_cache(maxsize=1 << 16)
def _duration(value: str) -> int:
    match = _DURATION.match(value)
    if not match:
        raise ValueError(f"bad duration {value!r}")
    days, a, b, c = match.groups()
    parts = [float(p) for p in (a, b, c) if p is not None]
    if days is not None:
        # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = (parts + [0.0, 0.0])[:3]
        return int(int(days) * 86400 + hours * 3600 + minutes * 60 + seconds)
    if len(parts) == 3:
        return int(parts[0] * 3600 + parts[1] * 60 + parts[2])
    if len(parts) == 2:
        return int(parts[0] * 60 + parts[1])
    return int(parts[0] * 60)  # a bare number is minutes, as in --time


def expand_nodes(text: str | None) -> list[str]:
    """Expand a Slurm hostlist (``gpu[01-03,07],login1``) into names; empty words -> [].

    Raises:
        ValueError: when the hostlist is malformed.
    """
    value = clean(text)
    if value is None:
        return []
    return list(_hostlist(value))


@lru_cache(maxsize=1 << 15)
def _hostlist(value: str) -> tuple[str, ...]:
    if "[" not in value and "]" not in value and "," not in value:
        return (value,)  # one host: nothing to expand
    try:
        return tuple(hostlist.expand_hostlist(value))
    except hostlist.BadHostlist as e:
        raise ValueError(f"bad hostlist {value!r}: {e}") from None


def parse_tres(text: str | None) -> dict[str, str]:
    """``cpu=8,mem=64G,gres/gpu=8`` -> {"cpu": "8", "mem": "64G", "gres/gpu": "8"}; empty -> {}.

    Raises:
        ValueError: an item without ``=``.
    """
    value = clean(text)
    if value is None:
        return {}
    out: dict[str, str] = {}
    for item in value.split(","):
        if not item:
            continue
        key, sep, val = item.partition("=")
        if not sep:
            raise ValueError(f"bad TRES item {item!r}")
        out[key.strip()] = val.strip()
    return out


@lru_cache(maxsize=1 << 14)
def tres_gpus(text: str | None) -> int | None:
    """GPU count from a TRES string: ``gres/gpu=8``, else the sum of typed ``gres/gpu:a100=4``.

    Returns None when the string names no GPUs.

    Raises:
        ValueError: malformed TRES or a non-integer GPU count.
    """
    tres = parse_tres(text)
    if "gres/gpu" in tres:
        return _int(tres["gres/gpu"], "gres/gpu")
    typed = [_int(v, k) for k, v in tres.items() if k.startswith("gres/gpu:")]
    return sum(typed) if typed else None


_GRES_ITEM = re.compile(r"^(?:gres[:/])?gpu(?::([^:(]+))?(?::(\d+))?(?:\(.*\))?$")


@lru_cache(maxsize=1 << 14)
def gres_gpus(text: str | None) -> int | None:
    """GPU count from a GRES string.

    Accepts ``gpu:4``, ``gpu:a100:8(S:0-1)``, ``gpu:a100:2(IDX:0-1)``, ``gres:gpu:2``,
    ``gres/gpu:2`` and comma lists mixing GPU types and other GRES (``gpu:l40s:4,tmpsize:7T``).
    A bare ``gpu`` or ``gpu:a100`` counts 1, as in a request. Returns None when no GPU is named.
    """
    value = clean(text)
    if value is None:
        return None
    total: int | None = None
    # split on commas outside parentheses: "gpu:a:1(IDX:0,2),gpu:b:1"
    for item in re.split(r",(?![^(]*\))", value):
        item = item.strip()
        match = _GRES_ITEM.match(item)
        if not match:
            continue
        kind, count = match.groups()
        if count is None and kind is not None and kind.isdigit():
            count, kind = kind, None
        total = (total or 0) + (int(count) if count is not None else 1)
    return total


def mem_to_mib(text: str | None) -> int | None:
    """``2000M`` / ``64G`` / ``1T`` / ``2000`` (MiB) -> MiB; empty -> None.

    Raises:
        ValueError: any other text.
    """
    value = clean(text)
    if value is None:
        return None
    match = re.match(r"^(\d+(?:\.\d+)?)([KMGTP]?)$", value)
    if not match:
        raise ValueError(f"bad memory size {value!r}")
    number, unit = float(match.group(1)), match.group(2)
    factor = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}[unit]
    return int(number * factor)


def parse_int(text: str | None, *, lenient: bool = False) -> int | None:
    """An integer cell; None when empty/None/N/A. ``lenient`` turns an unparseable cell into None.

    Raises:
        ValueError: a cell that is not an integer (unless ``lenient``).
    """
    value = clean(text)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        if lenient:
            return None
        raise ValueError(f"expected an integer, got {value!r}") from None


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what}: expected an integer, got {text!r}") from None
