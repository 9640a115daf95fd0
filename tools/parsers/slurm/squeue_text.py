"""Parse squeue's text output (format id ``squeue-text``).

Handles the default layout (``%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R``: JOBID PARTITION NAME
USER ST TIME NODES NODELIST(REASON)), ``-l`` (a date line, then STATE cut to 8 characters such as
``COMPLETI``), ``-o "..."`` layouts (blank- or ``|``-separated)
and ``-O`` layouts, by reading the header line. Without a header (``squeue -h``) the manifest's
``columns`` (``%i %P %j ...``) names the layout; with neither, the default layout is assumed.

A job name may contain blanks: in blank-separated layouts the NAME column takes the words left
over once every other column has one, and a pending reason ``(ReqNodeNotAvail, Reserved for
maintenance)`` is recognised by its parentheses. A row that still does not fit is a ParseError.
"""

from __future__ import annotations

import re

from tools.errors import ParseError
from tools.models.slurm import SlurmJob
from tools.parsers.slurm._states import job_state_from_words
from tools.parsers.slurm._table import DATE_LINE, Header, read_header, reason_tail, split_row
from tools.parsers.slurm._values import EMPTY_WORDS, clean, parse_int, expand_nodes, gres_gpus, parse_duration_s, parse_timestamp, tres_gpus

__all__ = ["parse_squeue_text", "DEFAULT_COLUMNS"]

DEFAULT_COLUMNS = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
"""squeue's default ``-o`` format (squeue(1), "default formats")."""

# -o field letter -> the header squeue prints for it
_LETTER_HEADERS = {
    "i": "JOBID", "A": "JOBID", "F": "ARRAY_JOB_ID", "K": "ARRAY_TASK_ID", "P": "PARTITION",
    "j": "NAME", "u": "USER", "a": "ACCOUNT", "t": "ST", "T": "STATE", "M": "TIME",
    "l": "TIME_LIMIT", "L": "TIME_LEFT", "D": "NODES", "C": "CPUS", "R": "NODELIST(REASON)",
    "N": "NODELIST", "r": "REASON", "q": "QOS", "Q": "PRIORITY", "V": "SUBMIT_TIME",
    "S": "START_TIME", "e": "END_TIME", "b": "TRES_PER_NODE", "Z": "WORK_DIR", "o": "COMMAND",
    "B": "EXEC_HOST", "v": "RESERVATION", "k": "COMMENT", "x": "EXC_NODES", "n": "REQ_NODES",
    "g": "GROUP", "p": "PRIORITY", "m": "MIN_MEMORY", "c": "MIN_CPUS",
}
_KNOWN_HEADERS = set(_LETTER_HEADERS.values()) | {
    "TRES_ALLOC", "TRES_PER_JOB", "GRES", "NODELIST", "STATE", "TIME_USED", "SCHEDNODES",
    "ARRAY_JOB_ID", "ARRAY_TASK_ID", "JOBARRAYID", "USERNAME", "NUM_NODES", "NUM_CPUS",
    "TRES_PER_TASK", "TRES_PER_SOCKET", "HOSTNAMES", "CPUS_PER_TASK", "STATE_REASON",
}
_ALIASES = {"TIME_LIMI": "TIME_LIMIT"}  # squeue -l prints %.9l, cutting its own header
_FREE_HEADERS = {"NAME", "REASON", "COMMENT", "COMMAND", "WORK_DIR", "STATE_REASON"}


def parse_squeue_text(text: str, *, path: str, columns: str | None = None) -> list[SlurmJob]:
    """Parse squeue text output into one SlurmJob per row.

    Returns jobs in printed order; ``job_id`` as printed (``"8_0"``, ``"8_[2-3%2]"``), ``state``
    as a long upper-case name (``PD`` -> PENDING), ``elapsed_s``/``time_limit_s`` in seconds,
    ``nodes`` hostlist-expanded, ``reason`` without parentheses (None for ``None``),
    ``num_gpus`` from TRES_PER_NODE (times NODES) or TRES_ALLOC. Times are read as UTC.

    Raises:
        ParseError: naming path and line for a row that does not fit the header or a bad value.
    """
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip() and not DATE_LINE.match(line.strip())), None)
    if first is None:
        raise ParseError(path, None, "no squeue rows")
    header = read_header(lines[first], first + 1)
    header = Header([_ALIASES.get(n, n) for n in header.names], header.line_no, header.delimiter)
    if not set(header.names) <= _KNOWN_HEADERS:
        header = _header_from_columns(columns or DEFAULT_COLUMNS, path)
        data_start = first
    else:
        data_start = first + 1
    free = [i for i, name in enumerate(header.names) if name in _FREE_HEADERS]
    last = header.names[-1]
    jobs: list[SlurmJob] = []
    for index in range(data_start, len(lines)):
        line = lines[index]
        if not line.strip():
            continue
        cells = split_row(
            header, line, index + 1, path=path, free=free,
            tail_rule=reason_tail if last == "NODELIST(REASON)" else None,
            optional_last=last in {"NODELIST", "REASON", "NODELIST(REASON)", "EXEC_HOST"},
        )
        try:
            jobs.append(_job(dict(zip(header.names, cells))))
        except ValueError as e:
            raise ParseError(path, index + 1, str(e)) from None
    return jobs


def _header_from_columns(columns: str, path: str) -> Header:
    delimiter = "|" if "|" in columns else None
    names = [_LETTER_HEADERS.get(m.group(1)) for m in re.finditer(r"%[.]?\d*([A-Za-z])", columns)]
    if not names or None in names:
        raise ParseError(path, None, f"no header line and cannot read columns {columns!r}")
    return Header([n for n in names if n], 0, delimiter)


def _v(value: str | None) -> str | None:
    """A cell (already split on blanks or stripped), None for Slurm's empty words."""
    return None if value is None or value in EMPTY_WORDS else value


def _job(row: dict[str, str]) -> SlurmJob:
    job_id = _v(row.get("JOBID") or row.get("JOBARRAYID"))
    if job_id is None:
        raise ValueError("row has no JOBID")
    nodes: list[str] = []
    reason: str | None = None
    nodelist_reason = row.get("NODELIST(REASON)", "").strip()
    if nodelist_reason.startswith("(") and nodelist_reason.endswith(")"):
        reason = clean(nodelist_reason[1:-1])
    elif nodelist_reason:
        nodes = expand_nodes(nodelist_reason)
    if "NODELIST" in row:
        nodes = expand_nodes(row["NODELIST"])
    if "REASON" in row:
        reason = _v(row["REASON"])
    num_nodes = parse_int(row.get("NODES") or row.get("NUM_NODES"))
    num_gpus = None
    if "TRES_ALLOC" in row:
        num_gpus = tres_gpus(row["TRES_ALLOC"])
    if num_gpus is None and ("TRES_PER_NODE" in row or "GRES" in row):
        per_node = gres_gpus(row.get("TRES_PER_NODE") or row.get("GRES"))
        num_gpus = per_node * (num_nodes or 1) if per_node is not None else None
    if num_gpus is None and "TRES_PER_JOB" in row:
        num_gpus = gres_gpus(row["TRES_PER_JOB"])
    return SlurmJob(
        job_id=job_id,
        name=_v(row.get("NAME")) if "NAME" in row else None,
        user=_v(row.get("USER") or row.get("USERNAME")),
        account=_v(row.get("ACCOUNT")),
        partition=_v(row.get("PARTITION")),
        state=job_state_from_words(_v(row.get("STATE") or row.get("ST"))),
        reason=reason,
        nodes=nodes,
        num_nodes=num_nodes,
        num_cpus=parse_int(row.get("CPUS") or row.get("NUM_CPUS")),
        num_gpus=num_gpus,
        time_limit_s=parse_duration_s(row.get("TIME_LIMIT")),
        elapsed_s=parse_duration_s(row.get("TIME") or row.get("TIME_USED")),
        submit_time=parse_timestamp(row.get("SUBMIT_TIME")),
        start_time=parse_timestamp(row.get("START_TIME")),
        end_time=parse_timestamp(row.get("END_TIME")),
        priority=parse_int(row.get("PRIORITY"), lenient=True),
        qos=_v(row.get("QOS")),
        work_dir=_v(row.get("WORK_DIR")),
        command=_v(row.get("COMMAND")),
        req_nodes=expand_nodes(row.get("REQ_NODES")),
        exc_nodes=expand_nodes(row.get("EXC_NODES")),
        reservation=_v(row.get("RESERVATION")),
        batch_host=_v(row.get("EXEC_HOST")),
    )


