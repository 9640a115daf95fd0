"""``squeue --json``, ``sinfo --json`` and ``sacct --json`` of a synthetic cluster (Slurm 24.05, data_parser v0.0.41).

Records carry the keys Slurm 24.05 prints (numbers as ``{"set", "infinite", "number"}``, states as
lists, exit codes as objects), most of them constant here; the shapes are those of the recorded
24.05 fixtures (tests/fixtures/{squeue,sinfo,sacct}-json) and Slurm's data_parser v0.0.41 schema.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from sandbox.scale_model import Cluster, Job, Node

__all__ = ["squeue_json", "sinfo_json", "sacct_json"]

_UNSET = {"set": False, "infinite": False, "number": 0}
_INF = {"set": False, "infinite": True, "number": 0}
_OK_EXIT = {"status": ["SUCCESS"], "return_code": {"set": True, "infinite": False, "number": 0},
            "signal": {"id": _UNSET, "name": ""}}


def _n(value: float) -> dict[str, Any]:
    return {"set": True, "infinite": False, "number": value}


def _t(t: datetime | None) -> dict[str, Any]:
    return _n(int(t.timestamp())) if t else _n(0)


def _meta(cl: Cluster, command: list[str]) -> dict[str, Any]:
    return {"plugin": {"type": "", "name": "", "data_parser": "data_parser/v0.0.41", "accounting_storage": ""},
            "client": {"source": "/dev/pts/3", "user": "warden", "group": "warden"}, "command": command,
            "slurm": {"version": {"major": "24", "micro": "4", "minor": "05"}, "release": "24.05.4", "cluster": cl.name}}


def _exit(code: str) -> dict[str, Any]:
    status, signal = (int(x) for x in code.split(":"))
    if signal:
        return {"status": ["SIGNALED"], "return_code": _UNSET, "signal": {"id": _n(signal), "name": "TERM"}}
    if status:
        return {"status": ["ERROR"], "return_code": _n(status), "signal": {"id": _UNSET, "name": ""}}
    return _OK_EXIT


_JOB_CONSTANT: dict[str, Any] = {
    "admin_comment": "", "allocating_node": "login01", "array_job_id": _n(0), "array_task_id": _UNSET,
    "array_max_tasks": _n(0), "array_task_string": "", "batch_features": "", "batch_flag": True,
    "burst_buffer": "", "burst_buffer_state": "", "cluster_features": "", "comment": "", "container": "",
    "container_id": "", "contiguous": False, "core_spec": 0, "thread_spec": 32766, "cores_per_socket": _UNSET,
    "cpus_per_task": _n(28), "cpu_frequency_minimum": _UNSET, "cpu_frequency_maximum": _UNSET,
    "cpu_frequency_governor": _UNSET, "cpus_per_tres": "", "cron": "", "deadline": _n(0), "delay_boot": _n(0),
    "dependency": "", "derived_exit_code": _OK_EXIT, "excluded_nodes": "", "extra": "", "failed_node": "",
    "features": "", "federation_origin": "", "federation_siblings_active": "", "federation_siblings_viable": "",
    "het_job_id": _n(0), "het_job_id_set": "", "het_job_offset": _n(0), "job_resources": None, "job_size_str": [],
    "licenses": "", "mail_type": [], "max_cpus": _n(0), "max_nodes": _n(0), "mcs_label": "", "memory_per_tres": "",
    "network": "", "nice": 0, "tasks_per_core": _INF, "tasks_per_tres": _n(0), "tasks_per_node": _n(8),
    "tasks_per_socket": _INF, "tasks_per_board": _n(0), "minimum_cpus_per_node": _n(224),
    "minimum_tmp_disk_per_node": _n(0), "power": {"flags": []}, "preempt_time": _n(0), "preemptable_time": _n(0),
    "pre_sus_time": _n(0), "hold": False, "profile": ["NOT_SET"], "qos": "normal", "reboot": False,
    "required_nodes": "", "minimum_switches": 0, "requeue": False, "resize_time": _n(0), "restart_cnt": 0,
    "resv_name": "", "scheduled_nodes": "", "selinux_context": "", "shared": [], "exclusive": [],
    "oversubscribe": False, "show_flags": ["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"], "sockets_per_board": 0,
    "sockets_per_node": _UNSET, "standard_input": "/dev/null", "suspend_time": _n(0), "system_comment": "",
    "time_minimum": _n(0), "threads_per_core": _UNSET, "tres_bind": "", "tres_freq": "", "tres_per_job": "",
    "tres_per_socket": "", "tres_per_task": "", "wckey": "", "current_working_directory": "",
}


def _tres(j: Job) -> str:
    g = j.gpus_per_node * j.num_nodes
    return f"cpu={28 * g},mem={200 * g}G,node={j.num_nodes},billing={28 * g},gres/gpu={g}"


def _squeue_job(cl: Cluster, j: Job) -> dict[str, Any]:
    running = j.state == "RUNNING"
    end = j.end or (datetime.fromtimestamp(j.start.timestamp() + j.time_limit_s, tz=j.start.tzinfo) if j.start else None)
    rec = dict(_JOB_CONSTANT)
    rec.update({
        "account": j.account, "accrue_time": _t(j.submit), "association_id": 7, "batch_host":
        cl.nodes[j.nodes[0]].name if running else "", "flags": ["ACCRUE_COUNT_CLEARED"] + (["JOB_WAS_RUNNING"] if running
                                                                                            else []),
        "cluster": cl.name, "command": f"{j.work_dir}/run.sbatch", "billable_tres": _n(28.0 * j.gpus_per_node),
        "eligible_time": _t(j.submit), "end_time": _t(end), "exit_code": _exit(j.exit_code),
        "gres_detail": [f"gpu:h100:{j.gpus_per_node}(IDX:0-{j.gpus_per_node - 1})"] * j.num_nodes if running else [],
        "group_id": 20000, "group_name": j.user, "job_id": j.job_id, "job_state": [j.state],
        "last_sched_evaluation": _t(j.start or j.submit), "mail_user": j.user, "name": j.name,
        "nodes": cl.hostlist(j.nodes) if running else "", "node_count": _n(j.num_nodes), "partition": j.partition,
        "priority": _n(11000 + j.job_id % 900), "state_description": "", "state_reason": j.reason,
        "standard_error": j.stdout, "standard_output": j.stdout, "start_time": _t(j.start), "submit_time": _t(j.submit),
        "time_limit": _n(j.time_limit_s // 60), "tres_alloc_str": _tres(j) if running else "",
        "tres_req_str": _tres(j), "tres_per_node": f"gres/gpu:{j.gpus_per_node}", "user_id": 20417,
        "user_name": j.user, "cpus": _n(28 * j.gpus_per_node * j.num_nodes), "memory_per_node": _n(1638400),
        "current_working_directory": j.work_dir, "submit_line": "sbatch run.sbatch",
    })
    return rec


def squeue_json(cl: Cluster) -> bytes:
    """``squeue --json``: running and pending jobs."""
    jobs = [_squeue_job(cl, j) for j in cl.jobs if j.state in ("RUNNING", "PENDING")]
    doc = {"jobs": jobs, "last_backfill": _t(cl.captured_at), "last_update": _t(cl.captured_at),
           "meta": _meta(cl, ["squeue", "--json"]), "errors": [], "warnings": []}
    return orjson.dumps(doc)


def _sinfo_row(cl: Cluster, n: Node) -> dict[str, Any]:
    state = [n.state] + (["DRAIN"] if n.drain else [])
    cpus = 28 * n.gpus_used
    return {
        "port": 6818, "node": {"state": state},
        "nodes": {"allocated": 0, "idle": 0, "other": 0, "total": 1, "hostnames": [], "addresses": [], "nodes": [n.name]},
        "cpus": {"allocated": cpus, "idle": 224 - cpus, "other": 0, "total": 224, "minimum": 224, "maximum": 224,
                 "load": {"minimum": cpus * 55, "maximum": cpus * 55}, "per_node": {"max": _INF}},
        "memory": {"minimum": 2063000, "maximum": 2063000, "free": {"minimum": _n(1441355), "maximum": _n(1441355)},
                   "allocated": 204800 * n.gpus_used},
        "features": {"total": "h100,ndr,spr", "active": "h100,ndr,spr"},
        "gres": {"total": "gpu:h100:8(S:0-1)", "used": f"gpu:h100:{n.gpus_used}(IDX:0-{max(0, n.gpus_used - 1)})"
                 if n.gpus_used else "gpu:h100:0(IDX:N/A)"},
        "cluster": cl.name, "comment": "", "extra": "",
        "reason": f"{n.reason}" if n.reason else "", "reservation": "",
        "partition": {"nodes": {"allowed_allocation": "", "configured": f"gpu[{1:0{cl.width}d}-{len(cl.nodes):0{cl.width}d}]",
                                "total": len(cl.nodes)}, "name": "gpu", "alternate": "", "cluster": cl.name,
                      "maximums": {"time": _n(2880), "nodes": _INF, "cpus_per_node": _INF}, "minimums": {"nodes": 0}},
        "sockets": {"minimum": 2, "maximum": 2}, "cores": {"minimum": 56, "maximum": 56},
        "threads": {"minimum": 2, "maximum": 2}, "disk": {"minimum": 0, "maximum": 0},
        "weight": {"minimum": 1, "maximum": 1},
    }


def sinfo_json(cl: Cluster) -> bytes:
    """``sinfo --json``: one row per node (as ``sinfo -N --json`` groups them)."""
    return orjson.dumps({"sinfo": [_sinfo_row(cl, n) for n in cl.nodes], "meta": _meta(cl, ["sinfo", "--json"]),
                         "errors": [], "warnings": []})


def _acct_job(cl: Cluster, j: Job) -> dict[str, Any]:
    gpus = j.gpus_per_node * j.num_nodes
    tres = [{"type": "cpu", "name": "", "id": 1, "count": 28 * gpus}, {"type": "node", "name": "", "id": 4,
                                                                        "count": j.num_nodes},
            {"type": "gres", "name": "gpu", "id": 1001, "count": gpus}]
    elapsed = int(((j.end or cl.captured_at) - j.start).total_seconds()) if j.start else 0
    state = "CANCELLED" if j.state == "CANCELLED" else j.state
    step_time = {"elapsed": elapsed, "end": _t(j.end), "start": _t(j.start), "suspended": 0}
    steps = [{"time": step_time, "exit_code": _exit(j.exit_code), "nodes": {"count": j.num_nodes,
                                                                           "range": cl.hostlist(j.nodes), "list": []},
              "tasks": {"count": 8 * j.num_nodes}, "state": [state], "step": {"id": f"{j.job_id}.{s}", "name": name},
              "tres": {"allocated": tres}} for s, name in (("batch", "batch"), ("0", "torchrun"))]
    return {
        "account": j.account, "comment": {"administrator": "", "job": "", "system": ""},
        "allocation_nodes": j.num_nodes, "association": {"account": j.account, "cluster": cl.name, "partition": "",
                                                         "user": j.user, "id": 7},
        "cluster": cl.name, "derived_exit_code": _OK_EXIT, "exit_code": _exit(j.exit_code), "failed_node": "",
        "time": {"elapsed": elapsed, "eligible": int(j.submit.timestamp()), "end": int(j.end.timestamp()) if j.end else 0,
                 "start": int(j.start.timestamp()) if j.start else 0, "submission": int(j.submit.timestamp()),
                 "suspended": 0, "limit": _n(j.time_limit_s // 60)},
        "flags": ["STARTED_ON_SUBMIT"], "group": j.user, "job_id": j.job_id, "name": j.name,
        "nodes": cl.hostlist(j.nodes), "partition": j.partition, "hold": False, "priority": _n(11000 + j.job_id % 900),
        "qos": "normal", "state": {"current": [state], "reason": "None"}, "steps": steps,
        "stdout_expanded": j.stdout, "stderr_expanded": j.stdout, "submit_line": "sbatch run.sbatch",
        "tres": {"allocated": tres, "requested": tres}, "user": j.user, "working_directory": j.work_dir,
    }


def sacct_json(cl: Cluster) -> bytes:
    """``sacct -a --json``: every job that ran in the window, with its batch and first steps."""
    jobs = [_acct_job(cl, j) for j in cl.jobs if j.state != "PENDING"]
    return orjson.dumps({"jobs": jobs, "meta": _meta(cl, ["sacct", "-a", "--json"]), "errors": [], "warnings": []})
