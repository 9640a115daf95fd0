"""Parse ``sacct --json`` (format id ``sacct-json``): jobs and their steps from accounting.

Supports Slurm 22.05 (openapi dbv0.0.38: ``state.current`` a string, ``time.limit`` a bare
number of minutes, step ``id`` ``"batch"`` or ``0``, exit codes ``{"status": "SIGNALED", "signal":
{"signal_id": 15}}``) and Slurm 23.02+ (data_parser v0.0.39+: ``state.current`` a list,
``time.limit`` and step times as ``{"set", "infinite", "number"}``, step ``id`` ``"4242.batch"``).
"""

from __future__ import annotations

from typing import Any

from tools.errors import ParseError
from tools.models.slurm import SacctRecord
from tools.parsers.slurm._json import as_int, as_str, exit_code_str, load_slurm_json
from tools.parsers.slurm._states import job_state_from_words
from tools.parsers.slurm._values import epoch_to_utc, expand_nodes

__all__ = ["parse_sacct_json"]


def parse_sacct_json(text: str, *, path: str) -> list[SacctRecord]:
    """Parse ``sacct --json`` into SacctRecords: each job row followed by its step rows.

    Job ids are as sacct prints them (``8_0`` for an array task, ``7+1`` for a het component),
    steps ``<job>.batch`` / ``<job>.0``; ``elapsed_s`` in seconds, ``time_limit_s`` from minutes;
    ``num_gpus`` from allocated (else requested) ``gres/gpu`` TRES; ``max_rss_kib`` from a step's
    ``tres.requested.max`` mem (bytes / 1024), and on the job row the largest of its steps.

    Raises:
        ParseError: invalid or truncated JSON (with line), no ``jobs`` list, or a malformed
            record (naming its index).
    """
    _, items = load_slurm_json(text, path=path, key="jobs")
    records: list[SacctRecord] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise ParseError(path, None, f"jobs[{index}] is not an object")
        try:
            records.extend(_job_records(item))
        except (ValueError, TypeError, AttributeError) as e:
            raise ParseError(path, None, f"jobs[{index}]: {e}") from None
    return records


def _job_records(item: dict[str, Any]) -> list[SacctRecord]:
    job_id = as_int(item.get("job_id"))
    if job_id is None:
        raise ValueError("record has no job_id")
    display = _display_id(job_id, item)
    time = item.get("time") or {}
    state = item.get("state") or {}
    steps = [_step(display, step) for step in item.get("steps") or []]
    rss = [s.max_rss_kib for s in steps if s.max_rss_kib is not None]
    limit = as_int(time.get("limit"))
    association = item.get("association") or {}
    tres = item.get("tres") or {}
    job = SacctRecord(
        job_id=display,
        name=as_str(item.get("name")),
        user=as_str(item.get("user")) or as_str(association.get("user")),
        account=as_str(item.get("account")) or as_str(association.get("account")),
        partition=as_str(item.get("partition")),
        state=job_state_from_words(state.get("current") if isinstance(state, dict) else state),
        exit_code=exit_code_str(item.get("exit_code")),
        elapsed_s=as_int(time.get("elapsed")),
        time_limit_s=limit * 60 if limit is not None else None,
        submit_time=epoch_to_utc(time.get("submission")),
        start_time=epoch_to_utc(time.get("start")),
        end_time=epoch_to_utc(time.get("end")),
        nodes=expand_nodes(as_str(item.get("nodes"))),
        num_nodes=as_int(item.get("allocation_nodes")),
        num_gpus=_tres_gpus(tres.get("allocated")) or _tres_gpus(tres.get("requested")),
        max_rss_kib=max(rss) if rss else None,
    )
    return [job, *steps]


def _display_id(job_id: int, item: dict[str, Any]) -> str:
    array = item.get("array") or {}
    array_job = as_int(array.get("job_id"))
    task = as_int(array.get("task_id"))
    if array_job and task is not None:
        return f"{array_job}_{task}"
    het = item.get("het") or {}
    het_job, offset = as_int(het.get("job_id")), as_int(het.get("job_offset"))
    if het_job and offset is not None:
        return f"{het_job}+{offset}"
    return str(job_id)


def _step(display: str, step: dict[str, Any]) -> SacctRecord:
    ident = step.get("step") or {}
    raw_id = ident.get("id")
    if raw_id is None:
        raise ValueError("step has no id")
    suffix = str(raw_id).split(".", 1)[1] if "." in str(raw_id) else str(raw_id)
    time = step.get("time") or {}
    nodes = step.get("nodes") or {}
    tres = step.get("tres") or {}
    requested_max = (tres.get("requested") or {}).get("max") or []
    max_mem = [t for t in requested_max if isinstance(t, dict) and t.get("type") == "mem"]
    mem_bytes = as_int(max_mem[0].get("count")) if max_mem else None
    node_names = expand_nodes(as_str(nodes.get("range"))) or [str(n) for n in nodes.get("list") or []]
    return SacctRecord(
        job_id=f"{display}.{suffix}",
        name=as_str(ident.get("name")),
        state=job_state_from_words(step.get("state")),
        exit_code=exit_code_str(step.get("exit_code")),
        elapsed_s=as_int(time.get("elapsed")),
        start_time=epoch_to_utc(time.get("start")),
        end_time=epoch_to_utc(time.get("end")),
        nodes=node_names,
        num_nodes=as_int(nodes.get("count")),
        num_gpus=_tres_gpus(tres.get("allocated")),
        max_rss_kib=mem_bytes // 1024 if mem_bytes is not None else None,
    )


def _tres_gpus(entries: object) -> int | None:
    """GPUs in a TRES list: the ``gres``/``gpu`` entry, else the sum of typed ``gpu:<type>`` ones."""
    if not isinstance(entries, list):
        return None
    plain = [e for e in entries if isinstance(e, dict) and e.get("type") == "gres" and e.get("name") == "gpu"]
    if plain:
        return as_int(plain[0].get("count"))
    gres = [e for e in entries if isinstance(e, dict) and e.get("type") == "gres"]
    typed = [as_int(e.get("count")) or 0 for e in gres if str(e.get("name") or "").startswith("gpu:")]
    return sum(typed) if typed else None
