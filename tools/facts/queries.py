"""Fact queries that several checks (and the live plan) share: when an event happened, which jobs a
node's fault hurt, which jobs form one training run, where its newest checkpoint is, which node a
rank ran on. Pure functions over Facts, each using its indexes (no scan of every job per job).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone

from tools.facts.model import Facts
from tools.knowledge.checkpoints import is_pointer, loader_refused
from tools.models.logs import CheckpointEvent, HostFaultEvent, KernelEventBase
from tools.models.k8s import K8sPod

__all__ = [
    "host_faults_by_node", "kernel_log_nodes",
    "ACTIVE_STATES", "ENDED_BADLY", "event_time", "kernel_event_time", "affected_jobs", "is_slurm_job_id",
    "same_run_jobs", "newest_checkpoint", "rank_node", "printed_on", "job_nodes", "job_user", "job_state", "first_seen",
    "CONTROL_DAEMONS", "control_plane_hosts", "same_job_name", "idle_fit_unread",
]

ACTIVE_STATES = ("RUNNING", "COMPLETING", "SUSPENDED")
ENDED_BADLY = ("FAILED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "PREEMPTED", "BOOT_FAIL", "DEADLINE")

_MONOTONIC = re.compile(r"^\[\s*(?P<s>\d+(?:\.\d+)?)\]$")
_GPFS_TS = re.compile(r"^(?P<d>\d{4}-\d\d-\d\d)_(?P<t>\d\d:\d\d:\d\d(?:\.\d+)?)(?P<z>[+-]\d{4})?$")


def kernel_log_nodes(facts: Facts) -> set[str]:
    """Nodes whose kernel log (format ``kernel-log``: dmesg, journalctl -k) is in the snapshot; built once."""
    return facts.cached("kernel_log_nodes", lambda: {a.node for a in facts.artifacts
                                                     if a.format == "kernel-log" and a.node})


def kernel_event_time(facts: Facts, ev: KernelEventBase) -> datetime | None:
    """When a kernel/system line was logged, as UTC (the snapshots' convention for zone-less times):
    ``dmesg -T`` / journalctl / ISO / GPFS prefixes, or dmesg seconds since boot plus the node's
    BootTime; None when it cannot be told."""
    ts = (ev.timestamp or "").strip()
    m = _MONOTONIC.match(ts)
    if m:
        node = facts.node(ev.node or "")
        if not node or not node.boot_time:
            return None
        try:
            return node.boot_time + timedelta(seconds=float(m["s"]))
        except OverflowError:  # an absurd uptime in a damaged or hostile line
            return None
    text = " ".join(ts.strip("[]").split())
    g = _GPFS_TS.match(text)
    if g:
        text = f"{g['d']}T{g['t']}" + (f"{g['z'][:3]}:{g['z'][3:]}" if g["z"] else "")
    for fmt, year in (("%a %b %d %H:%M:%S %Y", ""), ("%b %d %H:%M:%S %Y", f" {facts.captured_at.year}")):
        try:
            return datetime.strptime(text.split(".")[0] + year, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            pass
    try:
        when = datetime.fromisoformat(text.replace(",", "."))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def event_time(facts: Facts, ev: object) -> datetime | None:
    """When any event happened: a job-log event's parsed timestamp or a kernel line's prefix."""
    if isinstance(ev, KernelEventBase):
        return kernel_event_time(facts, ev)
    ts = getattr(ev, "timestamp", None)
    return ts if isinstance(ts, datetime) else None


def first_seen(facts: Facts, events: Iterable[object]) -> datetime | None:
    """The earliest known time among ``events`` (None when none can be told)."""
    times = [t for e in events if (t := event_time(facts, e)) is not None]
    return min(times) if times else None


def job_state(facts: Facts, job_id: str) -> str:
    """The job's base state: the queue's view, else accounting's (``CANCELLED by 0`` -> ``CANCELLED``)."""
    j = facts.job(job_id)
    if j and j.state:
        return j.state
    a = facts.acct_job(job_id)
    return (a.state or "").split(" ")[0] if a else ""


def job_nodes(facts: Facts, job_id: str) -> list[str]:
    """The nodes the job ran on (queue view, else accounting, else for a ``namespace/pod`` the node the pod is
    bound to, else the known nodes its log lines name as printing hosts)."""
    j = facts.job(job_id)
    if j and j.nodes:
        return j.nodes
    a = facts.acct_job(job_id)
    if a and a.nodes:
        return a.nodes
    if "/" in job_id:  # a pod's container log (manifest ``pod: namespace/name``): the node it is bound to
        pod = facts.cached("pods_by_ref", lambda: {p.ref: p for p in facts.k8s_pods}).get(job_id)
        if pod is not None and pod.node:
            return [pod.node]
    known = facts.node_names()
    return sorted(h for h in facts.log_hosts(job_id) if h in known or not known)


def job_user(facts: Facts, job_id: str) -> str | None:
    """The job's owner (queue view, else accounting)."""
    j = facts.job(job_id)
    a = facts.acct_job(job_id)
    return (j.user if j else None) or (a.user if a else None)


def affected_jobs(facts: Facts, nodes: Iterable[str], *, since: datetime | None = None) -> list[str]:
    """Ids of jobs hurt by faults on ``nodes``: running there now, or ended badly there (sacct).

    ``since``, when the fault was first logged: a job that had already ended more than a minute
    before it (one cancelled there hours earlier) lost nothing to this fault and is left out.

    Sources: squeue/scontrol (allocation) and sacct (job rows, not steps). Order: as reported.
    """
    def ended_before(state: str, end: datetime | None) -> bool:
        return since is not None and end is not None and state not in ACTIVE_STATES and end < since - timedelta(minutes=1)

    ids: dict[str, None] = {}
    wanted = list(dict.fromkeys(nodes))
    for n in wanted:
        for j in facts.jobs_on_node(n, states=None):
            state = j.state or ""
            if state in ACTIVE_STATES + ENDED_BADLY and not ended_before(state, j.end_time):
                ids.setdefault(j.job_id)
    for n in wanted:
        for r in facts.acct_on_node(n):
            state = (r.state or "").split(" ")[0]
            if state in ACTIVE_STATES + ENDED_BADLY and not ended_before(state, r.end_time):
                ids.setdefault(r.job_id)
    for n in wanted:  # no node list in queue or accounting (sacct's default columns): the job's own log says
        for jid in facts.jobs_logged_on(n):
            j, a = facts.job(jid), facts.acct_job(jid)
            if jid in ids or (j is not None and j.nodes) or (a is not None and a.nodes):
                continue
            state = job_state(facts, jid)
            rec = facts.job(jid) or facts.acct_job(jid)
            if (not state or state in ACTIVE_STATES + ENDED_BADLY) and not ended_before(state, rec.end_time if rec else None):
                ids.setdefault(jid)
    return list(ids)


_SLURM_JOB_ID = re.compile(r"\d{1,12}(?:_\d{1,9})?")


def is_slurm_job_id(job_id: str) -> bool:
    """True for a Slurm job id (``4242``, array task ``4242_7``). Lustre job_stats name work by
    its jobid_var: with ``jobid_name=%e.%u`` or no Slurm job the id is ``procname.uid``
    (``rsync.1000``, ``dd.0``), a process, not a job anyone can notify or resubmit."""
    return bool(_SLURM_JOB_ID.fullmatch(job_id))


def _home_like(path: str | None, user: str | None) -> bool:
    p = (path or "").rstrip("/")
    return not p or p in ("/root", "/tmp") or (user is not None and p.endswith(f"/{user}") and p.count("/") <= 2)


def same_run_jobs(facts: Facts, job_id: str) -> list[str]:
    """The job and the other jobs of the same training run: the same user and either the same job
    name or the same working directory (other than a home directory) in squeue/scontrol or sacct —
    a resubmission chain writes its checkpoints to one place."""
    def ident(jid: str) -> tuple[str | None, str | None, str | None]:
        j, a = facts.job(jid), facts.acct_job(jid)
        user = (j.user if j else None) or (a.user if a else None)
        name = (j.name if j else None) or (a.name if a else None)
        work = j.work_dir if j else None
        return user, name, None if _home_like(work, user) else work

    user, name, work = ident(job_id)
    ids = [job_id]
    if user:
        candidates = [j.job_id for j in facts.jobs_of_user(user)] + [r.job_id for r in facts.acct_of_user(user)]
        for jid in dict.fromkeys(candidates):
            u, n, w = ident(jid)
            if jid not in ids and u == user and ((name and n and same_job_name(n, name)) or (work and w == work)):
                ids.append(jid)
    elif name and name.lower() not in _GENERIC_NAMES:
        # No user known for the job (sacct's default -o has none): the same distinctive job name.
        by_name = facts.cached("jobs_by_name", lambda: _by_name(facts))
        ids += [jid for jid in by_name.get(name, []) if jid != job_id]
    return ids


def same_job_name(a: str, b: str) -> bool:
    """Job names equal, or one is the other cut as squeue (``%.8j``: ``mistral-``) or sacct (``mistral-s+``) cut it."""
    if a == b:
        return True
    short, full = sorted((a, b), key=len)
    cut = short.removesuffix("+")
    return len(cut) in (8, 9) and full.startswith(cut)


_GENERIC_NAMES = frozenset({"bash", "sh", "python", "python3", "train", "train.sh", "run.sh", "job", "sbatch", "wrap",
                            "interactive", "srun", "script", "test", "jupyter"})
"""Job names too common to tie two jobs to one run without a user."""


def _by_name(facts: Facts) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for jid, nm in [(j.job_id, j.name) for j in facts.jobs] + [(r.job_id, r.name) for r in facts.acct]:
        if nm and jid not in out.setdefault(nm, []):
            out[nm].append(jid)
    return out


def newest_checkpoint(facts: Facts, job_id: str, *, bad: Iterable[str] = ()) -> str | None:
    """The newest checkpoint saved by the job's training run (job-log checkpoint_saved events of
    the job and of earlier jobs of the same run), skipping paths in ``bad`` (a checkpoint, or a file
    inside one), paths that a checkpoint write failure or a later failed load names (a load through a pointer
    such as ``latest``: the newest save before it); None when no log names one."""
    run = same_run_jobs(facts, job_id)
    events = [e for j in run for e in facts.job_events(j)]
    failed = [e.message for e in events if e.kind in ("checkpoint_write_failure", "enospc")]
    skip = {b.rstrip("/") for b in bad}

    dirs = {e.path.rstrip("/") for e in events if isinstance(e, CheckpointEvent) and e.kind == "checkpoint_saved" and e.path}

    def is_bad(path: str) -> bool:  # the checkpoint itself, or a file inside it (step_5 vs step_5/model.pt)
        p = path.rstrip("/")
        return p in skip or any(b.startswith(p + "/") or p.startswith(b + "/") for b in skip)

    # A checkpoint a later job of the run failed to load is no resume point either; a failure through a pointer
    # (``latest``, ``last.ckpt``) names the newest save made before it.
    loads = [e for e in events if isinstance(e, CheckpointEvent) and e.kind == "checkpoint_load_failure" and e.path
             and not loader_refused(e.message)]
    # A pointer the run itself saved as a file (Lightning's last.ckpt) is that file, not the newest other save.
    pointers = [e for e in loads if is_pointer(e.path or "") and (e.path or "").rstrip("/") not in dirs]
    skip |= {e.path.rstrip("/") for e in loads if e not in pointers}
    # A saved checkpoint directory that holds a bad file is bad, and so is every other file saved inside it.
    skip |= {d for d in dirs if any(b.startswith(d + "/") for b in skip)}
    saved = [e for e in events if isinstance(e, CheckpointEvent) and e.kind == "checkpoint_saved" and e.path
             and not is_bad(e.path) and not any(e.path in m for m in failed)]

    def order(e: CheckpointEvent) -> tuple:
        return (e.step if e.step is not None else -1, e.timestamp.timestamp() if e.timestamp else 0.0, e.line)

    for load in pointers:
        before = [e for e in saved if not (e.timestamp and load.timestamp and e.timestamp > load.timestamp)]
        if before:
            saved.remove(max(before, key=order))
    if not saved:
        return None

    best = max(saved, key=order).path or ""
    # A shard or state file inside a checkpoint the run saved as a whole: resume from that checkpoint.
    outer = [d for d in dirs if best.rstrip("/").startswith(d + "/")]
    return min(outer, key=len) if outer else best


def _in_tasks(rank: int, tasks: str) -> bool:
    """Whether ``rank`` is in srun's task list (``9``, ``0-7``, ``0,2,4-6``)."""
    for part in tasks.split(","):
        lo, _, hi = part.strip().partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()) and int(lo) <= rank <= int(hi or lo):
            return True
    return False


def rank_node(facts: Facts, job_id: str, rank: int) -> str | None:
    """The node a global rank runs on: where srun said that task ended (``srun: error: NODE: task 9: ...``),
    else by Slurm's block distribution (ranks fill a node's GPUs before the next node, one rank per GPU);
    None when neither tells."""
    for e in facts.job_events(job_id):
        tasks, node = getattr(e, "tasks", None), getattr(e, "node", None)
        if e.kind == "slurm_message" and tasks and node and _in_tasks(rank, tasks):
            return node
    job = facts.job(job_id)
    acct = facts.acct_job(job_id)
    nodes = (job.nodes if job else []) or (acct.nodes if acct else [])
    if not nodes:
        return None
    gpus = (job.num_gpus if job else None) or (acct.num_gpus if acct else None)
    per_node = gpus // len(nodes) if gpus and gpus >= len(nodes) else None
    if per_node is None:
        node = facts.node(nodes[0])
        per_node = node.gpus_total if node and node.gpus_total else None
    if not per_node:
        return None
    idx = rank // per_node
    return nodes[idx] if idx < len(nodes) else None


def printed_on(facts: Facts, ev: object) -> str | None:
    """The node a job-log line came from: the host it names (one of the job's nodes or a known node), else
    its rank's node (``rank_node``), else the job's only node; None when none of these tells.

    Sources: the event's ``host``/``rank`` fields; squeue/scontrol/sacct allocations; srun task lines."""
    job = getattr(ev, "job", None) or ""
    allocated = job_nodes(facts, job)
    host = getattr(ev, "host", None)
    if host and (host in allocated or facts.node(host) is not None):
        return host
    rank = getattr(ev, "rank", None)
    if rank is not None and (node := rank_node(facts, job, rank)):
        return node
    return allocated[0] if len(allocated) == 1 else None


CONTROL_DAEMONS = ("slurmctld", "slurmdbd")
_ACCOUNTING_DB = ("mariadbd", "mysqld", "mariadb", "mysql")
"""slurmdbd's database server (MariaDB/MySQL, as its syslog tag names it): part of the control plane."""


_POD_CGROUP = re.compile(r"pod(?P<uid>[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")
_CONTAINER_CGROUP = re.compile(r"(?:cri-containerd-|crio-|docker-|/)(?P<id>[0-9a-f]{64})(?:\.scope)?")


def pod_of_cgroup(facts: Facts, path: str | None) -> K8sPod | None:
    """The Kubernetes pod a kernel cgroup path belongs to (an OOM kill's ``task_memcg=``): by the container id
    (``cri-containerd-<64 hex>.scope``, matched against the pods' current and last container ids), else by the
    pod uid the kubelet puts in the slice name (``kubepods-burstable-pod<uid>.slice``, ``_`` for ``-``; cgroupfs
    ``/kubepods/burstable/pod<uid>/``). None when no pod read matches. Source: k8s pods (-o json)."""
    if not path or "kubepods" not in path or not facts.k8s_pods:
        return None
    if (c := _CONTAINER_CGROUP.search(path)) is not None:
        for pod in facts.k8s_pods:
            if any(c["id"] in st.container_ids for st in pod.containers):
                return pod
    if (u := _POD_CGROUP.search(path)) is not None:
        uid = u["uid"].replace("_", "-")
        return next((p for p in facts.k8s_pods if p.uid == uid), None)
    return None


POWER_SAVED = ("POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN")
"""Slurm power-saving flags (sinfo ``~`` and ``%``): SuspendProgram is shutting the node off or has."""


def powered_off(facts: Facts, node: str) -> bool:
    """Whether Slurm's power saving has the node off or going off (POWERED_DOWN, POWERING_DOWN, POWER_DOWN): its
    links and devices going down then are the shutdown, not faults. Source: sinfo / scontrol show node flags."""
    return facts.cached("powered_off", lambda: _powered_off_table(facts)).get(node, False)


def _powered_off_table(facts: Facts) -> dict[str, bool]:
    """{node name: powered_off} for every Slurm node, as ``Facts.node`` finds it (the last record of a name): one
    pass, not a lookup and a flag scan per call (50,000 calls at 10,000 nodes, one per kernel event)."""
    return {n.name: any(f in n.flags for f in POWER_SAVED) or (n.state or "") in POWER_SAVED for n in facts.nodes}


def control_plane_hosts(facts: Facts) -> dict[str, list[KernelEventBase]]:
    """Hosts that run Slurm's control plane (slurmctld, slurmdbd and its MariaDB/MySQL), with the kernel/syslog
    lines that show it: the kernel names slurmctld or slurmdbd as a task it blocked (``INFO: task slurmctld:2211 blocked for more than 122
    seconds``) or killed (OOM), or the host's log holds those daemons' own lines.

    Returns {node: [events naming a control daemon]}. Sources: kernel-log/syslog records per node."""
    hosts: dict[str, list[KernelEventBase]] = {}
    for ev in facts.kernel_events_of("hung_task", "oom_kill"):
        if ev.node and (getattr(ev, "process", None) or "") in CONTROL_DAEMONS:
            hosts.setdefault(ev.node, []).append(ev)
    for ev in facts.kernel_events_of("slurm_node", "generic"):
        if ev.node and (ev.source or "").startswith(CONTROL_DAEMONS + _ACCOUNTING_DB):
            hosts.setdefault(ev.node, [])
    return hosts


def idle_fit_unread(facts: Facts, job_id: str) -> list[str]:
    """For a job PENDING on Resources whose request was never read (no ``scontrol show job`` or JSON view, only
    squeue's columns): the IDLE, undrained nodes of its partition, when there are at least as many as it asks
    for — nodes it seems to fit, for a reason (its GPUs, memory, features or time limit, or nodes the scheduler
    holds for a job ahead of it) that cannot be read. Empty otherwise.

    Sources: squeue (state, reason, node count, partition), sinfo (node states), the snapshot's formats."""
    job = facts.job(job_id)
    if job is None or (job.state or "") != "PENDING" or not (job.reason or "").startswith("Resources") \
            or not job.num_nodes:
        return []
    if any(a.format in ("scontrol-job-text", "squeue-json") for a in facts.artifacts):
        return []
    idle = [n.name for n in facts.nodes if (n.state or "") == "IDLE" and not n.drained
            and (not job.partition or job.partition in n.partitions)]
    return idle if len(idle) >= job.num_nodes else []


def host_faults_by_node(facts: Facts, what: str) -> dict[str, list[HostFaultEvent]]:
    """The kernel's host_fault events of one kind (``iommu_fault``, ``cpu_thermal`` ...) per node, in log order;
    events with no node are left out. Source: kernel/system logs (tools.parsers.kernel._host)."""
    out: dict[str, list[HostFaultEvent]] = {}
    for ev in facts.kernel_events_of("host_fault"):
        if isinstance(ev, HostFaultEvent) and ev.what == what and ev.node:
            out.setdefault(ev.node, []).append(ev)
    return out
