"""The synthetic large cluster behind sandbox/scale.py: nodes, jobs and ordinary noise, seeded.

A cluster of ``nodes`` GPU nodes (8 GPUs each) and ``jobs`` jobs, every choice drawn from one
``random.Random(seed)`` so the same arguments always give the same cluster:

* running jobs fill about 85 % of the nodes with contiguous allocations (1 to 32 nodes each, most
  single-node, as on any large site); 30 % of the jobs are pending (Priority, Resources,
  Dependency, BeginTime; none waiting longer than five hours); the rest ended inside the six-hour
  sacct window (mostly COMPLETED, some CANCELLED by their owner, a few FAILED on exit code 1);
* about 0.5 % of the nodes are idle and drained by an administrator with an ordinary reason (BIOS
  update, PDU work, firmware);
* busy GPUs are busy (85-100 % utilisation, full SM clock, 55-78 C, the SW power cap clock-event
  bit that full load sets), idle GPUs idle (idle clocks, the GPU-idle bit).

sandbox/scale_faults.py then injects one fault; the renderers (scale_slurm, scale_gpu, scale_logs)
print the cluster in the formats Warden parses.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

__all__ = ["Node", "Job", "Gpu", "Cluster", "build_cluster", "node_range", "CAPTURED_AT", "USERS"]

CAPTURED_AT = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
"""The synthetic clusters' "now"."""

USERS = [("alice", "ml-llm"), ("bob", "ml-vision"), ("carol", "ml-vision"), ("dave", "bio-md"), ("erin", "nlp-core"),
         ("frank", "nlp-core"), ("grace", "ml-vision"), ("heidi", "ml-llm"), ("ivan", "bio-md"), ("judy", "ml-llm"),
         ("mallory", "climate"), ("niaj", "climate"), ("olivia", "chem-ml"), ("peggy", "chem-ml"), ("rupert", "astro"),
         ("sybil", "astro"), ("trent", "ml-rl"), ("victor", "ml-rl"), ("walter", "genomics"), ("yves", "genomics")]
_NAMES = ["llm13b-pt", "llm7b-sft", "vit-h14-in22k", "sdxl-ft", "gmx-rbd-ens", "eval-harness", "whisper-lg-ft",
          "moe-8x7b-ft", "dpo-70b", "clip-eval", "bert-pretrain", "nequip-md", "icon-ocean", "alphafold-msa",
          "rlhf-rm", "t5-summ", "seg-any", "hyena-dna", "mof-diff", "qm9-gnn"]
_SIZES = [1] * 55 + [2] * 18 + [4] * 14 + [8] * 8 + [16] * 4 + [32]
_ADMIN_REASONS = ["BIOS update CHG-2291", "PDU maintenance rack B12", "CX7 firmware upgrade", "replace fan tray HW-4412",
                  "burn-in after RMA", "kernel update CHG-2305"]
_PENDING_REASONS = ["Priority"] * 14 + ["Resources"] * 5 + ["Dependency"] + ["BeginTime"]


@dataclass
class Gpu:
    """One GPU's current DCGM readings (units as DCGM exports them)."""

    util_pct: float
    sm_clock_mhz: int
    temp_c: int
    power_w: float
    fb_used_mib: int
    reasons: int
    """DCGM_FI_DEV_CLOCKS_EVENT_REASONS bitmask (0x1 GPU idle, 0x4 SW power cap, 0x20/0x40 thermal)."""
    xid: int = 0
    dbe: int = 0


@dataclass
class Node:
    """One GPU node as scontrol/sinfo print it, with its eight GPUs."""

    index: int
    name: str
    state: str = "IDLE"
    """IDLE, MIXED or ALLOCATED."""
    drain: bool = False
    reason: str | None = None
    reason_user: str | None = None
    reason_time: datetime | None = None
    gpus_used: int = 0
    job: int | None = None
    boot_time: datetime = CAPTURED_AT
    gpus: list[Gpu] = field(default_factory=list)
    kernel_extra: list[tuple[datetime, str]] = field(default_factory=list)
    """Kernel messages logged after boot, ``(when, message)``; scale_logs prints them in dmesg -T form."""


@dataclass
class Job:
    """One job in squeue / scontrol / sacct."""

    job_id: int
    name: str
    user: str
    account: str
    state: str
    """PENDING, RUNNING, COMPLETED, CANCELLED, FAILED."""
    submit: datetime
    time_limit_s: int
    nodes: list[int] = field(default_factory=list)
    """Node indexes (contiguous)."""
    num_nodes: int = 1
    gpus_per_node: int = 8
    start: datetime | None = None
    end: datetime | None = None
    reason: str = "None"
    exit_code: str = "0:0"
    log: list[str] | None = None
    """Job log lines (written under logs/<job>/) when the snapshot holds this job's log."""

    @property
    def partition(self) -> str:
        return "gpu"

    @property
    def work_dir(self) -> str:
        return f"/home/{self.user}/{self.name}"

    @property
    def stdout(self) -> str:
        return f"/lustre/scratch/{self.user}/{self.name}/logs/{self.name}-{self.job_id}.out"


@dataclass
class Cluster:
    """The whole synthetic cluster."""

    name: str
    nodes: list[Node]
    jobs: list[Job]
    captured_at: datetime = CAPTURED_AT
    width: int = 4
    """Digits in node names (gpu0001 ... or gpu00001 ...)."""
    lustre_storm: tuple[int, int] | None = None
    """(job id, metadata ops/s) of a job storming the MDT; None for ordinary load."""

    def node_names(self, idx: list[int]) -> list[str]:
        return [self.nodes[i].name for i in idx]

    def hostlist(self, idx: list[int]) -> str:
        """Slurm's compressed hostlist of contiguous node indexes (``gpu[0010-0013]``)."""
        return node_range(self, idx)


def node_range(cluster: Cluster, idx: list[int]) -> str:
    """``gpu0007`` or ``gpu[0010-0013]`` for a contiguous run of node indexes; "" for none."""
    if not idx:
        return ""
    if len(idx) == 1:
        return cluster.nodes[idx[0]].name
    w = cluster.width
    return f"gpu[{idx[0] + 1:0{w}d}-{idx[-1] + 1:0{w}d}]"


def _busy_gpu(rng: random.Random) -> Gpu:
    util = rng.uniform(85, 100)
    return Gpu(util_pct=round(util), sm_clock_mhz=1980, temp_c=rng.randint(55, 78), power_w=round(rng.uniform(520, 690), 3),
               fb_used_mib=rng.randint(60000, 79000), reasons=0x4 if rng.random() < 0.6 else 0x0)


def _idle_gpu(rng: random.Random) -> Gpu:
    return Gpu(util_pct=0, sm_clock_mhz=345, temp_c=rng.randint(28, 36), power_w=round(rng.uniform(68, 75), 3),
               fb_used_mib=0, reasons=0x1)


def build_cluster(nodes: int, jobs: int, seed: int) -> Cluster:
    """The seeded cluster of ``nodes`` nodes and ``jobs`` jobs (see the module docstring)."""
    rng = random.Random(seed)
    width = max(4, len(str(nodes)))
    now = CAPTURED_AT
    cl = Cluster(name="orion", nodes=[], jobs=[], width=width)
    for i in range(nodes):
        boot = now - timedelta(days=27, seconds=rng.randint(0, 86400))
        cl.nodes.append(Node(index=i, name=f"gpu{i + 1:0{width}d}", boot_time=boot))
    drained = set(rng.sample(range(nodes), max(1, nodes // 200)))
    next_id = 4_100_000
    running_cap = int(nodes * 0.85)
    i, used = 0, 0
    while i < nodes and used < running_cap and len(cl.jobs) < max(1, jobs // 3):
        # The first allocation is a multi-node training job, so every cluster has one to fault.
        size = min(rng.choice(_SIZES) if cl.jobs else (8 if nodes >= 32 else 4), nodes - i)
        idx = [k for k in range(i, i + size)]
        i += size
        if any(k in drained for k in idx):
            continue
        user, account = rng.choice(USERS)
        start = now - timedelta(seconds=rng.randint(600, 40 * 3600))
        gpn = 8 if size > 1 or rng.random() < 0.7 else 4
        job = Job(job_id=next_id, name=rng.choice(_NAMES), user=user, account=account, state="RUNNING",
                  submit=start - timedelta(seconds=rng.randint(5, 3 * 3600)), time_limit_s=48 * 3600,
                  nodes=idx, num_nodes=size, gpus_per_node=gpn, start=start)
        next_id += 1
        cl.jobs.append(job)
        used += size
        for k in idx:
            n = cl.nodes[k]
            n.state, n.gpus_used, n.job = ("ALLOCATED" if gpn == 8 else "MIXED"), gpn, job.job_id
    for n in cl.nodes:
        n.gpus = [_busy_gpu(rng) if g < n.gpus_used else _idle_gpu(rng) for g in range(8)]
    for k in sorted(drained):
        n = cl.nodes[k]
        n.drain, n.reason, n.reason_user = True, rng.choice(_ADMIN_REASONS), "hpcadmin"
        n.reason_time = now - timedelta(seconds=rng.randint(1800, 5 * 86400))
    pending = max(1, int(jobs * 0.3))
    for _ in range(pending):
        user, account = rng.choice(USERS)
        cl.jobs.append(Job(job_id=next_id, name=rng.choice(_NAMES), user=user, account=account, state="PENDING",
                           submit=now - timedelta(seconds=rng.randint(30, 5 * 3600)), time_limit_s=24 * 3600,
                           num_nodes=rng.choice(_SIZES), reason=rng.choice(_PENDING_REASONS)))
        next_id += 1
    for _ in range(max(0, jobs - len(cl.jobs))):
        user, account = rng.choice(USERS)
        size = rng.choice(_SIZES[:80])
        first = rng.randrange(0, max(1, nodes - size))
        end = now - timedelta(seconds=rng.randint(60, 6 * 3600))
        start = end - timedelta(seconds=rng.randint(120, 4 * 3600))
        roll = rng.random()
        state, code = ("COMPLETED", "0:0") if roll < 0.9 else ("CANCELLED", "0:15") if roll < 0.98 else ("FAILED", "1:0")
        cl.jobs.append(Job(job_id=next_id, name=rng.choice(_NAMES), user=user, account=account, state=state,
                           submit=start - timedelta(seconds=rng.randint(5, 3600)), time_limit_s=12 * 3600,
                           nodes=list(range(first, min(nodes, first + size))), num_nodes=min(size, nodes - first),
                           start=start, end=end, exit_code=code))
        next_id += 1
    return cl
