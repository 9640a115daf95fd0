"""Parse ``squeue --json`` (format id ``squeue-json``).

Supports Slurm 22.05 (openapi v0.0.38: bare numbers, ``job_state`` a string) and Slurm 23.02+
(data_parser v0.0.39-v0.0.42: ``{"set", "infinite", "number"}`` numbers, ``job_state`` a list),
telling them apart by the values themselves. The same job records come from slurmrestd's
``GET /slurm/v0.0.4x/jobs``.
"""

from __future__ import annotations

from typing import Any

from tools.errors import ParseError
from tools.models.slurm import SlurmJob
from tools.parsers.slurm._json import as_int, as_str, exit_code_str, load_slurm_json
from tools.parsers.slurm._states import job_state_from_words
from tools.parsers.slurm._values import clean, epoch_to_utc, expand_nodes, gres_gpus, tres_gpus

__all__ = ["parse_squeue_json", "job_from_json"]

_ENDED = {
    "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
}


def parse_squeue_json(text: str, *, path: str) -> list[SlurmJob]:
    """Parse ``squeue --json`` output into one SlurmJob per record under ``jobs``.

    Returns jobs in document order. ``job_id`` is ``"8_0"`` for an array task and ``"8_[2-3%2]"``
    for the still-pending rest of an array; ``time_limit_s`` converts Slurm's minutes to seconds;
    times are aware UTC; ``reason`` is the state description when Slurm gives one (as squeue's
    text does), else ``state_reason`` (None for ``None``); ``num_gpus`` comes from
    ``tres_alloc_str``, ``gres_detail``, then ``tres_req_str``/``tres_per_*``.

    Raises:
        ParseError: invalid or truncated JSON (with line), no ``jobs`` list, or a malformed record
            (naming its index).
    """
    _, items = load_slurm_json(text, path=path, key="jobs")
    jobs = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise ParseError(path, None, f"jobs[{index}] is not an object")
        try:
            jobs.append(job_from_json(item))
        except (ValueError, TypeError) as e:
            raise ParseError(path, None, f"jobs[{index}]: {e}") from None
    return jobs


def job_from_json(item: dict[str, Any]) -> SlurmJob:
    """One squeue/slurmrestd job record (any supported shape) -> SlurmJob.

    Raises:
        ValueError: a record without ``job_id`` or with malformed values.
    """
    job_id = as_int(item.get("job_id"))
    if job_id is None:
        raise ValueError("record has no job_id")
    state = job_state_from_words(item.get("job_state"))
    description = as_str(item.get("state_description"))
    reason = clean(description) if description else clean(item.get("state_reason"))
    num_nodes = as_int(item.get("node_count"))
    start, end = epoch_to_utc(item.get("start_time")), epoch_to_utc(item.get("end_time"))
    limit_min = as_int(item.get("time_limit"))
    return SlurmJob(
        job_id=_display_id(job_id, item),
        name=as_str(item.get("name")),
        user=as_str(item.get("user_name")),
        account=as_str(item.get("account")),
        partition=as_str(item.get("partition")),
        state=state,
        reason=reason,
        nodes=expand_nodes(as_str(item.get("nodes"))),
        num_nodes=num_nodes,
        num_cpus=as_int(item.get("cpus")),
        num_gpus=_gpus(item, num_nodes),
        time_limit_s=limit_min * 60 if limit_min is not None else None,
        elapsed_s=int((end - start).total_seconds()) if state in _ENDED and start and end else None,
        submit_time=epoch_to_utc(item.get("submit_time")),
        start_time=start,
        end_time=end,
        priority=as_int(item.get("priority")),
        qos=as_str(item.get("qos")),
        exit_code=exit_code_str(item.get("exit_code")),
        work_dir=as_str(item.get("current_working_directory")),
        stdout_path=as_str(item.get("standard_output")),
        stderr_path=as_str(item.get("standard_error")),
        command=as_str(item.get("command")),
        req_nodes=expand_nodes(as_str(item.get("required_nodes"))),
        exc_nodes=expand_nodes(as_str(item.get("excluded_nodes"))),
        reservation=as_str(item.get("resv_name")),
        batch_host=as_str(item.get("batch_host")),
    )


def _display_id(job_id: int, item: dict[str, Any]) -> str:
    """The id squeue prints: ``8_0`` for a task, ``8_[2-3%2]`` for pending tasks, ``7+1`` for het."""
    array_job = as_int(item.get("array_job_id"))
    if array_job:
        task_string = as_str(item.get("array_task_string"))
        if task_string:
            return f"{array_job}_[{task_string}]"
        task = as_int(item.get("array_task_id"))
        if task is not None:
            return f"{array_job}_{task}"
    het_job = as_int(item.get("het_job_id"))
    if het_job:
        offset = as_int(item.get("het_job_offset"))
        return f"{het_job}+{offset or 0}"
    return str(job_id)


def _gpus(item: dict[str, Any], num_nodes: int | None) -> int | None:
    found = tres_gpus(as_str(item.get("tres_alloc_str")))
    if found is not None:
        return found
    detail = item.get("gres_detail")
    if isinstance(detail, list) and detail:
        counts = [gres_gpus(str(d)) for d in detail]
        if any(c is not None for c in counts):
            return sum(c or 0 for c in counts)
    found = tres_gpus(as_str(item.get("tres_req_str")))
    if found is not None:
        return found
    found = gres_gpus(as_str(item.get("tres_per_job")))
    if found is not None:
        return found
    per_node = gres_gpus(as_str(item.get("tres_per_node")))
    return per_node * (num_nodes or 1) if per_node is not None else None
