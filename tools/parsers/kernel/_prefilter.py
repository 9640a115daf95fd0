"""Which lines of a kernel/system log can be events, found over the whole text at once (performance only).

A node's dmesg is mostly boot and driver chatter that no classifier in this package takes; at 10,000
nodes that is hundreds of thousands of lines, each of which would otherwise go through the prefix
patterns and every classifier. ``candidate_lines`` runs one compiled alternation of keywords over the
lowered text and returns the line numbers that contain one; tools.parsers.kernel.kernel_log classifies
only those (and the line after an open multi-line message, whatever it holds).

The keywords are a superset of what each classifier needs to take a line: every rule in _gpu, _host,
_net and _storage requires (case-insensitively) one of these words in the message or in the daemon tag
(the tag is on the same raw line), and every printed priority of err or worse (``kern  :err   :``, an
RFC 5424 ``<N>`` prefix, a GPFS ``[E]``/``[X]`` tag) is a keyword too. A rule added to a classifier
must add its word here; tests/unit/tools/parsers/test_kernel_log_prefilter.py parses every fixture
and bundled snapshot with and without this filter and fails on any difference.

The filter is used only where lowering is exact and line numbers are cheap: ASCII text whose only
line break is ``\\n``. Python's case-insensitive matching also folds a few non-ASCII letters onto
ASCII ones (the Kelvin sign, the long s, dotted and dotless i), and ``str.splitlines`` breaks at
``\\r``, ``\\v``, ``\\f`` and more; any such text is classified line by line, as before.
"""

from __future__ import annotations

import re

from tools.parsers.keywords import any_word

__all__ = ["KEYWORDS", "candidate_lines", "candidate_lines_reference"]

KEYWORDS: tuple[str, ...] = (
    # _gpu: NVRM Xid / ECC / driver / lost-GPU lines, nvidia-smi's device-handle error, GPU-stack daemons
    "nvrm", "device handle", "nvidia", "nv-", "fabric", "dcgm",
    # _storage: Lustre/LNet, NFS, GPFS (tag, text, message numbers), BeeGFS, stale handles
    "lustre", "lnet", "nfs", "gpfs", "mmfs", "mmsysmon", "6027-", "beegfs", "stale", "ceph",
    # _host: OOM kills, hung tasks, slurmd/slurmstepd/SPANK, host faults
    "kill", "blocked for more than", "slurm", "hugepages_total", "spank", "panic", "hardware error", "lockup", "machine check",
    "edac", "oops", "bug:", "uncorrect", "temperature above threshold", "dmar", "io_page_fault",
    # _storage: a file-system client module that will not load against the running kernel
    "unknown symbol", "disagrees about version",
    # _net: InfiniBand/Ethernet links, cable modules, NVSwitch SXids, PCIe AER and degraded links
    "link", "carrier", "module event", "sxid", "pcie", "aer",
    # error_level: printed priorities and GPFS severity tags
    "emerg", "alert", "crit", "err", "[e] ", "[x] ",
    # error_level: the error words of an unprioritised line (_host._ERROR_WORDS)
    "fail", "fatal", "time", "unable", "cannot", "can't", "corrupt", "abort", "segfault", "refused",
    "unreachable", "lost", "exception", "offline", "not responding", "denied", "stuck", "call trace",
    "no space left", "disk is full", "quota exceeded",
    # _storage: a node that cannot mount a file system type (no mount helper or module), autofs mount failures
    "bad option", "unknown filesystem type", "no such device", "mount failure",
    # error_level: a time service that lost its sources (chronyd, ntpd)
    "unsynchroni", "no servers can be used", "no selectable sources",
)
"""Lowercase words one of which every line that can be an event holds (see the module docstring)."""

_GPFS_TAGS = ("[i] ", "[n] ", "[w] ", "[d] ")
"""A GPFS mmfs.log severity tag makes the line's source ``mmfs`` (a GPFS rule then applies) even when
no other word says GPFS."""



_ANY = any_word(KEYWORDS + _GPFS_TAGS)
_OTHER_BREAKS = re.compile(r"[\r\x0b\x0c\x1c\x1d\x1e]")
_STAMP = re.compile(r"\[(?:\s*\d+\.\d+|(?:mon|tue|wed|thu|fri|sat|sun) (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
                    r" [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? \d{4})\] ?")
"""A lowered dmesg / dmesg -T timestamp at a line's start: no keyword lies in it or starts in it (its words are
day and month names; tests/unit/tools/parsers/test_kernel_log_prefilter.py holds that for every keyword), so
such a line holds a keyword exactly when the rest of it does."""
_MEMO_MAX = 1 << 16
_seen: dict[str, bool] = {}
"""Whether a line's text after its timestamp holds a keyword: a cluster's nodes print the same boot, driver and
link lines with other timestamps (10,000 kernel logs at 10,000 nodes), so each text is searched once."""


def candidate_lines(text: str) -> set[int] | None:
    """The 1-based numbers (as ``enumerate(text.splitlines(), 1)`` counts) of the lines holding a keyword,
    or None when the text is not plain ASCII with ``\\n`` line breaks (every line must then be read)."""
    if not text.isascii() or _OTHER_BREAKS.search(text):
        return None
    found: set[int] = set()
    search, stamp, seen = _ANY.search, _STAMP.match, _seen
    for lineno, line in enumerate(text.lower().split("\n"), start=1):
        m = stamp(line)
        if m is None:
            if line[:1] == "<" or search(line) is not None:  # "<": an RFC 5424 <PRI> (any priority may be err or worse)
                found.add(lineno)
            continue
        rest = line[m.end():]
        hit = seen.get(rest)
        if hit is None:
            hit = search(rest) is not None
            if len(seen) < _MEMO_MAX:
                seen[rest] = hit
        if hit:
            found.add(lineno)
    return found


def candidate_lines_reference(text: str) -> set[int] | None:
    """``candidate_lines`` as one search over the whole text, without the memo (what tests compare it with)."""
    if not text.isascii() or _OTHER_BREAKS.search(text):
        return None
    low = text.lower()
    found: set[int] = set()
    search, count, find = _ANY.search, low.count, low.find
    lineno, counted = 1, 0
    pos = 0
    while (m := search(low, pos)) is not None:
        start = m.start()
        lineno += count("\n", counted, start)
        counted = start
        found.add(lineno)
        end = find("\n", start)
        if end < 0:
            break
        pos = end + 1  # one hit is enough: go on from the next line
    if low.startswith("<"):  # an RFC 5424 <PRI> (any priority may be err or worse)
        found.add(1)
    at, lineno, counted = find("\n<"), 1, 0
    while at >= 0:
        lineno += count("\n", counted, at + 1)
        counted = at + 1
        found.add(lineno)
        at = find("\n<", at + 1)
    return found
