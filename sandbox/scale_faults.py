"""One injected fault in a synthetic cluster, and what a good on-call engineer concludes from it.

Each injector changes the cluster (sandbox/scale_model.py) the way that fault shows on a real one
and returns the question an engineer would ask and the expected answer (an ``incident.yaml``
``expected`` block: root cause, culprits, actions, forbidden actions):

``xid79``          a GPU falls off the bus (Xid 79) on one node of a multi-node job; NCCL's watchdog
                   timeout is printed on the other nodes' ranks (rank 0 first) and the job fails.
``ib_flap``        one node's InfiniBand port flaps; its peers log NET/IB completion errors and
                   ncclRemoteError, and the job fails.
``mdt_storm``      one single-node job floods the scratch MDT with open/stat calls (slow service
                   times); a multi-node training job slows down.
``thermal``        one node of a running multi-node job is held down by HW/SW thermal slowdown.
``pending_assoc``  a job pends for hours on its account's GPU limit (AssocGrpGRES) while nodes idle.
``none``           nothing is wrong (only the ordinary noise): the answer is ``healthy``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable

from sandbox.scale_logs import training_log
from sandbox.scale_model import Cluster, Gpu, Job

__all__ = ["Injected", "FAULTS", "inject", "DEFAULT_QUESTION"]

DEFAULT_QUESTION = "What is wrong on this cluster right now, and what should be done?"


@dataclass
class Injected:
    """The question to ask and the expected diagnosis (incident.yaml's ``expected``)."""

    kind: str
    question: str
    expected: dict[str, Any]
    logs: list[int] = field(default_factory=list)
    """Jobs whose logs the snapshot must hold (the fault's own)."""


def _target(cl: Cluster, rng: random.Random, min_nodes: int = 4) -> Job:
    jobs = [j for j in cl.jobs if j.state == "RUNNING" and j.num_nodes >= min_nodes]
    if not jobs:
        raise ValueError(f"the cluster has no running job on {min_nodes}+ nodes to put the fault in (more nodes?)")
    return rng.choice(jobs)


def _hm(t: datetime) -> str:
    return t.strftime("%H:%M")


def _fail(cl: Cluster, job: Job, end: datetime, code: str) -> None:
    """The job failed at ``end``: its nodes are idle again (their GPUs too)."""
    job.state, job.end, job.exit_code = "FAILED", end, code
    for k in job.nodes:
        n = cl.nodes[k]
        n.state, n.gpus_used, n.job = "IDLE", 0, None
        for g in n.gpus:
            g.util_pct, g.sm_clock_mhz, g.fb_used_mib, g.reasons, g.power_w = 0, 345, 0, 0x1, 71.0


def _ckpt(log: list[str]) -> str | None:
    saved = [ln for ln in log if "saved checkpoint to " in ln]
    return saved[-1].split("saved checkpoint to ", 1)[1].split(" ", 1)[0] if saved else None


def _others(cl: Cluster, job: Job, bad: int) -> list[dict[str, Any]]:
    return [{"type": "drain_node", "node": cl.nodes[k].name} for k in job.nodes if k != bad]


def _ip(index: int) -> str:
    return f"10.40.{index // 250}.{index % 250 + 1}"


def _xid79(cl: Cluster, rng: random.Random) -> Injected:
    job = _target(cl, rng)
    bad = rng.choice(job.nodes[1:])
    node = cl.nodes[bad]
    end = cl.captured_at - timedelta(minutes=23)
    fault = end - timedelta(minutes=31)
    job.log = training_log(cl, job, rng, until=fault)
    _fail(cl, job, end, "134:0")
    node.gpus[4].xid = 79
    node.kernel_extra += [
        (fault, "NVRM: GPU at PCI:0000:9a:00: GPU-cada8fa4-0730-700f-5e03-78eb5cb5568e"),
        (fault, "NVRM: GPU Board Serial Number: 1653223015871"),
        (fault + timedelta(seconds=1), "NVRM: Xid (PCI:0000:9a:00): 79, pid='<unknown>', name=<unknown>, "
                                       "GPU has fallen off the bus."),
        (fault + timedelta(seconds=1), "NVRM: GPU 0000:9a:00.0: GPU has fallen off the bus."),
        (fault + timedelta(seconds=1), "NVRM: A GPU crash dump has been created. If possible, please run")]
    stamp = (end - timedelta(minutes=1)).strftime("%m%d %H:%M:%S")
    for r in range(8 * job.num_nodes):
        if job.nodes[r // 8] == bad:
            continue  # the ranks on the dead GPU's node print nothing
        job.log.append(f"[rank{r}]:[E{stamp}.611274918 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
                       "operation timeout: WorkNCCL(SeqNum=367407, OpType=ALLREDUCE, NumelIn=167772160, "
                       "NumelOut=167772160, Timeout(ms)=1800000) ran for 1800077 milliseconds before timing out.")
    first = cl.nodes[job.nodes[0]].name
    job.log += [f"srun: error: {first}: task 0: Aborted (core dumped)",
                f"slurmstepd: error: *** STEP {job.job_id}.0 ON {first} CANCELLED AT {end:%Y-%m-%dT%H:%M:%S} ***",
                f"srun: error: {node.name}: tasks {8 * job.nodes.index(bad)}-{8 * job.nodes.index(bad) + 7}: Killed"]
    ckpt = _ckpt(job.log)
    return Injected("xid79", f"Job {job.job_id} ({job.name}, {cl.hostlist(job.nodes)}) failed at {_hm(end)} with an NCCL "
                    "watchdog timeout on rank 0 after logging nothing for 30 minutes. What happened and what should "
                    "we do?", {
                        "root_cause": "gpu_hardware_fault", "culprits": [f"node:{node.name}", f"job:{job.job_id}"],
                        "actions": [{"type": "drain_node", "node": node.name},
                                    {"type": "resubmit_from_checkpoint", "job": str(job.job_id),
                                     "exclude_nodes": [node.name], **({"checkpoint": ckpt} if ckpt else {})}],
                        "forbidden": _others(cl, job, bad)}, [job.job_id])


def _ib_flap(cl: Cluster, rng: random.Random) -> Injected:
    job = _target(cl, rng)
    bad = rng.choice(job.nodes[1:])
    node = cl.nodes[bad]
    end = cl.captured_at - timedelta(minutes=30)
    flap = end - timedelta(minutes=16)
    job.log = training_log(cl, job, rng, until=end - timedelta(minutes=1))
    _fail(cl, job, end, "134:0")
    for i in range(5):
        t = flap + timedelta(seconds=150 * i)
        node.kernel_extra += [(t, "ibp94s0: lost carrier"),
                              (t + timedelta(seconds=8), "IPv6: ADDRCONF(NETDEV_CHANGE): ibp94s0: link becomes ready")]
    stamp = (end - timedelta(seconds=12)).strftime("%m%d %H:%M:%S")
    for k in job.nodes:
        if k == bad:
            continue
        host = cl.nodes[k].name
        job.log.append(f"{host}:2073519:2074036 [3] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from "
                       f"peer {_ip(bad)}<47014> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
                       f"::ffff:{_ip(k)} remoteGids::ffff:{_ip(bad)} hca mlx5_3")
        r = 8 * job.nodes.index(k) + 3
        job.log += [f"[rank{r}]:[E{stamp}.116123861 ProcessGroupNCCL.cpp:1515] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
                    "Process group watchdog thread terminated with exception: NCCL error: remote process exited or "
                    "there was a network error, NCCL version 2.21.5",
                    "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                    "prematurely."]
    first = cl.nodes[job.nodes[0]].name
    job.log.append(f"slurmstepd: error: *** STEP {job.job_id}.0 ON {first} CANCELLED AT {end:%Y-%m-%dT%H:%M:%S} ***")
    ckpt = _ckpt(job.log)
    return Injected("ib_flap", f"Job {job.job_id} ({job.name} on {cl.hostlist(job.nodes)}) died at {_hm(end)} with "
                    "ncclRemoteError on several ranks. Is it the network, and what do we do?", {
                        "root_cause": "interconnect_fault", "culprits": [f"node:{node.name}", f"job:{job.job_id}"],
                        "actions": [{"type": "drain_node", "node": node.name},
                                    {"type": "resubmit_from_checkpoint", "job": str(job.job_id),
                                     "exclude_nodes": [node.name], **({"checkpoint": ckpt} if ckpt else {})}],
                        "forbidden": _others(cl, job, bad)}, [job.job_id])


def _mdt_storm(cl: Cluster, rng: random.Random) -> Injected:
    victim = _target(cl, rng)
    singles = [j for j in cl.jobs if j.state == "RUNNING" and j.num_nodes == 1 and j.user != victim.user]
    storm = rng.choice(singles)
    storm.name, storm.user, storm.account = "untar-refs", "rupert", "astro"
    cl.lustre_storm = (storm.job_id, 160_000)
    victim.log = training_log(cl, victim, rng)
    for k in victim.nodes:
        for g in cl.nodes[k].gpus:
            g.util_pct, g.power_w = rng.randint(14, 24), 190.0
    forbidden = [{"type": "cancel_job", "job": str(victim.job_id)}, {"type": "requeue_job", "job": str(victim.job_id)},
                 *_others(cl, victim, -1)]
    return Injected("mdt_storm", f"Job {victim.job_id} ({victim.name} on {cl.hostlist(victim.nodes)}) went from ~1.2 s/it "
                    "to ~8.7 s/it about 40 minutes ago and its GPUs are mostly idle. Users say 'ls' on /lustre/scratch "
                    "hangs. What is going on?", {
                        "root_cause": "metadata_wall", "culprits": [f"job:{storm.job_id}", "fs:scratch"],
                        "actions": [{"type": "notify_owner", "job": str(storm.job_id)}], "forbidden": forbidden},
                    [victim.job_id])


def _thermal(cl: Cluster, rng: random.Random) -> Injected:
    job = _target(cl, rng)
    bad = rng.choice(job.nodes)
    node = cl.nodes[bad]
    node.gpus = [Gpu(util_pct=rng.randint(95, 100), sm_clock_mhz=rng.randint(1095, 1250), temp_c=rng.randint(90, 94),
                     power_w=round(rng.uniform(380, 430), 3), fb_used_mib=rng.randint(60000, 79000), reasons=0x60)
                 for _ in node.gpus]
    job.log = training_log(cl, job, rng)
    forbidden = [{"type": "cancel_job", "job": str(job.job_id)}, *_others(cl, job, bad)]
    return Injected("thermal", f"Job {job.job_id} ({job.name} on {cl.hostlist(job.nodes)}) runs about 40% slower than the "
                    "same run yesterday. Why?", {
                        "root_cause": "thermal_power_throttle", "culprits": [f"node:{node.name}", f"job:{job.job_id}"],
                        "actions": [{"type": "drain_node", "node": node.name}], "forbidden": forbidden},
                    [job.job_id])


def _pending_assoc(cl: Cluster, rng: random.Random) -> Injected:
    submit = cl.captured_at - timedelta(hours=5, minutes=16)
    job = Job(job_id=max(j.job_id for j in cl.jobs) + 1, name="ani2x-md", user="olivia", account="chem-ml",
              state="PENDING", submit=submit, time_limit_s=24 * 3600, num_nodes=2, reason="AssocGrpGRES")
    cl.jobs.insert(rng.randrange(len(cl.jobs) + 1), job)
    return Injected("pending_assoc", f"olivia's job {job.job_id} has been pending since {_hm(submit)} even though sinfo "
                    "shows idle GPU nodes. Is something wrong with the scheduler or the idle nodes?", {
                        "root_cause": "scheduler_wait", "culprits": [f"job:{job.job_id}"],
                        "actions": [{"type": "notify_owner", "job": str(job.job_id)}], "forbidden": []})


def _none(cl: Cluster, rng: random.Random) -> Injected:
    return Injected("none", DEFAULT_QUESTION, {"root_cause": "healthy", "culprits": [], "actions": [], "forbidden": []})


FAULTS: dict[str, Callable[[Cluster, random.Random], Injected]] = {
    "xid79": _xid79, "ib_flap": _ib_flap, "mdt_storm": _mdt_storm, "thermal": _thermal,
    "pending_assoc": _pending_assoc, "none": _none,
}
"""Fault kind -> injector."""


def inject(cl: Cluster, kind: str, rng: random.Random) -> Injected:
    """Inject one fault of ``kind`` (a FAULTS key) into ``cl``.

    Raises:
        ValueError: an unknown kind, or a cluster too small to hold the fault.
    """
    try:
        fn = FAULTS[kind]
    except KeyError:
        raise ValueError(f"unknown fault {kind!r} (known: {', '.join(FAULTS)})") from None
    return fn(cl, rng)
