"""Parse ``sinfo --json`` (format id ``sinfo-json``), and the node lists of slurmrestd / ``scontrol show nodes --json``.

Three shapes, recognised from the document:

* Slurm 22.05 (openapi v0.0.38): ``{"nodes": [...]}`` flat node records, ``state`` a lower-case
  string plus ``state_flags``, bare numbers, ``cpu_load`` in hundredths.
* Slurm 23.02+ node records (slurmrestd ``/nodes``, ``scontrol show nodes --json``): ``{"nodes": [...]}``
  with ``state`` a list (``["IDLE", "DRAIN"]``) and ``{"set", "infinite", "number"}`` numbers.
* Slurm 23.02+ ``sinfo --json``: ``{"sinfo": [...]}``, one record per node group with
  ``nodes.nodes`` (names), ``node.state`` (list), ``partition.name``, ``cpus``, ``memory``, ``gres``.

One SlurmNode per node name; a node listed in several partitions (groups) is merged.
"""

from __future__ import annotations

from typing import Any

from tools.errors import ParseError
from tools.models.slurm import SlurmNode
from tools.parsers.slurm._json import as_int, as_str, load_slurm_json
from tools.parsers.slurm._states import node_state_from_words
from tools.parsers.slurm._values import clean, epoch_to_utc, gres_gpus, tres_gpus, unwrap_number

__all__ = ["parse_sinfo_json", "node_from_json"]


def parse_sinfo_json(text: str, *, path: str) -> list[SlurmNode]:
    """Parse sinfo/slurmrestd node JSON into one SlurmNode per node, in first-seen order.

    ``state`` is the base state (IDLE, MIXED, ALLOCATED, DOWN...), ``flags`` the rest (DRAIN,
    NOT_RESPONDING...); ``cpu_load`` is the load average (Slurm's hundredths / 100); memory in MiB;
    ``gpus_total``/``gpus_used`` from TRES (``gres/gpu=4``) or GRES (``gpu:a100:4``); times UTC.

    Raises:
        ParseError: invalid or truncated JSON (with line), no ``nodes``/``sinfo`` list, or a
            malformed record (naming its index).
    """
    _, items = load_slurm_json(text, path=path, key=("sinfo", "nodes"))
    nodes: dict[str, SlurmNode] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise ParseError(path, None, f"record {index} is not an object")
        try:
            found = _group_nodes(item) if isinstance(item.get("nodes"), dict) else [node_from_json(item)]
        except (ValueError, TypeError, KeyError) as e:
            raise ParseError(path, None, f"record {index}: {e}") from None
        for node in found:
            seen = nodes.get(node.name)
            if seen is None:
                nodes[node.name] = node
            else:
                seen.partitions.extend(p for p in node.partitions if p not in seen.partitions)
    return list(nodes.values())


def node_from_json(item: dict[str, Any]) -> SlurmNode:
    """One flat node record (v0.0.38 or v0.0.39+) -> SlurmNode.

    Raises:
        ValueError: a record without ``name`` or with malformed values.
    """
    name = as_str(item.get("name"))
    if name is None:
        raise ValueError("node record has no name")
    raw_state = item.get("state")
    words = list(raw_state) if isinstance(raw_state, list) else [str(raw_state or "")]
    words += [str(f) for f in item.get("state_flags") or []]
    state, flags = node_state_from_words(words)
    load = unwrap_number(item.get("cpu_load"))
    free = item.get("free_mem", item.get("free_memory"))
    return SlurmNode(
        name=name,
        state=state,
        flags=flags,
        reason=clean(item.get("reason")),
        reason_user=as_str(item.get("reason_set_by_user")),
        reason_time=epoch_to_utc(item.get("reason_changed_at")),
        partitions=[str(p) for p in item.get("partitions") or []],
        cpus=as_int(item.get("cpus")),
        cpus_alloc=as_int(item.get("alloc_cpus")),
        cpu_load=load / 100 if load is not None else None,
        real_memory_mib=as_int(item.get("real_memory")),
        alloc_memory_mib=as_int(item.get("alloc_memory")),
        free_memory_mib=as_int(free),
        gres=clean(item.get("gres")),
        gres_used=clean(item.get("gres_used")),
        gpus_total=_first(tres_gpus(as_str(item.get("tres"))), gres_gpus(as_str(item.get("gres")))),
        gpus_used=_first(tres_gpus(as_str(item.get("tres_used"))), gres_gpus(as_str(item.get("gres_used")))),
        boot_time=epoch_to_utc(item.get("boot_time")),
        last_busy_time=epoch_to_utc(item.get("last_busy")),
        slurmd_start_time=epoch_to_utc(item.get("slurmd_start_time")),
        version=as_str(item.get("version", item.get("slurmd_version"))),
    )


def _group_nodes(item: dict[str, Any]) -> list[SlurmNode]:
    """One ``sinfo --json`` (23.02+) group record -> a SlurmNode per name in ``nodes.nodes``."""
    names = [str(n) for n in (item.get("nodes") or {}).get("nodes") or []]
    state, flags = node_state_from_words([str(s) for s in (item.get("node") or {}).get("state") or []])
    partition = as_str((item.get("partition") or {}).get("name"))
    cpus = item.get("cpus") or {}
    memory = item.get("memory") or {}
    gres = item.get("gres") or {}
    gres_total = clean(gres.get("total")) if isinstance(gres, dict) else clean(gres)
    gres_used = clean(gres.get("used")) if isinstance(gres, dict) else None
    reason_obj = item.get("reason")
    if isinstance(reason_obj, dict):
        reason, reason_user = clean(reason_obj.get("description")), as_str(reason_obj.get("user"))
        reason_time = epoch_to_utc(reason_obj.get("time"))
    else:
        reason, reason_user, reason_time = clean(reason_obj), None, None
    single = len(names) == 1
    load = unwrap_number((cpus.get("load") or {}).get("maximum")) if single else None
    free = (memory.get("free") or {}).get("maximum") if single else None
    return [
        SlurmNode(
            name=name,
            state=state,
            flags=list(flags),
            reason=reason,
            reason_user=reason_user,
            reason_time=reason_time,
            partitions=[partition] if partition else [],
            cpus=as_int(cpus.get("total") if single else cpus.get("maximum")),
            cpus_alloc=as_int(cpus.get("allocated")) if single else None,
            cpu_load=load / 100 if load is not None else None,
            real_memory_mib=as_int(memory.get("maximum")),
            alloc_memory_mib=as_int(memory.get("allocated")) if single else None,
            free_memory_mib=as_int(free),
            gres=gres_total,
            gres_used=gres_used,
            gpus_total=gres_gpus(gres_total),
            gpus_used=gres_gpus(gres_used),
        )
        for name in names
    ]


def _first(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)
