"""Typed events found in kernel/system logs and job logs: one model per event kind.

Each log family is a discriminated union on ``kind`` (pydantic picks the model from the value), so a
check reads ``ev.xid`` or ``ev.state`` — typed, validated — never a ``dict[str, str]``. Lines that no
rule classifies but that are error-level are kept as ``generic`` events, so the rule "no error-level
signal left unexplained" can see what nobody foresaw.

    KernelEvent  = XidEvent | GpuLostEvent | GpuEccEvent | GpuDriverEvent | LustreEvent | FsClientEvent
                 | OomKillEvent | LinkEvent | PcieEvent | HungTaskEvent | SlurmNodeEvent | GpuStackEvent
                 | GenericKernelEvent
    JobLogEvent  = NcclTimeoutEvent | NcclRemoteErrorEvent | NcclErrorEvent | NetEvent | CudaOomEvent
                 | CudaErrorEvent | TracebackEvent | CheckpointEvent(write/load failure, saved) | NanLossEvent
                 | EnospcEvent | FsErrorEvent | SlurmMessageEvent | ProgressEvent | GenericJobLogEvent
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Union

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

__all__ = [
    "Severity", "KernelEventBase", "XidEvent", "GpuLostEvent", "GpuEccEvent", "GpuDriverEvent", "LustreEvent",
    "FsClientEvent", "OomKillEvent", "LinkEvent", "PcieEvent", "HungTaskEvent", "SlurmNodeEvent", "GpuStackEvent",
    "HostFaultEvent",
    "GenericKernelEvent", "KernelEvent", "KernelEventKind", "make_kernel_event",
    "JobLogEventBase", "NcclTimeoutEvent", "NcclRemoteErrorEvent", "NcclErrorEvent", "NetEvent", "CudaOomEvent",
    "CudaErrorEvent", "TracebackEvent", "CheckpointEvent", "NanLossEvent", "EnospcEvent", "FsErrorEvent",
    "SlurmMessageEvent", "ProgressEvent", "GenericJobLogEvent", "JobLogEvent", "JobLogEventKind",
    "make_job_log_event", "JobLogSummary",
]

Severity = Literal["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]
"""syslog priority names, as ``dmesg -x`` prints them (``kern  :err   :``) or as inferred from the text."""


# --------------------------------------------------------------------------- kernel / system logs

class KernelEventBase(BaseModel):
    """What every kernel/system log event has (format kernel-log: dmesg, dmesg -T, journalctl)."""

    node: str | None = None
    file: str
    line: int
    """1-based line number of the event's first line in ``file``."""
    timestamp: str | None = None
    """As printed: ``[ 1843.308145]`` seconds since boot, or a wall-clock prefix; kept verbatim."""
    message: str
    """The event text (joined continuation lines for multi-line events), at most ~500 chars."""
    source: str = "kernel"
    """The daemon that logged the line (``kernel``, ``slurmd``, ``mmfs``, ``nvidia-fabricmanager``,
    ``kubelet``, ...): the syslog tag, or ``kernel`` for dmesg lines."""
    severity: Severity | None = None
    """Printed priority, else inferred from the words of the line; None when neither tells."""


class XidEvent(KernelEventBase):
    """``NVRM: Xid (PCI:0000:b3:00): 79, pid=..., name=..., GPU has fallen off the bus.``"""

    kind: Literal["xid"] = "xid"
    xid: int
    pci: str | None = None
    """PCI address as ``dddd:bb:dd.f``."""
    pid: int | None = None
    process: str | None = None
    pci_printed: str | None = None


class GpuLostEvent(KernelEventBase):
    """A GPU gone from the bus or unusable without an Xid number: NVRM's multi-line "has fallen off the
    bus", ``GPU is lost``, nvidia-smi's "Unable to determine the device handle ... Unknown Error"."""

    kind: Literal["fallen_off_bus"] = "fallen_off_bus"
    pci: str | None = None
    how: Literal["fallen_off_bus", "lost", "no_device_handle", "init_failed"] = "fallen_off_bus"


class GpuEccEvent(KernelEventBase):
    """NVRM text about uncorrectable ECC or a row-remap failure (not an Xid line)."""

    kind: Literal["gpu_ecc"] = "gpu_ecc"
    pci: str | None = None


class GpuDriverEvent(KernelEventBase):
    """Other NVRM driver errors (RmInitAdapter failed, GSP firmware errors, failed allocations)."""

    kind: Literal["gpu_driver"] = "gpu_driver"
    pci: str | None = None
    what: str = "error"


LustreState = Literal["connection_lost", "evicted", "connection_restored", "request_timeout", "lnet_timeout",
                      "op_failed", "mount_failed", "client_evicted", "service_hung", "recovery_started",
                      "recovery_complete", "failover", "error"]
"""Client side: ``connection_lost`` … ``connection_restored``, ``evicted`` (this client was evicted), timeouts,
failed operations and mounts. Server side: ``client_evicted`` (the target evicted a client it stopped hearing
from), ``service_hung`` (an OSS/MDS service thread inactive for minutes: its storage stalls),
``recovery_started`` / ``recovery_complete`` after a restart or failover, ``failover`` (a target failing over
or unmounted for it)."""


class LustreEvent(KernelEventBase):
    """``LustreError:`` / ``Lustre:`` / ``LNetError:`` client or server lines."""

    kind: Literal["lustre_error"] = "lustre_error"
    state: LustreState
    target: str | None = None
    """Lustre target without the ``-osc-…`` suffix, e.g. ``lustre-OST0003``."""
    op: str | None = None
    nid: str | None = None
    rc: int | None = None
    clients: int | None = None
    """``recovery_complete``: clients the target expected back."""
    evicted: int | None = None
    """``recovery_complete``: clients evicted because they did not come back in time."""


FsState = Literal["expelled", "lost_connection", "stale_handle", "unmounted", "not_mounted", "not_responding",
                  "restored", "not_started", "io_error", "quorum_lost", "error"]


class FsClientEvent(KernelEventBase):
    """A network file system client (or server) problem on this node: GPFS/Spectrum Scale ``mmfs``
    lines, NFS ``server … not responding``, stale file handles, unmounts, BeeGFS/WekaFS errors."""

    kind: Literal["fs_client"] = "fs_client"
    fs_type: Literal["gpfs", "nfs", "lustre", "beegfs", "weka", "other"] = "other"
    state: FsState = "error"
    fs: str | None = None
    """File system (device or mount) name when printed."""
    server: str | None = None
    """Server, NSD or peer node named by the line."""


class OomKillEvent(KernelEventBase):
    """The kernel OOM killer: ``Out of memory: Killed process …`` / ``oom-kill:…``."""

    kind: Literal["oom_kill"] = "oom_kill"
    pid: int | None = None
    process: str | None = None
    scope: Literal["memcg", "system"] | None = None
    anon_rss_kib: int | None = None
    constraint: str | None = None
    oom_memcg: str | None = None
    task_memcg: str | None = None
    uid: str | None = None
    slurm_job: str | None = None
    """Job id from a ``/slurm/uid_N/job_4242/`` cgroup path."""


LinkState = Literal["down", "up", "init", "armed", "module_error", "module_event", "error"]


class LinkEvent(KernelEventBase):
    """A network port changing state: InfiniBand (mlx5 ``Port: 1 Link DOWN``, cable module events) or
    Ethernet/RoCE (``ens1f0np0: Link down``, ``NIC Link is Down``)."""

    kind: Literal["ib_link"] = "ib_link"
    state: LinkState
    link_type: Literal["ib", "ethernet", "nvswitch"] = "ib"
    """``nvswitch``: a fatal NVSwitch SXid on one of the switch's NVLink ports (state ``error``)."""
    device: str | None = None
    port: str | None = None
    module: str | None = None
    detail: str | None = None


class PcieEvent(KernelEventBase):
    """PCIe AER reports (``pcieport … AER: … error received``, ``PCIe Bus Error: severity=…``)."""

    kind: Literal["pcie_error"] = "pcie_error"
    pci: str | None = None
    corrected: bool = False
    """True for ``severity=Corrected`` (logged and fixed by hardware)."""
    what: Literal["aer", "link_degraded"] = "aer"
    """``link_degraded``: the kernel found the link trained below what the device is capable of
    (``… available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link … (capable of … 16.0 GT/s PCIe x16 link)``)."""


class HungTaskEvent(KernelEventBase):
    """``INFO: task NAME:PID blocked for more than N seconds`` (a task in D state)."""

    kind: Literal["hung_task"] = "hung_task"
    pid: int | None = None
    process: str | None = None
    blocked_s: int | None = None


class SlurmNodeEvent(KernelEventBase):
    """slurmd / slurmstepd / SPANK plugin lines on a node: prolog or epilog failures, kill-task
    failures, plugin errors, jobs cancelled by the node's daemon; slurmctld stopping and starting
    (``controller_restart``)."""

    kind: Literal["slurm_node"] = "slurm_node"
    what: Literal["prolog_failed", "epilog_failed", "spank_error", "kill_task_failed", "node_fail",
                  "job_cancelled", "gres_error", "controller_restart", "error"] = "error"
    job: str | None = None


class GpuStackEvent(KernelEventBase):
    """The GPU software stack on a node: nvidia-fabricmanager, nvidia-persistenced, DCGM host engine,
    the NVIDIA container toolkit, the device plugin, failing or reporting errors."""

    kind: Literal["gpu_stack"] = "gpu_stack"
    component: str
    """``fabricmanager``, ``persistenced``, ``dcgm``, ``container-toolkit``, ``device-plugin``, ``driver``."""
    what: str = "error"


class HostFaultEvent(KernelEventBase):
    """The host itself failing: a kernel panic, a fatal hardware error (APEI/GHES, machine check), an
    uncorrectable memory error (EDAC UE), a hard or soft lockup, an oops; also corrected memory errors
    (EDAC CE, ``Machine check events logged``), which are kept with ``fatal`` False."""

    kind: Literal["host_fault"] = "host_fault"
    what: Literal["panic", "hardware_error", "machine_check", "memory_ue", "memory_ce", "hard_lockup",
                  "soft_lockup", "oops"]
    fatal: bool = False
    """The host went down or must not be trusted (panic, fatal hardware error, UE, hard lockup)."""
    fru: str | None = None
    """The part named, when the record gives one (``CPU1_DIMM_A1``, ``DIMM#0``)."""


class GenericKernelEvent(KernelEventBase):
    """An error-level line no rule classifies (kept so that nothing error-level goes unseen)."""

    kind: Literal["generic"] = "generic"


KernelEvent = Annotated[
    Union[XidEvent, GpuLostEvent, GpuEccEvent, GpuDriverEvent, LustreEvent, FsClientEvent, OomKillEvent, LinkEvent,
          PcieEvent, HungTaskEvent, SlurmNodeEvent, GpuStackEvent, HostFaultEvent, GenericKernelEvent],
    Field(discriminator="kind"),
]
KernelEventKind = Literal["xid", "fallen_off_bus", "gpu_ecc", "gpu_driver", "lustre_error", "fs_client", "oom_kill",
                          "ib_link", "pcie_error", "hung_task", "slurm_node", "gpu_stack", "host_fault", "generic"]
_KERNEL = TypeAdapter(KernelEvent)
_REQUIRED = frozenset({"kind", "file", "line", "message", "state", "component", "error", "what"})


def _build(adapter: TypeAdapter, kind: str, values: dict[str, object]) -> BaseModel:
    """Validate ``values`` as the ``kind`` event; an optional value that does not convert (odd or hostile
    text, e.g. a 5,000-digit number) is dropped rather than failing the line."""
    data = {"kind": kind, **values}
    for _ in range(len(data) + 1):
        try:
            return adapter.validate_python(data)
        except ValidationError as e:
            bad = {str(err["loc"][1]) for err in e.errors() if len(err["loc"]) > 1} - _REQUIRED
            if not bad:
                raise
            for name in bad:
                data.pop(name, None)
    raise AssertionError("unreachable: each retry drops a field")


def make_kernel_event(kind: str, **values: object) -> KernelEventBase:
    """Build the typed event of ``kind`` from its values (validated; unconvertible optional values dropped).

    Raises:
        pydantic.ValidationError: an unknown kind or a bad required value (a parser bug).
    """
    return _build(_KERNEL, kind, values)  # type: ignore[return-value]


# --------------------------------------------------------------------------------------- job logs

class JobLogEventBase(BaseModel):
    """What every job-log event has (format job-log: a job's stdout/stderr)."""

    job: str | None = None
    file: str
    line: int
    rank: int | None = None
    """Global rank when the line names one (``[Rank 3]``, ``rank 3``, a launcher prefix)."""
    timestamp: datetime | None = None
    """When the line carries a parseable timestamp."""
    exception_type: str | None = None
    """For tracebacks and errors: ``RuntimeError``, ``torch.OutOfMemoryError``, ..."""
    message: str
    """The line (or final traceback line), at most ~500 chars."""
    host: str | None = None
    """The host that printed the line, when the line names it (NCCL's ``host:pid:tid`` prefix,
    ``Device: 3, node: gpu017``)."""


class NcclTimeoutEvent(JobLogEventBase):
    """``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=…, OpType=…, NumelIn=…)``."""

    kind: Literal["nccl_timeout"] = "nccl_timeout"
    op: str | None = None
    numel: int | None = None
    numel_out: int | None = None
    timeout_ms: int | None = None
    ran_for_ms: int | None = None
    seq: int | None = None


class NcclRemoteErrorEvent(JobLogEventBase):
    """ncclRemoteError / ``NET/IB : Got completion from peer X with status=12`` / connection closed."""

    kind: Literal["nccl_remote_error"] = "nccl_remote_error"
    peer: str | None = None
    port: str | None = None
    status: int | None = None
    vendor: int | None = None
    version: str | None = None


class NcclErrorEvent(JobLogEventBase):
    """Other NCCL WARN / error lines (unhandled system error, DistBackendError, ...)."""

    kind: Literal["nccl_error"] = "nccl_error"
    version: str | None = None


class NetEvent(JobLogEventBase):  # noqa: D101 - docstring below
    """A transport event the printing host's own NIC reported: NCCL ``NET/IB : … Got async event : port
    error``, UCX ``Transport retry count exceeded`` / endpoint timeouts, libfabric CQ errors."""

    kind: Literal["net_event"] = "net_event"
    transport: Literal["nccl_ib", "ucx", "libfabric", "other"] = "other"
    device: str | None = None
    """HCA and port as printed (``mlx5_0:1``)."""
    what: str = "error"
    """``port_error``, ``port_active``, ``retry_exceeded``, ``timeout``, ``catastrophic``, ... as read."""
    fatal: bool = True
    """False for events that report recovery (``port active``, ``GID table change``)."""
    local: bool = True
    """True when the event is about the printing host's own port (an async port error, a local
    catastrophic error); False when it says the other end did not answer (transport retries exceeded,
    endpoint timeouts, remote access errors): then the printer is a victim, not the faulty port."""


class CudaOomEvent(JobLogEventBase):
    """``CUDA out of memory. Tried to allocate …`` with the sizes it prints (GiB)."""

    kind: Literal["cuda_oom"] = "cuda_oom"
    gpu: int | None = None
    tried_gib: float | None = None
    total_gib: float | None = None
    allocated_gib: float | None = None
    reserved_gib: float | None = None
    free_gib: float | None = None
    in_use_gib: float | None = None
    reserved_unallocated_gib: float | None = None


class CudaErrorEvent(JobLogEventBase):
    """``CUDA error: …`` (illegal memory access, uncorrectable ECC, launch failure), cuInit failures,
    CUBLAS/cudaError codes, "no CUDA-capable device", "Found no NVIDIA driver"."""

    kind: Literal["cuda_error"] = "cuda_error"
    error: str
    category: Literal["hardware", "device_missing", "driver", "application", "unknown"] = "unknown"
    """What the error says about its cause: ``hardware`` (uncorrectable ECC, GPU lost), ``device_missing``
    (no CUDA-capable device, cuInit failed), ``driver`` (driver/runtime mismatch), ``application``
    (illegal address, invalid argument: often the program), ``unknown``."""
    device: int | None = None


class TracebackEvent(JobLogEventBase):
    """A Python traceback, typed by its final line (``message`` is that line)."""

    kind: Literal["traceback"] = "traceback"


class CheckpointEvent(JobLogEventBase):
    """A checkpoint saved (``path``, ``step``, and ``save_s``, the seconds the save took, when the line
    says), or failing to write or to load. A save line naming no path still counts as a save."""

    kind: Literal["checkpoint_saved", "checkpoint_write_failure", "checkpoint_load_failure"]
    path: str | None = None
    step: int | None = None
    save_s: float | None = None


class NanLossEvent(JobLogEventBase):
    """A loss or grad norm printed as nan/inf."""

    kind: Literal["nan_loss"] = "nan_loss"
    metric: str | None = None
    value: str | None = None
    step: int | None = None


class EnospcEvent(JobLogEventBase):
    """``No space left on device`` (ENOSPC) or ``Disk quota exceeded`` (EDQUOT)."""

    kind: Literal["enospc"] = "enospc"
    error: Literal["ENOSPC", "EDQUOT"] = "ENOSPC"


class FsErrorEvent(JobLogEventBase):
    """A file-system error seen by the job: ``Stale file handle`` (ESTALE), ``Transport endpoint is not
    connected``, ``Input/output error`` (EIO), a mount point missing."""

    kind: Literal["fs_error"] = "fs_error"
    error: Literal["ESTALE", "ENOTCONN", "EIO", "ENOENT_MOUNT", "other"] = "other"
    path: str | None = None


class SlurmMessageEvent(JobLogEventBase):
    """slurmstepd / srun lines: ``*** JOB N ON node CANCELLED AT … DUE TO TIME LIMIT ***``, task exits,
    oom-kill counts, controller errors, ``scontrol ping`` output."""

    kind: Literal["slurm_message"] = "slurm_message"
    what: str | None = None
    """``job_cancelled``, ``step_cancelled``, ``task_exit``, ``oom``, ``controller_unreachable``,
    ``controller_ping``, ``error``..."""
    id: str | None = None
    node: str | None = None
    state: str | None = None
    at: str | None = None
    reason: str | None = None
    """``TIME LIMIT``, ``PREEMPTION``, ``NODE FAILURE`` ... as printed after ``DUE TO``."""
    tasks: str | None = None
    status: str | None = None
    exit_code: int | None = None
    oom_kill_events: int | None = None
    controller: str | None = None
    role: str | None = None


class ProgressEvent(JobLogEventBase):
    """The last training-progress line of a log (step/iter/epoch with a loss)."""

    kind: Literal["progress"] = "progress"
    step: int | None = None
    loss: str | None = None
    epoch: int | None = None


class GenericJobLogEvent(JobLogEventBase):
    """An error-level line no rule classifies (``ERROR``/``FATAL``/``Segmentation fault`` ...)."""

    kind: Literal["generic"] = "generic"


JobLogEvent = Annotated[
    Union[NcclTimeoutEvent, NcclRemoteErrorEvent, NcclErrorEvent, NetEvent, CudaOomEvent, CudaErrorEvent,
          TracebackEvent, CheckpointEvent, NanLossEvent, EnospcEvent, FsErrorEvent, SlurmMessageEvent,
          ProgressEvent, GenericJobLogEvent],
    Field(discriminator="kind"),
]
JobLogEventKind = Literal["nccl_timeout", "nccl_remote_error", "nccl_error", "net_event", "cuda_oom", "cuda_error",
                          "traceback", "checkpoint_write_failure", "checkpoint_load_failure", "checkpoint_saved",
                          "nan_loss", "enospc", "fs_error", "slurm_message", "progress", "generic"]
_JOBLOG = TypeAdapter(JobLogEvent)


def make_job_log_event(kind: str, **values: object) -> JobLogEventBase:
    """Build the typed job-log event of ``kind`` (validated; numbers given as text are converted,
    unconvertible optional values dropped).

    Raises:
        pydantic.ValidationError: an unknown kind or a bad required value (a parser bug).
    """
    return _build(_JOBLOG, kind, values)  # type: ignore[return-value]


class JobLogSummary(BaseModel):
    """Per job-log file totals: how far the job got and when it last said something."""

    job: str | None = None
    file: str
    lines: int
    last_timestamp: datetime | None = None
    last_step: int | None = None
    events: int = 0
    kinds: dict[str, int] = Field(default_factory=dict)
    """Events seen per kind, including any beyond the per-kind cap that were not kept."""
    hosts: list[str] = Field(default_factory=list)
    """Hosts the log's lines name as their printer (NCCL ``host:pid:tid`` and UCX ``[host:pid:...]``
    prefixes, INFO lines included): where the job ran; at most 1,024."""
