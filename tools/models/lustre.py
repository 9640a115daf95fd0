"""Typed Lustre statistics, as parsed from `lctl get_param` and `lfs df`."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["MdtStats", "JobStatsEntry", "LfsDfRow"]


class MdtStats(BaseModel):
    """Counters of one MDT from `lctl get_param mdt.*.md_stats` (format lctl-md-stats).

    Counters are sample counts since the stats were last cleared; ``elapsed_s`` is the time they
    cover when Lustre prints it (start_time/elapsed_time), else None.
    """

    target: str
    """e.g. ``lustre-MDT0000``."""
    snapshot_time_s: float | None = None
    elapsed_s: float | None = None
    counters: dict[str, int] = Field(default_factory=dict)
    """op name -> samples, e.g. ``{"open": 123, "getattr": 456}``."""
    param: str | None = None
    """The full parameter name as lctl printed it, e.g. ``mdt.lustre-MDT0000.md_stats``."""
    server: str | None = None
    """The MDS the stats were read on (the artifact's node), when recorded: the host that serves the MDT."""
    units: dict[str, str] = Field(default_factory=dict)
    """op name -> unit lctl printed in brackets (``reqs``, ``usecs``), when given."""
    sums: dict[str, int] = Field(default_factory=dict)
    """op name -> sum column (in ``units``; usecs of service time on newer Lustre), when printed."""


class JobStatsEntry(BaseModel):
    """One job's entry of `lctl get_param mdt.*.job_stats` or `obdfilter.*.job_stats` (format lctl-job-stats)."""

    target: str
    """MDT or OST name, e.g. ``lustre-MDT0000`` / ``lustre-OST0003``."""
    job_id: str
    """jobid_var value as Lustre records it: a Slurm job id, or ``procname.uid`` such as ``dd.0``."""
    snapshot_time_s: float | None = None
    elapsed_s: float | None = None
    ops: dict[str, int] = Field(default_factory=dict)
    """op name -> samples (open, close, getattr, mknod, unlink, read, write, ...)."""
    bytes: dict[str, int] = Field(default_factory=dict)
    """For read_bytes / write_bytes: op name -> sum in bytes."""
    kind: str | None = None
    """``MDT`` for ``mdt.*.job_stats``, ``OST`` for ``obdfilter.*.job_stats``."""
    usecs: dict[str, int] = Field(default_factory=dict)
    """For ops whose unit is usecs (newer Lustre): op name -> summed service time in microseconds."""


class LfsDfRow(BaseModel):
    """One target row of `lfs df` (KiB blocks) or `lfs df -i` (inodes)."""

    uuid: str
    """e.g. ``lustre-OST0001_UUID``."""
    kind: str
    """``MDT`` or ``OST``."""
    index: int
    total: int
    used: int
    available: int
    use_pct: float
    mount: str
    inodes: bool
    """True for `lfs df -i` rows (counts are inodes), False for blocks (counts are KiB)."""
    fs: str | None = None
    """File-system name, from the uuid prefix (``lustre`` in ``lustre-OST0001_UUID``)."""
    status: str = "active"
    """``active``, or the text lfs printed instead of numbers (``inactive device``,
    ``Resource temporarily unavailable``); counts are 0 when not active."""
    flags: str | None = None
    """Target state flags lfs prints after the mount column on newer Lustre (e.g. ``D``, ``R``)."""
    file: str | None = None
    """The output this row came from: `lfs df` runs on a client and shows that client's view of the targets."""
