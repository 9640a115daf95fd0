"""Typed events found in kernel logs and job logs."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["KernelEvent", "KernelEventKind", "JobLogEvent", "JobLogEventKind", "JobLogSummary"]

KernelEventKind = Literal[
    "xid",  # NVRM: Xid (PCI:...): N, ...
    "fallen_off_bus",  # NVRM multi-line "has fallen off the bus" without an Xid number
    "gpu_ecc",  # uncorrectable ECC / row-remap failure reported by NVRM
    "lustre_error",  # LustreError: / Lustre: ... lost connection, evicted, LNet timeouts
    "oom_kill",  # Out of memory: Killed process / oom-kill:
    "ib_link",  # mlx5/InfiniBand port/link state changes
    "hung_task",  # INFO: task ... blocked for more than N seconds
    "other",
]


class KernelEvent(BaseModel):
    """One interesting kernel log event (from `dmesg -T` / `journalctl -k`; format kernel-log)."""

    node: str | None = None
    file: str
    line: int
    """1-based line number of the event's first line in ``file``."""
    timestamp: str | None = None
    """As printed: ``[ 1843.308145]`` seconds since boot, or a wall-clock prefix; kept verbatim."""
    kind: KernelEventKind
    xid: int | None = None
    pci: str | None = None
    """PCI address, e.g. ``0000:b3:00.0``."""
    pid: int | None = None
    process: str | None = None
    message: str
    """The event text (joined continuation lines for multi-line events), at most ~500 chars."""
    fields: dict[str, str] = Field(default_factory=dict)
    """Kind-specific extras, e.g. ``{"target": "lustre-OST0003", "state": "down"}``."""


JobLogEventKind = Literal[
    "nccl_timeout",  # watchdog caught collective operation timeout
    "nccl_remote_error",  # ncclRemoteError / remote process exited / network error
    "nccl_error",  # other NCCL WARN/error lines (unhandled system error, ...)
    "cuda_oom",  # CUDA out of memory / OutOfMemoryError
    "cuda_error",  # CUDA error: ... (illegal memory access, ECC, launch failure)
    "traceback",  # a Python traceback's final exception line
    "checkpoint_write_failure",  # torch.save / PytorchStreamWriter failures, ENOSPC while saving
    "checkpoint_load_failure",  # PytorchStreamReader failed, unexpected EOF, bad zip while loading
    "checkpoint_saved",  # "saved checkpoint to /path/step_001200" (fields: path, step)
    "nan_loss",  # loss / grad-norm is nan or inf
    "enospc",  # No space left on device / Disk quota exceeded
    "slurm_message",  # slurmstepd / srun error lines (CANCELLED DUE TO TIME LIMIT, ...)
    "progress",  # a training step line (step/iter/epoch with a loss value)
]


class JobLogEvent(BaseModel):
    """One event from a job's stdout/stderr (format job-log)."""

    job: str | None = None
    file: str
    line: int
    kind: JobLogEventKind
    rank: int | None = None
    """Global rank when the line names one (``[Rank 3]``, ``rank 3``)."""
    timestamp: datetime | None = None
    """When the line carries a parseable timestamp."""
    exception_type: str | None = None
    """For tracebacks and errors: ``RuntimeError``, ``torch.OutOfMemoryError``, ..."""
    message: str
    """The line (or final traceback line), at most ~500 chars."""
    fields: dict[str, str] = Field(default_factory=dict)
    """Kind-specific extras: ``{"op": "ALLREDUCE", "timeout_ms": "1800000", "numel": "1"}``,
    ``{"step": "1200", "loss": "nan"}``, ``{"tried_gib": "10.84", "total_gib": "23.65"}``."""


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
