"""Parser for `lctl get_param mdt.*.md_stats` (format lctl-md-stats).

Shape (one block per MDT; several blocks per file)::

    mdt.lustre-MDT0000.md_stats=
    snapshot_time             1688603042.554807135 secs.nsecs
    start_time                1688526476.886354714 secs.nsecs      # Lustre >= 2.15
    elapsed_time              76565.668452421 secs.nsecs           # Lustre >= 2.15
    open                      3 samples [usecs] 686 16407 18634 272034926
    getattr                   23 samples [reqs]

Older Lustre prints ``secs.usecs`` and rows with only ``N samples [reqs]``; newer prints
min/max/sum/sumsq after the unit. Real shapes: Lustre manual, whamcloud/lustre-collector fixtures,
influxdata/telegraf lustre2 test cases (see tests/fixtures/lctl-md-stats/SOURCES.md).
"""

from __future__ import annotations

import re

from tools.errors import ParseError
from tools.models.lustre import MdtStats

__all__ = ["parse_lctl_md_stats"]

_HEADER = re.compile(r"^(?P<param>(?P<prefix>[\w-]+)\.(?P<target>[^\s=]+)\.md_stats)=(?P<rest>.*)$")
_TIME = re.compile(r"^(?P<key>snapshot_time|start_time|elapsed_time):?\s+(?P<value>\d+(?:\.\d+)?)(?:\s+secs\.\w+)?\s*$")
_ROW = re.compile(
    r"^(?P<op>[A-Za-z_][\w]*)\s+(?P<samples>\d{1,24})\s+samples\s+\[(?P<unit>[^\]]+)\]"
    r"(?:\s+(?P<min>\d{1,24})\s+(?P<max>\d{1,24})\s+(?P<sum>\d{1,24})(?:\s+(?P<sumsq>\d{1,40}))?)?\s*$"
)


def _apply_line(stats: MdtStats, line: str, *, path: str, lineno: int) -> None:
    """Fold one non-header line into ``stats``; raise ParseError when it is not a stats line."""
    m = _TIME.match(line)
    if m:
        value = float(m["value"])
        if m["key"] == "snapshot_time":
            stats.snapshot_time_s = value
        elif m["key"] == "elapsed_time":
            stats.elapsed_s = value
        return
    m = _ROW.match(line)
    if not m:
        raise ParseError(path, lineno, f"not an md_stats row: {line[:120]!r}")
    op = m["op"]
    stats.counters[op] = int(m["samples"])
    stats.units[op] = m["unit"]
    if m["sum"] is not None:
        stats.sums[op] = int(m["sum"])


def parse_lctl_md_stats(text: str, *, path: str, node: str | None = None) -> list[MdtStats]:
    """Parse `lctl get_param mdt.*.md_stats` (format lctl-md-stats).

    Returns one MdtStats per MDT block, in file order; ``counters`` are sample counts (requests)
    since the stats were cleared, ``snapshot_time_s`` is the Unix time of the snapshot (s) and
    ``elapsed_s`` the time the counters cover (s) when Lustre prints ``elapsed_time``.

    ``node`` is the MDS the stats were read on (kept as each record's ``server``).

    Raises:
        ParseError: naming path and line when a row is malformed, or when stats rows appear
            before any ``<param>.md_stats=`` header.
    """
    result: list[MdtStats] = []
    current: MdtStats | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        header = _HEADER.match(line)
        if header:
            current = MdtStats(target=header["target"], param=header["param"], server=node)
            result.append(current)
            rest = header["rest"].strip()
            if rest:
                _apply_line(current, rest, path=path, lineno=lineno)
            continue
        if current is None:
            raise ParseError(path, lineno, "md_stats row before any '<param>.md_stats=' header")
        _apply_line(current, line, path=path, lineno=lineno)
    if not result:
        raise ParseError(path, None, "no '<param>.md_stats=' block found")
    return result
