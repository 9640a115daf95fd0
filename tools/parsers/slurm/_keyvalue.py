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


def read_records(text: str, *, path: str, first_key: str, rest_of_line: frozenset[str],
                 fast: bool = True) -> list[Record]:
    """Split scontrol output into records keyed by ``first_key`` (``JobId`` or ``NodeName``).

    Records end at blank lines. A record of the usual shape is read at once (``_plain_record``); any other,
    and with ``fast=False`` every one, line by line (``_read_lines``): the same records either way, which
    tests/unit/tools/parsers/test_scontrol_fast.py holds on every recorded file. Each distinct key's
    spelling is checked once (scontrol prints the same few dozen keys in every record).

    Raises:
        ParseError: text outside a record, a record that does not start with ``first_key=``,
            or a line that is not key=value.
    """
    records: list[Record] = []
    start = first_key + "="
    if not fast or _OTHER_BREAKS.search(text):  # line breaks other than \n (splitlines' set): line by line
        _read_lines(text.splitlines(), 1, records, path=path, start=start, first_key=first_key,
                    rest_of_line=rest_of_line)
    else:
        number = 1
        for chunk in text.split("\n\n"):
            lead = len(chunk) - len(chunk.lstrip("\n"))
            body = chunk[lead:] if lead else chunk
            if body:
                values = _plain_record(body, start, rest_of_line)
                if values is not None:
                    records.append(Record(number + lead, values))
                else:
                    _read_lines(body.split("\n"), number + lead, records, path=path, start=start,
                                first_key=first_key, rest_of_line=rest_of_line)
            number += chunk.count("\n") + 2
    if not records:
        raise ParseError(path, None, f"no {first_key}= records")
    return records


_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
"""What str.splitlines breaks lines at besides \n."""
_UNINDENTED = re.compile(r"\n\S")


def _plain_record(body: str, start: str, rest_of_line: frozenset[str]) -> dict[str, str] | None:
    """The values of a record of the usual shape, read at once: what ``_read_lines`` reads from it, without its
    per-line and per-word steps. The shape: it starts with ``start``, its other lines are indented, every word
    is key=value with a key seen before, no key comes twice, and each free-text key's value is the last word
    of its line (no blank in it). None for anything else (the caller then reads it line by line)."""
    if not body.startswith(start) or _UNINDENTED.search(body):
        return None
    words = body.split()
    try:
        values = dict([w.split("=", 1) for w in words])
    except ValueError:  # a word without "=" (a Key:value counter, a cut line)
        return None
    if len(values) != len(words) or not _good_keys.issuperset(values):
        return None
    for key in rest_of_line.intersection(values):  # a free-text value runs to the end of its line
        at = body.find(key + "=")
        while at > 0 and not body[at - 1].isspace():  # inside an earlier word's value
            at = body.find(key + "=", at + 1)
        end = body.find("\n", at)
        if body[at + len(key) + 1:end if end >= 0 else len(body)].rstrip() != values[key]:
            return None
    return values


def _read_lines(lines: list[str], first_number: int, records: list[Record], *, path: str, start: str,
                first_key: str, rest_of_line: frozenset[str]) -> None:
    """Read ``lines`` (the first numbered ``first_number``) into ``records`` line by line, a ``str.split`` per
    line; a line that starts no record continues the last one (an indented line after a blank line still
    belongs to the record above)."""
    current: Record | None = records[-1] if records else None
    open_key: str | None = None
    """A free-text key that ended the previous line: scontrol prints a job name holding a newline
    verbatim, so the next unindented line continues it."""
    for number, line in enumerate(lines, start=first_number):
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
