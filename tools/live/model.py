"""The typed input of a live collection: how to reach each kind of evidence, and the bounds.

agent/live/config.py reads ``warden.toml`` and builds a ``LivePlanInput``; tools/ never reads
files of configuration itself. Every command is an argument list; ``{node}``, ``{job}``,
``{path}`` and ``{since}`` placeholders are filled per argument (never through a shell).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tools.checks import SiteCheck

from tools.models.ids import FormatId

__all__ = ["SlurmAccess", "KernelLogAccess", "JobLogAccess", "LustreItem", "CheckpointAccess", "LiveBounds",
           "LivePlanInput"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SlurmAccess(_Strict):
    """How Slurm's client commands are reached.

    ``local``: run on this host (``slurm_conf`` sets SLURM_CONF). ``ssh``: run on a login node
    through Fabric (host, user, port, key file).
    """

    via: Literal["local", "ssh"] = "local"
    slurm_conf: str | None = None
    host: str | None = None
    user: str | None = None
    port: int = 22
    key_file: str | None = None
    source: Literal["commands", "pyslurm"] = "commands"
    """``commands`` (squeue/sinfo/scontrol/sacct text) or ``pyslurm`` (Slurm 25.11 sites only)."""


class KernelLogAccess(_Strict):
    """Where each node's kernel log is.

    ``file``: ``path`` with ``{node}`` (the last ``max_lines`` lines read with ``tail``, through the
    same runner as Slurm). ``command``: ``argv`` (e.g. ``journalctl -k --since {since} --no-pager``)
    run over SSH on the node itself (host ``host`` with ``{node}``).
    """

    kind: Literal["file", "command", "none"] = "none"
    path: str | None = None
    argv: list[str] = Field(default_factory=lambda: ["journalctl", "-k", "--no-pager", "-o", "short-iso",
                                                     "--since", "{since}"])
    host: str = "{node}"
    since_h: float = Field(default=2.0, gt=0, le=24 * 31)
    max_lines: int = Field(default=2000, ge=10, le=1_000_000)


def _roots(value: list[str]) -> list[str]:
    for r in value:
        if not r.startswith("/") or r.rstrip("/") == "" or "\n" in r or "\0" in r:
            raise ValueError(f"{r!r}: a root must be an absolute directory other than /")
    return value


class JobLogAccess(_Strict):
    """Job logs: the StdOut/StdErr paths ``scontrol show job`` reports, read from the end (tools/live/guard.py).

    A job's user picks those paths, so they are read only when they resolve (symlinks followed
    where the file is) under one of ``roots`` and, with ``owner_check``, belong to the job's user.
    No roots configured: job logs are not fetched, and each one planned is recorded as unreadable.
    """

    enabled: bool = True
    roots: list[str] = Field(default_factory=list)
    """Directories job logs may be read from (e.g. ``["/scratch", "/home"]``); empty = none fetched."""
    owner_check: bool = True
    """Read a log only when the opened file is owned by the job's user (scontrol ``UserId``)."""
    max_bytes: int = Field(default=262_144, ge=1024, le=64 * 1024 * 1024)
    """Bytes read from the end of each log."""

    _check_roots = field_validator("roots")(_roots)


class LustreItem(_Strict):
    """One Lustre output: a command (``argv``) run through the Slurm runner, or an emulated ``file``."""

    format: FormatId
    fs: str = "lustre"
    argv: list[str] = Field(default_factory=list)
    path: str | None = None
    command: str | None = None
    """The real command a file stands for (recorded in the manifest)."""


class CheckpointAccess(_Strict):
    """Where a job keeps its checkpoints: ``pattern`` with ``{workdir}`` (the job's WorkDir)."""

    pattern: str = "{workdir}/checkpoints"
    manifest_name: str = Field(default="manifest.json", pattern=r"^[A-Za-z0-9._-]+$")
    roots: list[str] = Field(default_factory=list)
    """Directories checkpoints may be verified in (resolved where they are, owned by the job's user);
    empty = ``job_logs.roots``."""

    _check_roots = field_validator("roots")(_roots)


class LiveBounds(_Strict):
    """Bounds that keep one live snapshot small on a large cluster."""

    max_nodes: int = Field(default=32, ge=1, le=100_000)
    """Nodes whose kernel logs and GPU series are fetched (nodes that matter first)."""
    max_job_logs: int = Field(default=16, ge=0, le=10_000)
    sacct_window_h: float = Field(default=6.0, gt=0, le=24 * 366)
    range_window_min: int = Field(default=15, ge=1, le=7 * 24 * 60)
    range_step_s: int = Field(default=60, ge=1, le=86_400)
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    """Per fetch: a command is killed, an HTTP request abandoned, after this many seconds."""
    parallel: int = Field(default=8, ge=1, le=64)
    """Fetches in flight at once (a bounded pool; commands through one SSH connection go one at a time)."""


class LivePlanInput(_Strict):
    """Everything a live collection needs to know about one cluster."""

    cluster: str = "cluster"
    slurm: SlurmAccess = Field(default_factory=SlurmAccess)
    prometheus_url: str | None = None
    exporter_url: str | None = None
    """A node's dcgm-exporter page with ``{node}`` (``http://{node}:9400/metrics``): when set, the nodes
    the first pass names are scraped there; otherwise their series are asked of Prometheus."""
    kernel_logs: KernelLogAccess = Field(default_factory=KernelLogAccess)
    job_logs: JobLogAccess = Field(default_factory=JobLogAccess)
    lustre: list[LustreItem] = Field(default_factory=list)
    checkpoints: CheckpointAccess = Field(default_factory=CheckpointAccess)
    bounds: LiveBounds = Field(default_factory=LiveBounds)
    checks: list[SiteCheck] = Field(default_factory=list)
    """Site check overrides (``[[checks]]``)."""
