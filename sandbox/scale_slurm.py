"""Slurm text output of a synthetic cluster (sandbox/scale_model.py), as Slurm 23.11 prints it.

``squeue -a`` (default columns ``%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R``), ``sinfo`` (default
columns, one row per partition and state), ``sinfo -R`` (``%20E %9u %19H %N``), ``scontrol show
node`` / ``scontrol show job`` (key=value records) and ``sacct -a -X -p`` with Warden's live
``--format`` (one row per job allocation, as Warden's live plan asks for). Shapes: the Slurm man pages and the
recorded incidents under evals/incidents/.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta

import hostlist

from sandbox.scale_model import Cluster, Job, Node

__all__ = ["squeue_text", "sinfo_text", "sinfo_reasons_text", "scontrol_nodes", "scontrol_jobs", "sacct_text",
           "SACCT_FIELDS", "ts", "duration"]

SACCT_FIELDS = ("JobID,JobName,User,Account,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,NNodes,"
                "AllocTRES,NodeList,WorkDir")


def ts(t: datetime | None) -> str:
    """Slurm's timestamp (``2026-11-29T09:21:37``), ``Unknown`` for none."""
    return t.strftime("%Y-%m-%dT%H:%M:%S") if t else "Unknown"


def duration(seconds: int, *, squeue: bool = False) -> str:
    """``D-HH:MM:SS`` / ``HH:MM:SS``; squeue's TIME drops leading zero fields (``19:29``, ``6:13:31``)."""
    d, rest = divmod(max(0, int(seconds)), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    if squeue:
        return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
    return f"{h:02d}:{m:02d}:{s:02d}"


_ST = {"RUNNING": "R", "PENDING": "PD", "COMPLETING": "CG"}


def squeue_text(cl: Cluster) -> str:
    """``squeue -a``: running and pending jobs."""
    out = ["             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"]
    now = cl.captured_at
    for j in cl.jobs:
        if j.state not in _ST:
            continue
        elapsed = int((now - j.start).total_seconds()) if j.start and j.state == "RUNNING" else 0
        where = cl.hostlist(j.nodes) if j.state == "RUNNING" else f"({j.reason})"
        out.append(f"{j.job_id:>18} {j.partition:>9} {j.name[:8]:>8} {j.user[:8]:>8} {_ST[j.state]:>2} "
                   f"{duration(elapsed, squeue=True):>10} {j.num_nodes:>6} {where}")
    return "\n".join(out) + "\n"


def _sinfo_state(n: Node) -> str:
    if n.drain:
        return "drng" if n.state != "IDLE" else "drain"
    return {"IDLE": "idle", "MIXED": "mix", "ALLOCATED": "alloc"}[n.state]


def sinfo_text(cl: Cluster) -> str:
    """``sinfo``: one row per state of the ``gpu`` partition."""
    groups: dict[str, list[str]] = defaultdict(list)
    for n in cl.nodes:
        groups[_sinfo_state(n)].append(n.name)
    out = ["PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST"]
    for state in ("drng", "drain", "mix", "alloc", "idle"):
        if groups.get(state):
            out.append(f"{'gpu*':<9} {'up':>5} {'2-00:00:00':>10} {len(groups[state]):>6} {state:>6} "
                       f"{hostlist.collect_hostlist(groups[state])}")
    return "\n".join(out) + "\n"


def sinfo_reasons_text(cl: Cluster) -> str:
    """``sinfo -R``: drained nodes grouped by reason, user and time."""
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for n in cl.nodes:
        if n.drain and n.reason:
            groups[(n.reason[:20], n.reason_user or "root", ts(n.reason_time))].append(n.name)
    out = ["REASON               USER      TIMESTAMP           NODELIST"]
    for (reason, user, when), names in sorted(groups.items(), key=lambda kv: kv[0][2]):
        out.append(f"{reason:<20} {user:<9} {when:<19} {hostlist.collect_hostlist(names)}")
    return "\n".join(out) + "\n"


def _node_record(cl: Cluster, n: Node) -> str:
    state = n.state + ("+DRAIN" if n.drain else "")
    cpus = 28 * n.gpus_used
    mem = 200 * 1024 * n.gpus_used
    alloc = f"cpu={cpus},mem={n.gpus_used * 200}G,gres/gpu={n.gpus_used}" if n.gpus_used else ""
    reason = f"   Reason={n.reason} [{n.reason_user}@{ts(n.reason_time)}]\n" if n.reason else ""
    return (f"NodeName={n.name} Arch=x86_64 CoresPerSocket=56\n"
            f"   CPUAlloc={cpus} CPUEfctv=224 CPUTot=224 CPULoad={cpus * 0.55:.2f}\n"
            "   AvailableFeatures=h100,ndr,spr\n   ActiveFeatures=h100,ndr,spr\n   Gres=gpu:h100:8(S:0-1)\n"
            f"   NodeAddr={n.name} NodeHostName={n.name} Version=23.11.10\n"
            "   OS=Linux 5.15.0-122-generic #132-Ubuntu SMP Thu Aug 29 13:45:52 UTC 2024\n"
            f"   RealMemory=2063000 AllocMem={mem} FreeMem={2063000 - mem - 180000} Sockets=2 Boards=1\n"
            f"   State={state} ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
            "   Partitions=gpu\n"
            f"   BootTime={ts(n.boot_time)} SlurmdStartTime={ts(n.boot_time.replace(second=0))}\n"
            f"   LastBusyTime={ts(cl.captured_at)} ResumeAfterTime=None\n"
            "   CfgTRES=cpu=224,mem=2063000M,billing=224,gres/gpu=8\n"
            f"   AllocTRES={alloc}\n   CapWatts=n/a\n   CurrentWatts=0 AveWatts=0\n"
            f"   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n{reason}")


def scontrol_nodes(cl: Cluster) -> Iterator[str]:
    """``scontrol show node``, one record (ending in a blank line) at a time."""
    for n in cl.nodes:
        yield _node_record(cl, n) + "\n"


def _job_record(cl: Cluster, j: Job) -> str:
    uid = 20000 + sum(map(ord, j.user))
    nodes = cl.hostlist(j.nodes) if j.state != "PENDING" else ""
    end = ts(j.end) if j.end else ts(j.start + timedelta(seconds=j.time_limit_s)) if j.start else "Unknown"
    run = int(((j.end or cl.captured_at) - j.start).total_seconds()) if j.start else 0
    gpus = j.gpus_per_node * j.num_nodes
    tres = f"cpu={28 * gpus},mem={200 * gpus}G,node={j.num_nodes},billing={28 * gpus},gres/gpu={gpus}"
    reason = "NonZeroExitCode" if j.state == "FAILED" else j.reason
    batch = f"   BatchHost={cl.nodes[j.nodes[0]].name}\n" if j.nodes and j.state != "PENDING" else ""
    return (f"JobId={j.job_id} JobName={j.name}\n"
            f"   UserId={j.user}({uid}) GroupId={j.user}({uid}) MCS_label=N/A\n"
            f"   Priority={11000 + j.job_id % 900} Nice=0 Account={j.account} QOS=normal\n"
            f"   JobState={j.state} Reason={reason} Dependency=(null)\n"
            f"   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode={j.exit_code}\n"
            f"   RunTime={duration(run)} TimeLimit={duration(j.time_limit_s)} TimeMin=N/A\n"
            f"   SubmitTime={ts(j.submit)} EligibleTime={ts(j.submit)}\n   AccrueTime={ts(j.submit)}\n"
            f"   StartTime={ts(j.start)} EndTime={end} Deadline=N/A\n"
            f"   SuspendTime=None SecsPreSuspend=0 LastSchedEval={ts(j.start or j.submit)} Scheduler=Main\n"
            f"   Partition={j.partition} AllocNode:Sid=login01:2359628\n"
            f"   ReqNodeList=(null) ExcNodeList=(null)\n   NodeList={nodes}\n{batch}"
            f"   NumNodes={j.num_nodes} NumCPUs={28 * gpus} NumTasks={gpus} CPUs/Task=28 ReqB:S:C:T=0:0:*:*\n"
            f"   ReqTRES={tres}\n   AllocTRES={tres if j.state != 'PENDING' else ''}\n"
            "   Socks/Node=* NtasksPerN:B:S:C=8:0:*:* CoreSpec=*\n"
            "   MinCPUsNode=224 MinMemoryNode=1600G MinTmpDiskNode=0\n"
            "   Features=(null) DelayBoot=00:00:00\n"
            "   OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null)\n"
            f"   Command={j.work_dir}/run.sbatch\n   WorkDir={j.work_dir}\n"
            f"   StdErr={j.stdout}\n   StdIn=/dev/null\n   StdOut={j.stdout}\n"
            f"   TresPerNode=gres/gpu:{j.gpus_per_node}\n")


def scontrol_jobs(cl: Cluster) -> Iterator[str]:
    """``scontrol show job``: the queue (running, pending) and jobs that ended in the last
    five minutes (MinJobAge), one record at a time."""
    recent = cl.captured_at.timestamp() - 300
    for j in cl.jobs:
        if j.state in ("RUNNING", "PENDING") or (j.end and j.end.timestamp() >= recent):
            yield _job_record(cl, j) + "\n"


def _sacct_row(cl: Cluster, j: Job) -> str | None:
    if j.state == "PENDING":
        return None
    end = ts(j.end) if j.end else "Unknown"
    elapsed = duration(int(((j.end or cl.captured_at) - j.start).total_seconds())) if j.start else "00:00:00"
    gpus = j.gpus_per_node * j.num_nodes
    tres = f"billing={28 * gpus},cpu={28 * gpus},gres/gpu={gpus},mem={200 * gpus}G,node={j.num_nodes}"
    state = "CANCELLED by 20417" if j.state == "CANCELLED" else j.state
    return (f"{j.job_id}|{j.name}|{j.user}|{j.account}|{j.partition}|{state}|{j.exit_code}|{ts(j.submit)}|"
            f"{ts(j.start)}|{end}|{elapsed}|{duration(j.time_limit_s)}|{j.num_nodes}|{tres}|{cl.hostlist(j.nodes)}|"
            f"{j.work_dir}|")


def sacct_text(cl: Cluster) -> Iterator[str]:
    """``sacct -a -X -p -S <6 h ago> --format=...``: every job that ran in the window."""
    yield SACCT_FIELDS.replace(",", "|") + "|\n"
    for j in cl.jobs:
        row = _sacct_row(cl, j)
        if row:
            yield row + "\n"
