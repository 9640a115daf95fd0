"""Typed Slurm records, as parsed from squeue, sinfo, sacct and scontrol (JSON or text)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

__all__ = ["SlurmJob", "SlurmNode", "NodeReason", "SacctRecord", "SlurmClientError", "RpcStat", "SdiagStats", "SlurmQos"]


class SlurmJob(BaseModel):
    """One job as squeue or `scontrol show job` reports it.

    Sources: `squeue --json`, `squeue` text (default or `-o`), `scontrol show job`.
    Fields a source does not print stay None / empty.
    """

    job_id: str
    """Job id as Slurm prints it; array tasks as ``"123_4"``."""
    name: str | None = None
    user: str | None = None
    account: str | None = None
    partition: str | None = None
    state: str | None = None
    """Base job state in upper case: PENDING, RUNNING, COMPLETING, FAILED, TIMEOUT, ..."""
    reason: str | None = None
    """Pending/held reason (squeue's %r), e.g. ``Resources``, ``ReqNodeNotAvail, Reserved for maintenance``; None when "None"."""
    nodes: list[str] = Field(default_factory=list)
    """Allocated nodes, hostlist expanded (``gpu[01-02]`` -> ``gpu01, gpu02``)."""
    num_nodes: int | None = None
    num_cpus: int | None = None
    num_gpus: int | None = None
    """GPUs allocated (running) or requested (pending), from TRES/GRES; None when unknown."""
    time_limit_s: int | None = None
    """Wall-clock limit in seconds; None for UNLIMITED or unknown."""
    elapsed_s: int | None = None
    """Run time so far in seconds."""
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    priority: int | None = None
    qos: str | None = None
    exit_code: str | None = None
    """``"status:signal"`` as Slurm prints it, e.g. ``"1:0"``."""
    work_dir: str | None = None
    stdout_path: str | None = None
    stderr_path: str | None = None
    command: str | None = None
    req_nodes: list[str] = Field(default_factory=list)
    exc_nodes: list[str] = Field(default_factory=list)
    reservation: str | None = None
    batch_host: str | None = None
    restarts: int | None = None
    """Times the job was requeued (scontrol ``Restarts=``)."""
    constraint: str | None = None
    """Requested node features (``--constraint``; scontrol ``Features=``)."""
    dependency: str | None = None
    """scontrol ``Dependency=`` as printed: ``afterok:4242(unfulfilled)``, ``singleton(unfulfilled)``."""


class SlurmNode(BaseModel):
    """One node as sinfo or `scontrol show node` reports it.

    Sources: `sinfo --json`, `sinfo` text (`-N -o ...`), `scontrol show node`.
    """

    name: str
    state: str | None = None
    """Base state in upper case: IDLE, ALLOCATED, MIXED, DOWN, COMPLETING, FUTURE, UNKNOWN."""
    flags: list[str] = Field(default_factory=list)
    """State flags in upper case: DRAIN, NOT_RESPONDING, MAINTENANCE, RESERVED, REBOOT_REQUESTED, INVALID_REG, ..."""
    reason: str | None = None
    reason_user: str | None = None
    reason_time: datetime | None = None
    partitions: list[str] = Field(default_factory=list)
    partition_max_time_s: int | None = None
    """The partition's time limit (sinfo ``TIMELIMIT``, ``2-00:00:00``) in seconds; None when unlimited or not shown."""
    partition_max_nodes: int | None = None
    """The most nodes one job may ask for in the node's partition (sinfo ``JOB_SIZE`` ``1-8``: 8); None when
    unlimited or not shown."""
    cpus: int | None = None
    cpus_alloc: int | None = None
    cpu_load: float | None = None
    real_memory_mib: int | None = None
    alloc_memory_mib: int | None = None
    free_memory_mib: int | None = None
    gres: str | None = None
    """Configured GRES, e.g. ``gpu:a100:8``."""
    gres_used: str | None = None
    gpus_total: int | None = None
    gpus_used: int | None = None
    boot_time: datetime | None = None
    last_busy_time: datetime | None = None
    slurmd_start_time: datetime | None = None
    version: str | None = None

    @property
    def drained(self) -> bool:
        """True when the node carries DRAIN (drained or draining)."""
        return "DRAIN" in self.flags or (self.state or "").startswith("DRAIN")

    @property
    def not_responding(self) -> bool:
        """True when slurmctld marks the node not responding (``*`` suffix in sinfo)."""
        return "NOT_RESPONDING" in self.flags


class NodeReason(BaseModel):
    """One row of `sinfo -R`: why a set of nodes is down, drained or failing."""

    reason: str
    user: str | None = None
    timestamp: datetime | None = None
    nodes: list[str] = Field(default_factory=list)
    """Hostlist expanded."""


class SacctRecord(BaseModel):
    """One job or step row from accounting (`sacct --json` or `sacct -p` / default text)."""

    job_id: str
    """``"4242"`` for the job, ``"4242.batch"`` / ``"4242.0"`` for steps."""
    name: str | None = None
    user: str | None = None
    account: str | None = None
    partition: str | None = None
    state: str | None = None
    """Upper case, e.g. COMPLETED, FAILED, TIMEOUT, CANCELLED, OUT_OF_MEMORY, NODE_FAIL, RUNNING."""
    cancelled_by: str | None = None
    """Who cancelled the job, as sacct prints it in ``CANCELLED by 0``: a uid (0 is root or a root-run service) or
    a user name; None when not cancelled or not shown (sacct JSON, a truncated ``CANCELLED+``)."""
    exit_code: str | None = None
    elapsed_s: int | None = None
    time_limit_s: int | None = None
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    nodes: list[str] = Field(default_factory=list)
    num_nodes: int | None = None
    num_gpus: int | None = None
    max_rss_kib: int | None = None

    @property
    def is_step(self) -> bool:
        """True for a step row (``4242.batch``, ``4242.0``), False for the job row."""
        return "." in self.job_id


class RpcStat(BaseModel):
    """One row of sdiag's RPC statistics, by message type or by user."""

    name: str
    """Message type (``REQUEST_JOB_INFO``) or user name."""
    id: int | None = None
    """Message type number or uid, as printed in parentheses."""
    count: int
    ave_time_us: int | None = None
    """Mean time per RPC in microseconds."""
    total_time_us: int | None = None


class SdiagStats(BaseModel):
    """slurmctld scheduler and RPC statistics from one `sdiag` run.

    Cycle times are in microseconds, as sdiag prints them. Counters run since ``data_since``
    (the last reset, at midnight UTC or ``sdiag -r``). Fields sdiag did not print stay None.
    """

    captured_at: datetime | None = None
    """``sdiag output at ...`` (UTC, from the epoch sdiag prints)."""
    data_since: datetime | None = None
    server_thread_count: int | None = None
    agent_queue_size: int | None = None
    agent_count: int | None = None
    dbd_agent_queue_size: int | None = None
    jobs_submitted: int | None = None
    jobs_started: int | None = None
    jobs_completed: int | None = None
    jobs_canceled: int | None = None
    jobs_failed: int | None = None
    jobs_pending: int | None = None
    jobs_running: int | None = None
    main_last_cycle_us: int | None = None
    main_max_cycle_us: int | None = None
    main_mean_cycle_us: int | None = None
    main_total_cycles: int | None = None
    main_cycles_per_minute: int | None = None
    main_last_queue_length: int | None = None
    bf_total_backfilled_jobs: int | None = None
    """Jobs started by backfill since the last slurmctld start."""
    bf_total_cycles: int | None = None
    bf_last_cycle_us: int | None = None
    bf_max_cycle_us: int | None = None
    bf_mean_cycle_us: int | None = None
    bf_last_cycle_when: datetime | None = None
    bf_last_depth: int | None = None
    bf_last_queue_length: int | None = None
    rpcs_by_type: list[RpcStat] = Field(default_factory=list)
    rpcs_by_user: list[RpcStat] = Field(default_factory=list)
    pending_rpcs: int | None = None
    """RPCs queued in slurmctld (``Pending RPC statistics``); 0 for ``No pending RPCs``."""


class SlurmClientError(BaseModel):
    """A Slurm command printed an error instead of its output (e.g. ``slurm_load_jobs error:
    Unable to contact slurm controller (connect failure)``); recorded, not a parse failure."""

    path: str
    """The file (or command) whose output this was."""
    format: str
    """The format id the output should have had."""
    message: str
    """The error text as printed (first lines, at most ~500 characters)."""


class SlurmQos(BaseModel):
    """One QOS as ``sacctmgr show qos`` prints it (the accounting database's limits, per Slurm's
    resource_limits docs: MaxTRES is per job, MaxTRESPU per user, MaxWall per job). Empty limits are
    unset. Values the fixed-width table cut short (ending in ``+``) are left out and named in
    ``truncated``: a cut ``node=1+`` must not read as a limit of one node."""

    name: str
    priority: int | None = None
    flags: list[str] = Field(default_factory=list)
    max_tres_per_job: dict[str, str] = Field(default_factory=dict)
    """MaxTRES: ``{"node": "8", "gres/gpu": "64"}``."""
    max_tres_per_node: dict[str, str] = Field(default_factory=dict)
    max_tres_per_user: dict[str, str] = Field(default_factory=dict)
    max_jobs_per_user: int | None = None
    max_submit_per_user: int | None = None
    max_wall_s: int | None = None
    """MaxWall in seconds (per job)."""
    grp_tres: dict[str, str] = Field(default_factory=dict)
    grp_jobs: int | None = None
    truncated: list[str] = Field(default_factory=list)
    """Columns whose printed value was cut (``sacctmgr`` without ``-p``/``-P`` or a wide enough ``%``)."""
