"""Parse ``sinfo -R`` (format id ``sinfo-reasons-text``): why nodes are down, drained or failing.

Default layout ``REASON USER TIMESTAMP NODELIST`` (``%20E %9u %19H %N``; the reason is cut at
20 characters), or a wider ``-o "%50E %9u %19H %N"``. The reason holds blanks, so it takes every
word left once USER, TIMESTAMP and NODELIST have one each; the header names the columns.
"""

from __future__ import annotations

from tools.errors import ParseError
from tools.models.slurm import NodeReason
from tools.parsers.slurm._table import read_header, split_row
from tools.parsers.slurm._values import clean, expand_nodes, parse_timestamp

__all__ = ["parse_sinfo_reasons_text"]

_KNOWN = {"REASON", "USER", "TIMESTAMP", "NODELIST", "HOSTNAMES", "STATE"}


def parse_sinfo_reasons_text(text: str, *, path: str) -> list[NodeReason]:
    """Parse ``sinfo -R`` into one NodeReason per row.

    ``reason`` as printed (possibly truncated), ``user`` (None when empty), ``timestamp`` read as
    UTC (None for ``Unknown``), ``nodes`` hostlist-expanded.

    Raises:
        ParseError: naming path and line when the header is missing, a row does not fit it, or
            a timestamp or hostlist is malformed.
    """
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise ParseError(path, None, "file is empty")
    header = read_header(lines[first], first + 1)
    if "REASON" not in header.names or not set(header.names) <= _KNOWN:
        raise ParseError(path, first + 1, f"not an sinfo -R header: {lines[first].strip()[:60]!r}")
    free = [header.names.index("REASON")]
    reasons = []
    for index in range(first + 1, len(lines)):
        line = lines[index]
        if not line.strip():
            continue
        row = dict(zip(header.names, split_row(header, line, index + 1, path=path, free=free)))
        try:
            reasons.append(
                NodeReason(
                    reason=row["REASON"].strip(),
                    user=clean(row.get("USER")),
                    timestamp=parse_timestamp(row.get("TIMESTAMP")),
                    nodes=expand_nodes(row.get("NODELIST") or row.get("HOSTNAMES")),
                )
            )
        except ValueError as e:
            raise ParseError(path, index + 1, str(e)) from None
    return reasons
