"""Typed events found in job logs (NCCL, CUDA, PyTorch, checkpoints, Slurm client lines): one model per
kind, a discriminated union on ``kind`` (see tools.models.logs for the kernel-log family)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Union

from pydantic import BaseModel, Field, TypeAdapter

from tools.models.event_build import build_event

__all__ = ["JobLogEventBase", "NcclTimeoutEvent", "NcclRemoteErrorEvent", "NcclErrorEvent", "NetEvent", "CudaOomEvent", "CudaErrorEvent", "TracebackEvent", "CheckpointEvent", "NanLossEvent", "EnospcEvent", "FsErrorEvent", "SlurmMessageEvent", "ProgressEvent", "GenericJobLogEvent", "JobLogEvent", "JobLogEventKind", "make_job_log_event", "JobLogSummary"]

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
    device: str | None = None
    """For a full file system the job printed with ``df`` (``/dev/md0 3.5T 3.5T 20K 100% /local/scratch``):
    the device, mount point and use (%); a ``/dev/`` device is a disk of the node itself."""
    mount: str | None = None
    use_pct: float | None = None


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
    samples_per_s: float | None = None
    """Training samples per second the line prints (HF ``train_samples_per_second``, ``samples/s``)."""
    tokens_per_s: float | None = None
    """Tokens per second the line prints (Megatron ``tokens per second``, ``tok/s``)."""
    step_time_s: float | None = None
    """Seconds per step the line prints (``step_time_s``, Megatron's ms per iteration, tqdm ``s/it``)."""


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
    return build_event(_JOBLOG, kind, values)  # type: ignore[return-value]


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
    interval_s: float | None = None
    """The median seconds between the last ten new times the log printed: how often it reports (an hourly
    progress line is not a stall 40 minutes after it). None with fewer than three times."""
    untimed_progress_after: int = 0
    """Training-progress lines (a loss printed) after the last timestamped line: the job went on reporting
    without times, so the time since its last timestamp is not how long it has been silent."""
    global_batch: int | None = None
    """Samples per optimizer step, accumulation included, as the log prints it (HF's ``Total train batch size``,
    Megatron's ``global batch size``, DeepSpeed's ``train_batch_size``): the last one printed."""
    time_signal: str | None = None
    """The ``--signal`` the job's batch script asked for before its time limit (``B:USR1@600``), as printed."""
    resumed: bool = False
    """The log says the job resumed from a checkpoint (``Resuming training from checkpoint``, HF Trainer's
    ``Continuing training from checkpoint``, Lightning's ``Restoring states from the checkpoint path``):
    an earlier job of the run saved one."""
    hosts: list[str] = Field(default_factory=list)
    """Hosts the log's lines name as their printer (NCCL ``host:pid:tid`` and UCX ``[host:pid:...]``
    prefixes, INFO lines included): where the job ran; at most 1,024."""
    rdzv_stores: int = 0
    """torchrun agents that each started their own c10d rendezvous store (``Process N hosts the TCP store for the
    C10d rendezvous backend``): more than one means the nodes were given no common ``--rdzv_endpoint``."""
