"""Parse ``scontrol show node`` (format id ``scontrol-node-text``).

One key=value record per node (see ``_keyvalue``). ``State=MIXED+DRAIN+NOT_RESPONDING`` gives
the base state and flags; ``Reason=Kill task failed [root@2024-01-25T15:12:23]`` gives the
reason, who set it and when; ``OS``, ``Reason`` and ``Comment`` run to the end of their line.
GPU counts come from ``CfgTRES``/``AllocTRES`` (``gres/gpu=4``), else ``Gres``/``GresUsed``.
"""

from __future__ import annotations

import re
from datetime import datetime

from tools.errors import ParseError
from tools.models.slurm import SlurmNode
from tools.parsers.slurm._keyvalue import Record, read_records
from tools.parsers.slurm._states import node_state_from_words
from tools.parsers.slurm._values import clean, parse_int, gres_gpus, parse_timestamp, tres_gpus

__all__ = ["parse_scontrol_node_text"]

_REST_OF_LINE = frozenset({"OS", "Reason", "Comment", "Extra", "InstanceType", "InstanceId"})
_REASON = re.compile(r"^(.*?)\s*\[([^\[\]@]*)@([^\[\]]*)\]\s*$")


def parse_scontrol_node_text(text: str, *, path: str) -> list[SlurmNode]:
    """Parse ``scontrol show node`` into one SlurmNode per record, in printed order.

    ``cpu_load`` from ``CPULoad``; memory in MiB (``RealMemory``, ``AllocMem``, ``FreeMem``);
    ``gpus_total``/``gpus_used`` from CfgTRES/AllocTRES or Gres/GresUsed; times read as UTC.

    Raises:
        ParseError: naming path and line for text outside a record or a malformed value.
    """
    nodes = []
    for record in read_records(text, path=path, first_key="NodeName", rest_of_line=_REST_OF_LINE):
        try:
            nodes.append(_node(record))
        except ValueError as e:
            raise ParseError(path, record.line_no, str(e)) from None
    return nodes


def _node(record: Record) -> SlurmNode:
    v = record.values
    name = clean(v.get("NodeName"))
    if name is None:
        raise ValueError("record has no NodeName")
    if "State" not in v:
        raise ValueError("record has no State (cut short?)")
    state, flags = node_state_from_words((v.get("State") or "").split("+")) if clean(v.get("State")) else (None, [])
    reason, reason_user, reason_time = _reason(v.get("Reason"))
    gres = clean(v.get("Gres"))
    gres_used = clean(v.get("GresUsed"))
    load = clean(v.get("CPULoad"))
    return SlurmNode(
        name=name,
        state=state,
        flags=flags,
        reason=reason,
        reason_user=reason_user,
        reason_time=reason_time,
        partitions=[p for p in (clean(v.get("Partitions")) or "").split(",") if p],
        cpus=parse_int(v.get("CPUTot")),
        cpus_alloc=parse_int(v.get("CPUAlloc")),
        cpu_load=float(load) if load is not None else None,
        real_memory_mib=parse_int(v.get("RealMemory")),
        alloc_memory_mib=parse_int(v.get("AllocMem")),
        free_memory_mib=parse_int(v.get("FreeMem")),
        gres=gres,
        gres_used=gres_used,
        gpus_total=_first(tres_gpus(v.get("CfgTRES")), gres_gpus(gres)),
        gpus_used=_first(tres_gpus(v.get("AllocTRES")), gres_gpus(gres_used), 0 if "AllocTRES" in v else None),
        boot_time=parse_timestamp(v.get("BootTime")),
        last_busy_time=parse_timestamp(v.get("LastBusyTime")),
        slurmd_start_time=parse_timestamp(v.get("SlurmdStartTime")),
        version=clean(v.get("Version")),
    )


def _reason(text: str | None) -> tuple[str | None, str | None, datetime | None]:
    """``Kill task failed [root@2024-01-25T15:12:23]`` -> (reason, user, time)."""
    value = clean(text)
    if value is None:
        return None, None, None
    match = _REASON.match(value)
    if not match:
        return value, None, None
    return match.group(1) or None, clean(match.group(2)), parse_timestamp(match.group(3))



def _first(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)
