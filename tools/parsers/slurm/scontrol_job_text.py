"""Parse ``scontrol show job`` (format id ``scontrol-job-text``).

One key=value record per job (see ``_keyvalue``). ``JobName``, ``Comment``, ``Command``,
``WorkDir``, ``StdOut``/``StdErr``/``StdIn``, ``AdminComment``, ``SystemComment`` and ``Power``
run to the end of their line, so names such as ``x; rm -rf ~ $(id) "q"`` stay whole and inert.
scontrol writes a pending reason with ``_`` for blanks (``ReqNodeNotAvail,_Reserved_for_maintenance``);
it is turned back into squeue's wording.
"""

from __future__ import annotations

from tools.errors import ParseError
from tools.models.slurm import SlurmJob
from tools.parsers.slurm._keyvalue import Record, read_records
from tools.parsers.slurm._states import job_state_from_words
from tools.parsers.slurm._values import clean, expand_nodes, gres_gpus, parse_duration_s, parse_timestamp, tres_gpus

__all__ = ["parse_scontrol_job_text"]

_REST_OF_LINE = frozenset({
    "JobName", "Comment", "Command", "WorkDir", "StdOut", "StdErr", "StdIn", "AdminComment",
    "SystemComment", "Power", "Extra", "SubmitLine", "MailUser", "Container", "ContainerID",
})


def parse_scontrol_job_text(text: str, *, path: str) -> list[SlurmJob]:
    """Parse ``scontrol show job`` into one SlurmJob per record, in printed order.

    ``job_id`` as squeue prints it (``8_0`` for array task 0 of job 8, ``8_[2-3%2]`` for the
    pending rest, ``7+1`` for a het component); ``user`` from ``UserId=alice(1000)``; durations
    (``RunTime``, ``TimeLimit``) in seconds, ``UNLIMITED`` -> None; times read as UTC;
    ``num_gpus`` from ``TRES=...gres/gpu=N`` else ``TresPerNode`` x nodes. ``No jobs in the
    system`` (an empty queue, Slurm 22.05) gives no jobs.

    Raises:
        ParseError: naming path and line for text outside a record, a record without JobId,
            or a malformed value.
    """
    if len(text) < 4096 and text.strip() == "No jobs in the system":  # an empty queue (no copy of a 40 MB text)
        return []
    jobs = []
    for record in read_records(text, path=path, first_key="JobId", rest_of_line=_REST_OF_LINE):
        try:
            jobs.append(_job(record))
        except ValueError as e:
            raise ParseError(path, record.line_no, str(e)) from None
    return jobs


def _job(record: Record) -> SlurmJob:
    v = record.values
    job_id = clean(v.get("JobId"))
    if job_id is None:
        raise ValueError("record has no JobId")
    if "JobState" not in v:
        raise ValueError("record has no JobState (cut short?)")
    display_id = job_id
    array_job, array_task = clean(v.get("ArrayJobId")), clean(v.get("ArrayTaskId"))
    if array_job and array_task:
        display_id = f"{array_job}_{array_task}" if array_task.isdigit() else f"{array_job}_[{array_task}]"
    elif clean(v.get("HetJobId")) and clean(v.get("HetJobOffset")) is not None:
        display_id = f"{v['HetJobId']}+{v['HetJobOffset']}"
    reason = clean(v.get("Reason"))
    num_nodes = _count(v.get("NumNodes"))
    gpus = tres_gpus(v.get("TRES") or v.get("AllocTRES") or v.get("ReqTRES"))
    if gpus is None and clean(v.get("TresPerNode")):
        per_node = gres_gpus(v["TresPerNode"])
        gpus = per_node * (num_nodes or 1) if per_node is not None else None
    if gpus is None and clean(v.get("TresPerJob")):
        gpus = gres_gpus(v["TresPerJob"])
    return SlurmJob(
        job_id=display_id,
        name=v.get("JobName") or None,
        user=_name(v.get("UserId")),
        account=clean(v.get("Account")),
        partition=clean(v.get("Partition")),
        state=job_state_from_words(clean(v.get("JobState"))),
        reason=reason.replace("_", " ") if reason else None,
        nodes=expand_nodes(v.get("NodeList")),
        num_nodes=num_nodes,
        num_cpus=_count(v.get("NumCPUs")),
        num_gpus=gpus,
        time_limit_s=parse_duration_s(v.get("TimeLimit")),
        elapsed_s=parse_duration_s(v.get("RunTime")),
        submit_time=parse_timestamp(v.get("SubmitTime")),
        start_time=parse_timestamp(v.get("StartTime")),
        end_time=parse_timestamp(v.get("EndTime")),
        priority=_count(v.get("Priority")),
        qos=clean(v.get("QOS")),
        dependency=clean(v.get("Dependency")),
        exit_code=clean(v.get("ExitCode")),
        work_dir=clean(v.get("WorkDir")),
        stdout_path=clean(v.get("StdOut")),
        stderr_path=clean(v.get("StdErr")),
        command=clean(v.get("Command")),
        req_nodes=expand_nodes(v.get("ReqNodeList")),
        exc_nodes=expand_nodes(v.get("ExcNodeList")),
        reservation=clean(v.get("Reservation")),
        batch_host=clean(v.get("BatchHost")),
        restarts=_count(v.get("Restarts")),
        constraint=clean(v.get("Features")),
    )


def _name(text: str | None) -> str | None:
    """``alice(1000)`` -> ``alice``."""
    value = clean(text)
    return value.split("(", 1)[0] if value else None


def _count(text: str | None) -> int | None:
    """An integer, or the lower bound of a range such as NumNodes=``2-4``."""
    value = clean(text)
    if value is None:
        return None
    head = value.split("-", 1)[0]
    try:
        return int(head)
    except ValueError:
        raise ValueError(f"expected an integer, got {value!r}") from None
