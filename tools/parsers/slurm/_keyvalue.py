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



@dataclass
class Record:
    """One scontrol record: its first line number and its keys (first occurrence wins)."""

    line_no: int
    values: dict[str, str] = field(default_factory=dict)


def read_records(text: str, *, path: str, first_key: str, rest_of_line: frozenset[str]) -> list[Record]:
    """Split scontrol output into records keyed by ``first_key`` (``JobId`` or ``NodeName``).

    One pass over the lines, a ``str.split`` per line; each distinct key's spelling is checked
    once (scontrol prints the same few dozen keys in every record).

    Raises:
        ParseError: text outside a record, a record that does not start with ``first_key=``,
            or a line that is not key=value.
    """
    records: list[Record] = []
    current: Record | None = None
    open_key: str | None = None
    """A free-text key that ended the previous line: scontrol prints a job name holding a newline
    verbatim, so the next unindented line continues it."""
    start = first_key + "="
    for number, line in enumerate(text.splitlines(), start=1):
        if not line or line.isspace():
            open_key = None
            continue  # blank lines separate records, but 23.x also prints one inside a node record
        # A record starts after a blank line; a "JobId=" right after an open free-text value is
        # still that value (a job named "x\nJobId=1 ..." must not forge a record).
        if line.startswith(start) and (current is None or open_key is None):
            current = Record(number)
            records.append(current)
        elif current is None:
            raise ParseError(path, number, f"expected a record starting with {first_key}=, got {line.strip()[:60]!r}")
        elif not line[:1].isspace():
            if open_key is None:
                raise ParseError(path, number, f"unindented line inside a {first_key} record")
            current.values[open_key] += "\n" + line.rstrip()
            continue
        open_key = _read_line(line, number, current.values, path=path, rest_of_line=rest_of_line)
    if not records:
        raise ParseError(path, None, f"no {first_key}= records")
    return records


_KEY_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_:/.()\-]*")
_COUNTER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_/]*")
_good_keys: set[str] = set()


def _key_ok(key: str) -> bool:
    if key in _good_keys:
        return True
    if _KEY_NAME.fullmatch(key):
        if len(_good_keys) < 4096:
            _good_keys.add(key)
        return True
    return False


def _read_line(line: str, number: int, values: dict[str, str], *, path: str, rest_of_line: frozenset[str]) -> str | None:
    """Read one line's key=value words into ``values`` (a record's; first occurrence wins); return the
    free-text key that ends the line (its value runs to the line's end), if any.

    Raises:
        ParseError: a word that is neither key=value nor a Key:value counter (naming ``number``).
    """
    good = _good_keys
    seen = 0  # characters of the words before this one: where it can start at the earliest
    for word in line.split():
        key, eq, value = word.partition("=")
        if eq and (key in good or _key_ok(key)):
            if key in rest_of_line:
                pos = line.find(word, seen)
                while pos > 0 and not line[pos - 1].isspace():  # inside an earlier word's value
                    pos = line.find(word, pos + 1)
                if key not in values:
                    values[key] = line[pos + len(key) + 1:].rstrip()
                return key
            if key not in values:
                values[key] = value
            seen += len(word)
            continue
        seen += len(word)
        key, colon, value = word.partition(":")
        if not (colon and not eq and _COUNTER_NAME.fullmatch(key)):
            raise ParseError(path, number, f"expected key=value, got {word[:40]!r}")
        if key not in values:  # scontrol prints a few counters as Key:value (NtasksPerTRES:0)
            values[key] = value
    return None
