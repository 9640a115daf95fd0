"""Parser for `lctl get_param mdt.*.job_stats` / `obdfilter.*.job_stats` (format lctl-job-stats).

Shape (one block per target; the body is YAML)::

    mdt.lustre-MDT0000.job_stats=
    job_stats:
    - job_id:          4242
      snapshot_time:   1461772761                      # newer: 1689870512.12 secs.nsecs
      start_time:      1689870500.00 secs.nsecs         # Lustre >= 2.15 only
      elapsed_time:    12.12 secs.nsecs                 # Lustre >= 2.15 only
      open:            { samples:    5, unit:  reqs }   # newer: unit usecs, min/max/sum/sumsq
      write_bytes:     { samples:   25, unit: bytes, min: 1048576, max: 16777216, sum: 26214400 }

A target with no jobs prints ``obdfilter.lustre-OST0000.job_stats=job_stats:`` on one line.
``job_id`` is whatever jobid_name produced: a Slurm job id, ``procname.uid`` (``dd.0``), or
``%j:%u:%H`` forms. Real shapes: Lustre manual, influxdata/telegraf lustre2 test cases,
whamcloud/lustre-collector (see tests/fixtures/lctl-job-stats/SOURCES.md).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from tools.errors import ParseError
from tools.models.lustre import JobStatsEntry

_LOADER = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
"""libyaml's BaseLoader when PyYAML has it (a large MDS's job_stats read 20x faster), same results."""

__all__ = ["parse_lctl_job_stats"]

_HEADER = re.compile(r"^(?P<prefix>mdt|obdfilter)\.(?P<target>[^\s=]+)\.job_stats=(?P<rest>.*)$")
_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)")


def _seconds(value: Any, *, path: str, line: int, key: str) -> float | None:
    if value is None:
        return None
    m = _TIME.match(str(value))
    if not m:
        raise ParseError(path, line, f"{key} is not a time in seconds: {str(value)[:60]!r}")
    return float(m.group(1))


def _int(value: Any, *, path: str, line: int, what: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise ParseError(path, line, f"{what} is not an integer: {str(value)[:60]!r}") from None


def _entry(item: Any, *, target: str, kind: str, path: str, line: int) -> JobStatsEntry:
    if not isinstance(item, dict) or "job_id" not in item:
        raise ParseError(path, line, "job_stats entry without job_id")
    entry = JobStatsEntry(
        target=target,
        kind=kind,
        job_id=str(item["job_id"]),
        snapshot_time_s=_seconds(item.get("snapshot_time"), path=path, line=line, key="snapshot_time"),
        elapsed_s=_seconds(item.get("elapsed_time"), path=path, line=line, key="elapsed_time"),
    )
    for op, stat in item.items():
        if not isinstance(stat, dict) or "samples" not in stat:
            continue
        entry.ops[op] = _int(stat["samples"], path=path, line=line, what=f"{op} samples")
        unit = str(stat.get("unit", "")).strip()
        if "sum" in stat and unit == "bytes":
            entry.bytes[op] = _int(stat["sum"], path=path, line=line, what=f"{op} sum")
        elif "sum" in stat and unit in ("usecs", "usec"):
            entry.usecs[op] = _int(stat["sum"], path=path, line=line, what=f"{op} sum")
    return entry


_PLAIN = r"[A-Za-z0-9_.](?:[A-Za-z0-9_.:+\-]*[A-Za-z0-9_.+\-])?"
"""A YAML plain scalar that means the same to every YAML reader: no indicator first, no comment, no
``:`` at its end; ``_FLOW_WORD`` the same without any ``:`` (an indicator inside flow mappings)."""
_FLOW_WORD = r"[A-Za-z0-9_.][A-Za-z0-9_.+\-]*"
_JOB_LINE = re.compile(r"- job_id: +(" + _PLAIN + r") *")
_KEY_LINE = re.compile(r"  ([a-z_]+): +(" + _PLAIN + r"(?: " + _PLAIN + r")*) *")
_FLOW_LINE = re.compile(r"  ([a-z_]+): +\{ *((?:[a-z_]+: +" + _FLOW_WORD + r" *, *)*[a-z_]+: +" + _FLOW_WORD + r") *\} *")
_FLOW_PAIR = re.compile(r"([a-z_]+): +(" + _FLOW_WORD + r")")


def _plain_items(lines: list[str]) -> list[dict[str, Any]] | None:
    """The entries of a body of the shape every Lustre version prints (``job_stats:``, then ``- job_id:``
    lines each followed by ``  key: value`` and ``  op: { samples: N, ... }`` lines of plain words), read
    with one regex per line: what libyaml's BaseLoader builds from it (every scalar a string, a repeated
    key's last value kept), about twenty times faster on a large MDS. None for anything else (quotes,
    comments, other indentation, blank lines inside): the caller then reads it as YAML."""
    end = len(lines)
    while end and not lines[end - 1]:
        end -= 1  # trailing empty lines (the file's last newline) mean nothing to YAML
    if end < 2 or lines[0] != "job_stats:":
        return None  # (an empty target's bare "job_stats:" is YAML's to read: a few of them per file)
    items: list[dict[str, Any]] = []
    job, key, flow, pair = _JOB_LINE.fullmatch, _KEY_LINE.fullmatch, _FLOW_LINE.fullmatch, _FLOW_PAIR.findall
    for i in range(1, end):
        line = lines[i]
        if line.startswith("- "):
            m = job(line)
            if m is None:
                return None
            items.append({"job_id": m.group(1)})
        elif not items:
            return None
        elif (m := key(line)) is not None:
            items[-1][m.group(1)] = m.group(2)
        elif (m := flow(line)) is not None:
            items[-1][m.group(1)] = dict(pair(m.group(2)))
        else:
            return None
    return items


def _parse_block(
    lines: list[str], first_line: int, *, target: str, kind: str, path: str
) -> list[JobStatsEntry]:
    body = "\n".join(lines)
    if not body.strip():
        return []
    items = _plain_items(lines)
    if items is not None:
        starts = [first_line + i for i, text in enumerate(lines) if text.startswith("- ")]
        return [_entry(item, target=target, kind=kind, path=path, line=starts[i]) for i, item in enumerate(items)]
    try:
        # BaseLoader keeps every scalar a string: job ids such as 4242 or 1e3 stay text.
        doc = yaml.load(body, Loader=_LOADER)  # noqa: S506 - BaseLoader builds only str/list/dict
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = first_line + mark.line if mark is not None else first_line
        problem = getattr(e, "problem", None) or "invalid YAML"
        raise ParseError(path, line, f"job_stats YAML: {problem}") from None
    if not isinstance(doc, dict) or "job_stats" not in doc:
        raise ParseError(path, first_line, "job_stats block does not start with 'job_stats:'")
    items = doc["job_stats"]
    if items in (None, ""):
        return []
    if not isinstance(items, list):
        raise ParseError(path, first_line, "job_stats is not a list of entries")
    # The n-th entry starts at the n-th line beginning with "- ": used for error line numbers.
    starts = [first_line + i for i, text in enumerate(lines) if text.startswith("- ")]
    return [
        _entry(item, target=target, kind=kind, path=path, line=starts[i] if i < len(starts) else first_line)
        for i, item in enumerate(items)
    ]


def parse_lctl_job_stats(text: str, *, path: str) -> list[JobStatsEntry]:
    """Parse `lctl get_param {mdt,obdfilter}.*.job_stats` (format lctl-job-stats).

    Returns one JobStatsEntry per (target, job_id), in file order. ``ops`` holds sample counts
    (requests) per operation; ``bytes`` the summed bytes of read_bytes/write_bytes; ``usecs`` the
    summed service time (us) where the unit is usecs; ``snapshot_time_s`` is Unix time (s) and
    ``elapsed_s`` the span the counters cover (s) on Lustre versions that print it.

    Raises:
        ParseError: naming path and line when a block is not valid job_stats YAML (including a
            file cut off mid-entry), an entry lacks job_id, or a count is not an integer.
    """
    # (target, kind, line number of body line 0, body lines)
    blocks: list[tuple[str, str, int, list[str]]] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(raw.strip())
        if header:
            kind = "MDT" if header["prefix"] == "mdt" else "OST"
            rest = header["rest"].strip()
            # "…job_stats=job_stats:" carries body line 0 on the header line itself.
            blocks.append((header["target"], kind, lineno if rest else lineno + 1, [rest] if rest else []))
            continue
        if not blocks:
            if raw.strip():
                raise ParseError(path, lineno, "text before any '<param>.job_stats=' header")
            continue
        blocks[-1][3].append(raw)
    if not blocks:
        raise ParseError(path, None, "no '<param>.job_stats=' block found")
    result: list[JobStatsEntry] = []
    for target, kind, first, lines in blocks:
        result.extend(_parse_block(lines, first, target=target, kind=kind, path=path))
    return result
