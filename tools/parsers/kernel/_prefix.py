"""Line prefixes of kernel and system logs: timestamp, host, daemon tag and printed priority.

Shapes understood (the rest of the line is the message)::

    [ 1843.308145] msg                                   dmesg
    kern  :err   : [ 1843.308145] msg                    dmesg -x (facility:level)
    [Wed Mar  4 10:01:02 2026] msg                       dmesg -T
    Mar 04 10:01:02 gpu017 kernel: msg                   journalctl (-k or not), syslog
    Mar 04 10:01:02 gpu017 slurmd[1234]: msg             any daemon's tag
    2026-03-04T10:01:02+0000 gpu017 kernel: msg          journalctl -o short-iso / rsyslog
    <11>1 2026-03-04T10:01:02Z gpu017 mmfs 1234 - - msg   RFC 5424
    2026-03-04_10:01:02.123+0100: [E] msg                GPFS mmfs.log
    Mon Mar  4 10:01:02.123 2026: [E] msg                GPFS mmfs.log (older)
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Prefix", "split_prefix", "split_prefix_reference", "LEVELS"]

LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
"""syslog priorities 0-7 by number."""

_DMESG_X = r"(?:(?P<fac>kern|user|daemon|syslog|local\d)\s*:\s*(?P<lvl>emerg|alert|crit|err|warn|notice|info|debug)\s*:\s+)?"
_TAG = r"(?P<tag>[\w./@-]{1,64}?)(?:\[(?P<pid>\d{1,10})\])?:"
_GPFS_LEVEL = {"I": "info", "N": "notice", "W": "warning", "E": "err", "X": "crit", "D": "debug"}

_PATTERNS = [
    re.compile(r"^(?:<\d{1,3}>)?" + _DMESG_X + r"(?P<ts>\[\s*\d+\.\d+\])\s?(?P<msg>.*)$"),
    re.compile(r"^" + _DMESG_X + r"(?P<ts>\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? \d{4}\])\s?(?P<msg>.*)$"),
    re.compile(r"^(?P<ts>\w{3} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?) (?P<host>\S+) " + _TAG
               + r" ?(?:\[\s*\d+\.\d+\] )?(?P<msg>.*)$"),
    re.compile(r"^(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?) (?P<host>\S+) " + _TAG
               + r" ?(?:\[\s*\d+\.\d+\] )?(?P<msg>.*)$"),
    re.compile(r"^<(?P<pri>\d{1,3})>1 (?P<ts>\S+) (?P<host>\S+) (?P<tag>\S+) (?P<pid>\S+) \S+ (?:-|\[.*?\]) ?(?P<msg>.*)$"),
    re.compile(r"^(?P<ts>\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d{4})?): (?P<msg>.*)$"),
    re.compile(r"^(?P<ts>\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? \d{4}): (?P<msg>.*)$"),
]
_GPFS_TAG = re.compile(r"^\[(?P<l>[INWEXD])\] ")
_DMESG_T = _PATTERNS[1]
_BRACKET = (_PATTERNS[0], _PATTERNS[1])
"""The patterns a line starting with ``[`` can match (no facility:level, no ``<PRI>`` before it)."""
_ANGLE = (_PATTERNS[0], _PATTERNS[4])
"""The patterns a line starting with ``<`` can match."""


class Prefix(NamedTuple):
    """What a line's prefix says (a tuple: one is made per candidate line, 130,000 at 10,000 nodes)."""

    timestamp: str | None
    host: str | None
    source: str
    """Daemon tag (``kernel`` when none is printed: dmesg lines are the kernel's)."""
    level: str | None
    """Printed priority (``err``, ``warning`` ...), None when the line does not print one."""
    message: str
    continuation: bool
    """An indented line without a prefix (dmesg prints multi-line NVRM messages so)."""


def _source(tag: str | None) -> str:
    if not tag:
        return "kernel"
    tag = tag.rsplit("/", 1)[-1]
    return "kernel" if tag == "kernel" else tag[:40]


def split_prefix(line: str) -> Prefix:
    """Split one raw line into its prefix parts and message (see module docstring)."""
    # Only the dmesg shapes can start with "[" and only they and RFC 5424 with "<" (every other pattern
    # needs a word or digit character first), so those lines try those patterns alone; the rest try all.
    first = line[:1]
    patterns = _BRACKET if first == "[" else _ANGLE if first == "<" else _PATTERNS
    for rx in patterns:
        m = rx.match(line)
        if m is None:
            continue
        if rx is _DMESG_T and m.group("lvl") is None:  # the commonest shape (dmesg -T): no tag, no priority
            msg = m.group("msg").strip()
            if msg[:1] == "[":
                return _gpfs(m.group("ts"), None, None, "kernel", None, msg)
            return Prefix(m.group("ts"), None, "kernel", None, msg, False)
        g = m.groupdict()
        msg = g["msg"].strip()
        level = g.get("lvl")
        if level == "warn":
            level = "warning"
        if g.get("pri"):
            level = LEVELS[int(g["pri"]) % 8]
        return _gpfs(g["ts"], g.get("host"), g.get("tag"), _source(g.get("tag")), level, msg)
    return Prefix(None, None, "kernel", None, line.strip(), line[:1].isspace())


def _gpfs(ts: str | None, host: str | None, tag: str | None, source: str, level: str | None, msg: str) -> Prefix:
    gp = _GPFS_TAG.match(msg)
    if gp:  # GPFS severity tags [I]/[N]/[W]/[E]/[X]
        level = level or _GPFS_LEVEL[gp["l"]]
        if source == "kernel" and tag is None:
            source = "mmfs"
        msg = msg[gp.end():]
    return Prefix(ts, host, source, level, msg, False)


def split_prefix_reference(line: str) -> Prefix:
    """``split_prefix`` as it read every line before its fast paths (what tests compare it with)."""
    for rx in _PATTERNS:
        m = rx.match(line)
        if not m:
            continue
        g = m.groupdict()
        msg = g["msg"].strip()
        level = g.get("lvl")
        if level == "warn":
            level = "warning"
        if g.get("pri"):
            level = LEVELS[int(g["pri"]) % 8]
        source = _source(g.get("tag"))
        gp = _GPFS_TAG.match(msg)
        if gp:  # GPFS severity tags [I]/[N]/[W]/[E]/[X]
            level = level or _GPFS_LEVEL[gp["l"]]
            if source == "kernel" and g.get("tag") is None:
                source = "mmfs"
            msg = msg[gp.end():]
        return Prefix(timestamp=g["ts"], host=g.get("host"), source=source, level=level, message=msg,
                      continuation=False)
    return Prefix(timestamp=None, host=None, source="kernel", level=None, message=line.strip(),
                  continuation=line[:1].isspace())
