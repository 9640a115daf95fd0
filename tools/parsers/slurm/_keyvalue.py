"""Reading ``scontrol show job|node`` key=value records (private to the Slurm parsers).

scontrol prints one record per object: the first line starts with ``JobId=`` / ``NodeName=`` at
column 0, continuation lines are indented, and records are separated by blank lines (lines of
blanks; an indented line after a blank line still belongs to the record above). Keys are words
such as ``CPUs/Task``, ``ReqB:S:C:T`` or ``MCS_label``. Most values have
no blanks; the free-text keys (``JobName``, ``Comment``, ``Command``, ``WorkDir``, ``StdOut``,
``Reason`` of a node, ``OS``...) run to the end of their line, which is how scontrol prints them
(each is the last key of its line). Any other word without ``=`` (a line cut short) is an error,
except scontrol's few ``Key:value`` counters such as ``NtasksPerTRES:0``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tools.errors import ParseError

__all__ = ["Record", "read_records"]

_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9_:/.()\-]*)=(.*)$", re.S)
_COLON = re.compile(r"^([A-Za-z][A-Za-z0-9_/]*):(\S*)$")


@dataclass
class Record:
    """One scontrol record: its first line number and its keys (first occurrence wins)."""

    line_no: int
    values: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    """Line number of each key, for error messages."""


def read_records(text: str, *, path: str, first_key: str, rest_of_line: frozenset[str]) -> list[Record]:
    """Split scontrol output into records keyed by ``first_key`` (``JobId`` or ``NodeName``).

    Raises:
        ParseError: text outside a record, a record that does not start with ``first_key=``,
            or a line that is not key=value.
    """
    records: list[Record] = []
    current: Record | None = None
    open_key: str | None = None
    """A free-text key that ended the previous line: scontrol prints a job name holding a newline
    verbatim, so the next unindented line continues it."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            open_key = None
            continue  # blank lines separate records, but 23.x also prints one inside a node record
        # A record starts after a blank line; a "JobId=" right after an open free-text value is
        # still that value (a job named "x\nJobId=1 ..." must not forge a record).
        starts = line.startswith(first_key + "=") and (current is None or open_key is None)
        if starts:
            current = Record(number)
            records.append(current)
        elif current is None:
            raise ParseError(path, number, f"expected a record starting with {first_key}=, got {line.strip()[:60]!r}")
        elif not line[:1].isspace():
            if open_key is None:
                raise ParseError(path, number, f"unindented line inside a {first_key} record")
            current.values[open_key] += "\n" + line.rstrip()
            continue
        _read_line(line, number, current, path=path, rest_of_line=rest_of_line)
        open_key = _rest_key_of(line, rest_of_line)
    if not records:
        raise ParseError(path, None, f"no {first_key}= records")
    return records


def _rest_key_of(line: str, rest_of_line: frozenset[str]) -> str | None:
    """The free-text key whose value runs to the end of ``line``, if any."""
    for match in re.finditer(r"\S+", line):
        kv = _KEY.match(match.group())
        if kv and kv.group(1) in rest_of_line:
            return kv.group(1)
    return None


def _read_line(line: str, number: int, record: Record, *, path: str, rest_of_line: frozenset[str]) -> None:
    for match in re.finditer(r"\S+", line):
        word = match.group()
        kv = _KEY.match(word)
        if kv and kv.group(1) in rest_of_line:
            value = line[match.start() + len(kv.group(1)) + 1 :].rstrip()
            _set(record, kv.group(1), value, number)
            return
        if kv:
            _set(record, kv.group(1), kv.group(2), number)
            continue
        colon = _COLON.match(word)
        if colon:  # scontrol prints a few counters as Key:value (NtasksPerTRES:0)
            _set(record, colon.group(1), colon.group(2), number)
            continue
        raise ParseError(path, number, f"expected key=value, got {word[:40]!r}")


def _set(record: Record, key: str, value: str, number: int) -> None:
    if key not in record.values:
        record.values[key] = value
        record.lines[key] = number
