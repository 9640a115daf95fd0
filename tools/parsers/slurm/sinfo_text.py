"""Parse sinfo's text output (format id ``sinfo-text``).

Handles the default partition-grouped layout (``PARTITION AVAIL TIMELIMIT NODES STATE NODELIST``,
one row per partition and state, expanded per node with the hostlist), the node-oriented
``sinfo -N``, ``sinfo -N -l`` (whose first line is a date) and ``-o``/``-O`` layouts, by reading
the header. State cells follow sinfo(1) NODE STATE CODES: ``drng``/``drain``/``drained`` carry
the DRAIN flag, and the suffixes ``* ~ # ! % $ @ ^ -`` become flags (``down*`` -> DOWN with
NOT_RESPONDING). The REASON column may hold blanks (``sinfo -l`` truncates it to 20 characters).
"""

from __future__ import annotations

import re

from tools.errors import ParseError
from tools.models.slurm import SlurmNode
from tools.parsers.slurm._states import node_state_from_sinfo
from tools.parsers.slurm._table import DATE_LINE, Header, read_header, split_row
from tools.parsers.slurm._values import clean, expand_nodes, gres_gpus, mem_to_mib, parse_duration_s

__all__ = ["parse_sinfo_text"]

_LETTER_HEADERS = {
    "P": "PARTITION", "R": "PARTITION", "a": "AVAIL", "l": "TIMELIMIT", "D": "NODES", "t": "STATE",
    "T": "STATE", "N": "NODELIST", "n": "HOSTNAMES", "c": "CPUS", "C": "CPUS(A/I/O/T)", "m": "MEMORY",
    "e": "FREE_MEM", "O": "CPU_LOAD", "G": "GRES", "E": "REASON", "f": "AVAIL_FEATURES", "z": "S:C:T",
}
_KNOWN = set(_LETTER_HEADERS.values()) | {
    "TMP_DISK", "WEIGHT", "AVAIL_FE", "ACTIVE_FEATURES", "GRES_USED", "ALLOCMEM", "USER", "TIMESTAMP",
    "NODES(A/I/O/T)", "NODES(A/I)", "CPUS", "STATE", "ROOT", "OVERSUBSCRIBE", "GROUPS", "JOB_SIZE",
    "SOCKETS", "CORES", "THREADS", "NODE_ADDR", "PORT", "VERSION", "CLUSTER", "PRIO_TIER", "HOSTNAMES",
    "COMMENT", "EXTRA", "OVERSUBS", "RESERVATION", "PREEMPT_MODE", "DEFAULTTIME", "ALLOCNODES",
}
_FREE = {"REASON", "COMMENT", "EXTRA"}


def parse_sinfo_text(text: str, *, path: str, columns: str | None = None) -> list[SlurmNode]:
    """Parse sinfo text into one SlurmNode per node, in first-seen order.

    A node printed in several rows (one per partition) is merged, collecting ``partitions``
    (the default partition's ``*`` removed). ``state``/``flags`` follow sinfo's state cell;
    CPUS, MEMORY (MiB), GRES (-> ``gpus_total``), REASON (``none`` -> None) are kept when the
    layout prints them. Without a header (``sinfo -h``) ``columns`` (``%N %P %T``) names the layout.

    Raises:
        ParseError: naming path and line for a row that does not fit the header, a bad state,
            hostlist or number, or a file with no header and no ``columns``.
    """
    lines = text.splitlines()
    index = 0
    while index < len(lines) and (not lines[index].strip() or DATE_LINE.match(lines[index].strip())):
        index += 1
    if index == len(lines):
        raise ParseError(path, None, "no sinfo rows")
    header = read_header(lines[index], index + 1)
    if set(header.names) <= _KNOWN:
        index += 1
    elif columns:
        header = _header_from_columns(columns, path)
    else:
        raise ParseError(path, index + 1, f"not an sinfo header: {lines[index].strip()[:60]!r}")
    if "NODELIST" not in header.names and "HOSTNAMES" not in header.names:
        raise ParseError(path, header.line_no or None, "layout has no NODELIST column")
    free = [i for i, name in enumerate(header.names) if name in _FREE]
    nodes: dict[str, SlurmNode] = {}
    for number in range(index, len(lines)):
        line = lines[number]
        if not line.strip():
            continue
        cells = split_row(header, line, number + 1, path=path, free=free, optional_last=header.names[-1] in _FREE)
        try:
            for node in _nodes(dict(zip(header.names, cells))):
                seen = nodes.get(node.name)
                if seen is None:
                    nodes[node.name] = node
                else:
                    seen.partitions.extend(p for p in node.partitions if p not in seen.partitions)
        except ValueError as e:
            raise ParseError(path, number + 1, str(e)) from None
    return list(nodes.values())


def _header_from_columns(columns: str, path: str) -> Header:
    names = [_LETTER_HEADERS.get(m.group(1)) for m in re.finditer(r"%[.]?\d*([A-Za-z])", columns)]
    if not names or None in names:
        raise ParseError(path, None, f"no header line and cannot read columns {columns!r}")
    return Header([n for n in names if n], 0, "|" if "|" in columns else None)


def _nodes(row: dict[str, str]) -> list[SlurmNode]:
    names = expand_nodes(row.get("NODELIST") or row.get("HOSTNAMES"))
    state, flags = node_state_from_sinfo(row["STATE"]) if "STATE" in row else (None, [])
    partition = clean(row.get("PARTITION"))
    cpus = cpus_alloc = None
    if "CPUS(A/I/O/T)" in row:
        parts = row["CPUS(A/I/O/T)"].split("/")
        if len(parts) != 4:
            raise ValueError(f"bad CPUS(A/I/O/T) {row['CPUS(A/I/O/T)']!r}")
        cpus_alloc, cpus = _int(parts[0]), _int(parts[3])
    if "CPUS" in row:
        cpus = _int(row["CPUS"])
    gres = clean(row.get("GRES"))
    gres_used = clean(row.get("GRES_USED"))
    load = clean(row.get("CPU_LOAD"))
    return [
        SlurmNode(
            name=name,
            state=state,
            flags=list(flags),
            reason=clean(row.get("REASON")),
            partitions=[partition.rstrip("*")] if partition else [],
            partition_max_nodes=_job_size_max(row.get("JOB_SIZE")),
            partition_max_time_s=_time_limit(row.get("TIMELIMIT")),
            cpus=cpus,
            cpus_alloc=cpus_alloc,
            cpu_load=float(load) if load is not None else None,
            real_memory_mib=mem_to_mib(row.get("MEMORY", "").rstrip("+")),
            alloc_memory_mib=_int(row.get("ALLOCMEM")),
            free_memory_mib=_int(row.get("FREE_MEM")),
            gres=gres,
            gres_used=gres_used,
            gpus_total=gres_gpus(gres),
            gpus_used=gres_gpus(gres_used),
        )
        for name in names
    ]


def _time_limit(text: str | None) -> int | None:
    """sinfo's TIMELIMIT in seconds (``2-00:00:00``); ``infinite`` or a cell that is not a duration -> None."""
    try:
        return parse_duration_s(text)
    except ValueError:
        return None


def _job_size_max(text: str | None) -> int | None:
    """The upper bound of sinfo's JOB_SIZE (``1-8`` -> 8, ``1-infinite`` or ``4+`` -> None)."""
    value = clean(text)
    if value is None or "-" not in value:
        return None
    top = value.rsplit("-", 1)[1]
    return int(top) if top.isdigit() and len(top) <= 9 else None


def _int(text: str | None) -> int | None:
    """An integer cell; sinfo's ``2+`` (varies within the group) reads as its minimum."""
    value = clean(text)
    if value is None:
        return None
    try:
        return int(value.rstrip("+"))
    except ValueError:
        raise ValueError(f"expected an integer, got {value!r}") from None
