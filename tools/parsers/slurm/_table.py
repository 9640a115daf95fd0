"""Header-driven splitting of Slurm's text tables (squeue, sinfo, sinfo -R, sacct); private.

Slurm prints three kinds of table:

* delimited (``squeue -o "%i|%j"``, ``sacct -p``/``--parsable2``): cells split on ``|``;
* fixed-width with an underline row (``sacct`` default): the ``----`` runs give each column's
  byte span (Slurm pads by bytes, so a name with ``ü`` shifts the characters of its row);
* whitespace-aligned (``squeue``, ``sinfo``, ``sinfo -R``): cells split on runs of blanks, where
  a few named columns (job name, reason) may hold blanks themselves.

Rows that do not fit the header raise ``ParseError`` naming the path and line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tools.errors import ParseError

__all__ = ["Header", "read_header", "split_row", "underline_spans", "split_fixed", "reason_tail", "DATE_LINE"]

_TOKEN = re.compile(r"\S+")
DATE_LINE = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d \d{4}$")
"""The date that ``squeue -l`` and ``sinfo -l`` print above the header (``Sun Nov 29 16:09:20 2026``)."""


@dataclass(frozen=True)
class Header:
    """Column names of a table (upper case, as printed) and how its rows are delimited."""

    names: list[str]
    line_no: int
    delimiter: str | None = None
    """``|`` for parsable output, None for blank-aligned columns."""


def read_header(line: str, line_no: int) -> Header:
    """Read a header line: ``|``-delimited when it holds a ``|``, else blank-separated."""
    stripped = line.strip()
    if "|" in stripped:
        names = stripped.split("|")
        if names and names[-1] == "":  # sacct -p ends every line with "|"
            names = names[:-1]
        return Header([n.strip().upper() for n in names], line_no, "|")
    return Header([n.upper() for n in stripped.split()], line_no, None)


TailRule = Callable[[list[re.Match[str]]], int | None]
"""Given a row's tokens, return the index of the token where the last column starts, or None."""


def reason_tail(tokens: list[re.Match[str]]) -> int | None:
    """Tail rule for squeue's NODELIST(REASON): a pending reason is ``(...)`` and may hold blanks."""
    if not tokens or not tokens[-1].group().endswith(")"):
        return None
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i].group().startswith("("):
            return i
    return None


def split_row(
    header: Header,
    line: str,
    line_no: int,
    *,
    path: str,
    free: Sequence[int] = (),
    tail_rule: TailRule | None = None,
    optional_last: bool = False,
) -> list[str]:
    """Split one data row into exactly ``len(header.names)`` cells.

    Args:
        free: indexes of columns whose values may contain blanks (at most one besides a last
            column handled by ``tail_rule``).
        tail_rule: how to find where the last column starts when it may hold blanks.
        optional_last: the last column may be missing (an empty NODELIST at the row's end).

    Raises:
        ParseError: when the row has too few or too many cells to fit the header.
    """
    n = len(header.names)
    if header.delimiter is not None:
        cells = line.rstrip("\n").split(header.delimiter)
        if len(cells) == n + 1 and cells[-1].strip() == "":
            cells = cells[:-1]
        if len(cells) != n:
            raise ParseError(path, line_no, f"expected {n} '|'-separated cells, found {len(cells)}")
        return [c.strip() for c in cells]

    tokens = list(_TOKEN.finditer(line))
    last_cell: str | None = None
    if tail_rule is not None and len(tokens) >= n:
        start = tail_rule(tokens)
        if start is not None and start >= n - 1:
            last_cell = line[tokens[start].start() : tokens[-1].end()]
            tokens = tokens[:start]
    if last_cell is None:
        if len(tokens) == n:
            return [t.group() for t in tokens]
        if len(tokens) < n:
            if optional_last and len(tokens) == n - 1:
                return [t.group() for t in tokens] + [""]
            raise ParseError(path, line_no, f"expected {n} columns ({' '.join(header.names)}), found {len(tokens)}")
    cols = n - 1 if last_cell is not None else n
    if len(tokens) == cols:
        cells = [t.group() for t in tokens]
    else:
        candidates = [i for i in free if i < cols]
        if len(candidates) != 1 or len(tokens) < cols:
            names = " ".join(header.names)
            raise ParseError(path, line_no, f"expected {n} columns ({names}), found {len(tokens)} words")
        f = candidates[0]
        after = cols - 1 - f
        middle = tokens[f : len(tokens) - after]
        cells = [t.group() for t in tokens[:f]]
        cells.append(line[middle[0].start() : middle[-1].end()])
        cells.extend(t.group() for t in tokens[len(tokens) - after :])
    if last_cell is not None:
        cells.append(last_cell)
    return cells


def underline_spans(line: str) -> list[tuple[int, int]] | None:
    """Byte spans of the ``-----`` runs of sacct's underline row, or None if it is not one."""
    stripped = line.rstrip()
    if not stripped or set(stripped) - {"-", " "}:
        return None
    return [(m.start(), m.end()) for m in re.finditer(r"-+", stripped)]


def split_fixed(line: str, spans: list[tuple[int, int]], line_no: int, *, path: str) -> list[str]:
    """Cut a fixed-width row into cells by byte spans (the last cell runs to the line's end).

    Raises:
        ParseError: a row that ends before its last two columns, or a cut that splits a character.
    """
    raw = line.rstrip("\n").encode("utf-8")
    if len(spans) > 1 and len(raw) <= spans[-2][0]:
        raise ParseError(path, line_no, f"row too short for {len(spans)} fixed-width columns")
    cells = []
    for i, (start, end) in enumerate(spans):
        chunk = raw[start:] if i == len(spans) - 1 else raw[start:end]
        try:
            cells.append(chunk.decode("utf-8").strip())
        except UnicodeDecodeError:
            raise ParseError(path, line_no, f"column {i + 1} cuts a multi-byte character") from None
    return cells
