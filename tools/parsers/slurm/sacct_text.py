"""Parse sacct's text output (format id ``sacct-text``).

Two layouts, told apart by the header:

* parsable: ``sacct -p`` (every line ends with ``|``) and ``--parsable2`` (no trailing ``|``);
* the default fixed-width table, whose second line underlines each column with ``-`` runs.
  Cells are cut at the underline's byte spans (sacct pads by bytes, so a multi-byte name
  shifts its row's characters but not its bytes). sacct truncates long values with ``+``
  (``tobecance+``, ``CANCELLED+``, ``6564055.bat+``): states and step ids are restored where
  unambiguous, other values are kept as printed.

Without a header (``sacct -n``), ``columns`` (the ``--format`` list, ``JobID,JobName,State``) names
the columns.
"""

from __future__ import annotations

import re

from tools.errors import ParseError
from tools.models.slurm import SacctRecord
from tools.parsers.slurm._states import job_state_from_words
from tools.parsers.slurm._table import Header, read_header, split_fixed, split_row, underline_spans
from tools.parsers.slurm._values import EMPTY_WORDS, clean, parse_int, expand_nodes, parse_duration_s, parse_timestamp, tres_gpus

__all__ = ["parse_sacct_text"]

_KNOWN = {
    "JOBID", "JOBIDRAW", "JOBNAME", "USER", "ACCOUNT", "PARTITION", "STATE", "EXITCODE", "ELAPSED",
    "TIMELIMIT", "SUBMIT", "START", "END", "NNODES", "NODELIST", "ALLOCTRES", "REQTRES", "MAXRSS",
    "ALLOCCPUS", "NCPUS", "ALLOCNODES", "CLUSTER", "QOS", "DERIVEDEXITCODE", "ELIGIBLE", "RESERVATION",
    "WORKDIR", "AVERSS", "MAXVMSIZE", "TOTALCPU", "CPUTIME", "REQMEM", "UID", "GROUP", "GID",
    "REASON", "NTASKS", "REQCPUS", "REQNODES", "TRESUSAGEINMAX", "CONSUMEDENERGY", "SUSPENDED",
    "PRIORITY", "COMMENT", "CONSTRAINTS", "FLAGS", "MAXRSSNODE", "MAXRSSTASK", "SUBMITLINE",
}
_STEP_NAMES = ("batch", "extern", "interactive")


def parse_sacct_text(text: str, *, path: str, columns: str | None = None) -> list[SacctRecord]:
    """Parse sacct text into one SacctRecord per row (job rows and step rows, as printed).

    ``elapsed_s``/``time_limit_s`` in seconds; times read as UTC (``Unknown`` -> None); ``nodes``
    hostlist-expanded (``None assigned`` -> []); ``num_gpus`` from AllocTRES ``gres/gpu=N``;
    ``max_rss_kib`` from MaxRSS (``3152K``, ``1.5G``).

    Raises:
        ParseError: naming path and line for a row that does not fit the header, a malformed
            value, or a file with neither a header nor ``columns``.
    """
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise ParseError(path, None, "file is empty")
    header = read_header(lines[first], first + 1)
    start = first + 1
    if not set(header.names) <= _KNOWN:
        if not columns:
            raise ParseError(path, first + 1, f"not a sacct header: {lines[first].strip()[:60]!r}")
        names = [c.split("%")[0].strip().upper() for c in columns.split(",") if c.strip()]
        header = Header(names, 0, "|" if "|" in lines[first] else None)
        start = first
    spans = None
    if header.delimiter is None and start < len(lines):
        spans = underline_spans(lines[start])
        if spans is not None:
            if len(spans) != len(header.names):
                raise ParseError(path, start + 1, f"underline has {len(spans)} columns, header {len(header.names)}")
            start += 1
    records = []
    for index in range(start, len(lines)):
        line = lines[index]
        if not line.strip():
            continue
        if spans is not None:
            cells = split_fixed(line, spans, index + 1, path=path)
        else:
            cells = split_row(header, line, index + 1, path=path)
        try:
            records.append(_record(dict(zip(header.names, cells))))
        except ValueError as e:
            raise ParseError(path, index + 1, str(e)) from None
    return records


def _v(value: str | None) -> str | None:
    """A cell (already stripped by the table splitter), None for Slurm's empty words."""
    return None if value is None or value in EMPTY_WORDS else value


def _record(row: dict[str, str]) -> SacctRecord:
    job_id = _v(row.get("JOBID") or row.get("JOBIDRAW"))
    if job_id is None:
        raise ValueError("row has no JobID")
    return SacctRecord(
        job_id=_restore_step(job_id),
        name=_v(row.get("JOBNAME")),
        user=_v(row.get("USER")),
        account=_v(row.get("ACCOUNT")),
        partition=_v(row.get("PARTITION")),
        state=job_state_from_words(_v(row.get("STATE"))),
        cancelled_by=_cancelled_by(_v(row.get("STATE"))),
        exit_code=_v(row.get("EXITCODE")),
        elapsed_s=parse_duration_s(row.get("ELAPSED")),
        time_limit_s=parse_duration_s(row.get("TIMELIMIT")),
        submit_time=parse_timestamp(row.get("SUBMIT")),
        start_time=parse_timestamp(row.get("START")),
        end_time=parse_timestamp(row.get("END")),
        nodes=expand_nodes(row.get("NODELIST")),
        num_nodes=parse_int(row.get("NNODES") or row.get("ALLOCNODES")),
        num_gpus=tres_gpus(row.get("ALLOCTRES")) if _v(row.get("ALLOCTRES")) else None,
        max_rss_kib=_kib(row.get("MAXRSS")),
    )


def _cancelled_by(state: str | None) -> str | None:
    """``CANCELLED by 61201`` -> ``61201``."""
    if not state or " by " not in state:
        return None
    who = state.split(" by ", 1)[1].strip().split()
    return who[0][:64] if who else None


def _restore_step(job_id: str) -> str:
    """``6564055.bat+`` -> ``6564055.batch`` (sacct's truncation of a well-known step name)."""
    if not job_id.endswith("+") or "." not in job_id:
        return job_id
    head, _, step = job_id[:-1].rpartition(".")
    matches = [name for name in _STEP_NAMES if name.startswith(step)]
    return f"{head}.{matches[0]}" if len(matches) == 1 else job_id



def _kib(text: str | None) -> int | None:
    """sacct memory (``3152K``, ``1.50G``, ``0``; bytes when no unit) -> KiB."""
    value = clean(text)
    if value is None:
        return None
    match = re.match(r"^(\d+(?:\.\d+)?)([KMGTP]?)$", value)
    if not match:
        raise ValueError(f"bad memory size {value!r}")
    number, unit = float(match.group(1)), match.group(2)
    factor = {"": 1 / 1024, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3, "P": 1024**4}[unit]
    return int(number * factor)
