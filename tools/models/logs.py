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

from typing import Annotated, Literal, Union

from pydantic import BaseModel, Field, TypeAdapter

from tools.models.event_build import build_event

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
    fs_type: Literal["gpfs", "nfs", "lustre", "beegfs", "weka", "ceph", "other"] = "other"
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
    hugepages_free_kib: int | None = None
    """A system OOM report's reserved but unused huge pages, summed over its NUMA nodes (``Node 0
    hugepages_total=76800 hugepages_free=76800 … hugepages_size=2048kB``): memory no process can have."""


LinkState = Literal["down", "up", "init", "armed", "module_error", "module_event", "error"]


class LinkEvent(KernelEventBase):
    """A network port changing state: InfiniBand (mlx5 ``Port: 1 Link DOWN``, cable module events) or
    Ethernet/RoCE (``ens1f0np0: Link down``, ``NIC Link is Down``)."""

    kind: Literal["ib_link"] = "ib_link"
    state: LinkState
    link_type: Literal["ib", "ethernet", "nvswitch", "opa"] = "ib"
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
    (``controller_restart``); a takeover asked for by an administrator (``controller_takeover``: ``scontrol
    takeover``'s REQUEST_TAKEOVER / REQUEST_CONTROL RPC) and a backup slurmctld taking over from the primary
    (``controller_failover``, error level: planned or not, the evidence around it tells)."""

    kind: Literal["slurm_node"] = "slurm_node"
    what: Literal["prolog_failed", "epilog_failed", "spank_error", "kill_task_failed", "node_fail",
                  "job_cancelled", "gres_error", "controller_restart", "controller_takeover", "controller_failover",
                  "slurmd_start_failed", "error"] = "error"
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
    (EDAC CE, ``Machine check events logged``), CPU thermal throttling (``cpu_thermal``: the package or a
core above its threshold, its clock throttled) and IOMMU DMA faults (``iommu_fault``: Intel VT-d ``DMAR``
or ``AMD-Vi IO_PAGE_FAULT``, a device's DMA refused by the IOMMU's page tables), which are kept with
``fatal`` False."""

    kind: Literal["host_fault"] = "host_fault"
    what: Literal["panic", "hardware_error", "machine_check", "memory_ue", "memory_ce", "hard_lockup",
                  "soft_lockup", "oops", "cpu_thermal", "iommu_fault"]
    fatal: bool = False
    """The host went down or must not be trusted (panic, fatal hardware error, UE, hard lockup)."""
    fru: str | None = None
    """The part named, when the record gives one (``CPU1_DIMM_A1``, ``DIMM#0``)."""
    device: str | None = None
    """The PCI device (``bus:dev.fn``) whose DMA an IOMMU fault refused, when the line names it."""


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
def make_kernel_event(kind: str, **values: object) -> KernelEventBase:
    """Build the typed event of ``kind`` from its values (validated; unconvertible optional values dropped).

    Raises:
        pydantic.ValidationError: an unknown kind or a bad required value (a parser bug).
    """
    return build_event(_KERNEL, kind, values)  # type: ignore[return-value]


# Job-log events live in tools.models.job_log_events; re-exported here, where callers import them.
from tools.models.job_log_events import (  # noqa: E402
    JobLogEventBase, NcclTimeoutEvent, NcclRemoteErrorEvent, NcclErrorEvent, NetEvent, CudaOomEvent, CudaErrorEvent, TracebackEvent, CheckpointEvent, NanLossEvent, EnospcEvent, FsErrorEvent, SlurmMessageEvent, ProgressEvent, GenericJobLogEvent, JobLogEvent, JobLogEventKind, make_job_log_event, JobLogSummary,
)
