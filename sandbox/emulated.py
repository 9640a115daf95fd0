"""Emulated node kernel logs and Lustre outputs, written as files in their real formats.

Neither NVIDIA GPUs nor Lustre exist on a sandbox host, so what a real cluster would print is
written to files under the state folder and read back through Warden's ordinary sources:

* ``<state>/nodes/<node>/kernel.log``: ``dmesg -T`` output of each node (format kernel-log).
  NVRM Xid lines follow the driver's shape ``NVRM: Xid (PCI:0000:47:00): 79, pid='<unknown>',
  name=<unknown>, GPU has fallen off the bus.``
* ``<state>/lustre/<fs>/``: ``lctl get_param mdt.*.md_stats`` (lctl-md-stats), ``lctl get_param
  mdt.*.job_stats`` (lctl-job-stats), ``lfs df`` (lfs-df) and ``lfs df -i`` (lfs-df-inodes) in the
  Lustre 2.15 shapes; the MDT tags job_stats with ``jobid_var=SLURM_JOB_ID``, so ``job_id`` is
  the Slurm job id. This part of the sandbox is emulated: there is no Lustre server here.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from sandbox.gpu_state import PCI_BUS_IDS
from sandbox.layout import Layout, SandboxConfig

__all__ = [
    "LUSTRE_FILES",
    "dmesg_time",
    "write_kernel_baseline",
    "append_xid",
    "lustre_paths",
    "write_lustre",
]

LUSTRE_FILES: dict[str, tuple[str, str]] = {
    "lctl-md-stats": ("md_stats.txt", "lctl get_param mdt.*.md_stats"),
    "lctl-job-stats": ("job_stats.txt", "lctl get_param mdt.*.job_stats"),
    "lfs-df": ("lfs_df.txt", "lfs df {mount}"),
    "lfs-df-inodes": ("lfs_df_inodes.txt", "lfs df -i {mount}"),
}
"""format id → (file name under ``<state>/lustre/<fs>/``, the command a real cluster runs)."""

_MD_OPS = ("open", "close", "mknod", "unlink", "mkdir", "rmdir", "rename", "getattr", "setattr", "getxattr", "statfs")


def dmesg_time(t: float | None = None) -> str:
    """``dmesg -T`` timestamp, e.g. ``[Sun Nov 29 16:01:02 2026]``."""
    return datetime.fromtimestamp(time.time() if t is None else t).strftime("[%a %b %e %H:%M:%S %Y]")


def write_kernel_baseline(lay: Layout, node: str, *, boot: float | None = None) -> Path:
    """(Re)write ``node``'s kernel log with the benign lines of a healthy boot; return its path."""
    boot = time.time() - 3600 if boot is None else boot
    lines = [
        f"{dmesg_time(boot)} Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org)",
        f"{dmesg_time(boot + 9)} nvidia: module license 'NVIDIA' taints kernel.",
        f"{dmesg_time(boot + 9)} nvidia-nvlink: Nvlink Core is being initialized, major device number 509",
        f"{dmesg_time(boot + 10)} NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024",
        f"{dmesg_time(boot + 14)} Lustre: Lustre: Build Version: 2.15.4",
        f"{dmesg_time(boot + 15)} Lustre: Mounted scratch-client",
    ]
    path = lay.kernel_log(node)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def append_xid(lay: Layout, node: str, *, gpu: int, xid: int = 79, uuid: str = "") -> list[str]:
    """Append the NVRM lines a driver logs when GPU ``gpu`` of ``node`` raises Xid ``xid``.

    Returns:
        The lines appended (Xid 79 also gets the driver's "fallen off the bus" follow-up line).
    """
    bus = PCI_BUS_IDS[gpu % len(PCI_BUS_IDS)]
    short = bus[4:].rsplit(".", 1)[0]  # 0000:47:00
    ts = dmesg_time()
    lines = [f"{ts} NVRM: GPU at PCI:{short}: {uuid}"] if uuid else []
    if xid == 79:
        lines += [
            f"{ts} NVRM: Xid (PCI:{short}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            f"{ts} NVRM: GPU {bus[4:]}: GPU has fallen off the bus.",
        ]
    else:
        lines.append(f"{ts} NVRM: Xid (PCI:{short}): {xid}, pid=2718, name=python, Ch 00000008")
    with open(lay.kernel_log(node), "a") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def lustre_paths(lay: Layout, cfg: SandboxConfig) -> dict[str, Path]:
    """format id → the emulated file holding that Lustre output."""
    return {fmt: lay.lustre / cfg.lustre_fs / name for fmt, (name, _cmd) in LUSTRE_FILES.items()}


_BUSY_OPS_PER_S = 5000.0
"""Above this metadata op rate the emulated MDT is saturated: service times rise from tens of
microseconds to milliseconds, as a real MDS's do under an open/stat storm."""


def _avg_us(op: str, busy: bool) -> int:
    """Mean service time of one op in microseconds (what Lustre 2.14+ sums in ``usecs``)."""
    fast = op in ("open", "getattr", "close")
    if busy:
        return 1850 if fast else 4200
    return 40 if fast else 120


def _row(op: str, samples: int, busy: bool = False) -> str:
    if samples == 0:
        return f"{op:<26}{samples} samples [usecs] 0 0 0 0"
    avg = _avg_us(op, busy)
    return f"{op:<26}{samples} samples [usecs] 1 {avg * 90} {samples * avg} {samples * avg * avg * 3}"


def _md_stats(fs: str, counts: dict[str, int], now: float, start: float, busy: bool = False) -> str:
    lines = [
        f"mdt.{fs}-MDT0000.md_stats=",
        f"{'snapshot_time':<26}{now:.9f} secs.nsecs",
        f"{'start_time':<26}{start:.9f} secs.nsecs",
        f"{'elapsed_time':<26}{now - start:.9f} secs.nsecs",
    ]
    lines += [_row(op, n, busy) for op, n in counts.items() if n]
    return "\n".join(lines) + "\n"


def _job_block(job_id: str, counts: dict[str, int], now: float, start: float, busy: bool = False) -> list[str]:
    out = [
        f"- job_id:          {job_id}",
        f"  snapshot_time:   {now:.9f} secs.nsecs",
        f"  start_time:      {start:.9f} secs.nsecs",
        f"  elapsed_time:    {now - start:.9f} secs.nsecs",
    ]
    for op in _MD_OPS:
        n = counts.get(op, 0)
        avg = _avg_us(op, busy) if n else 0
        out.append(
            f"  {op + ':':<17}{{ samples: {n:>11}, unit: usecs, min: {1 if n else 0:>8}, max: {avg * 90:>8}, "
            f"sum: {n * avg:>15}, sumsq: {n * avg * avg * 3:>16} }}"
        )
    return out


def write_lustre(lay: Layout, cfg: SandboxConfig, jobs: dict[str, dict[str, int]] | None = None) -> dict[str, Path]:
    """Write the four emulated Lustre outputs; ``jobs`` maps Slurm job id → metadata op counts.

    With ``jobs`` None the file system is quiet (a login-node ``ls`` and a small job). A storm is
    a job with tens of millions of open/getattr calls; the MDT totals include every job's counts.

    Returns:
        format id → path written.
    """
    fs = cfg.lustre_fs
    now = time.time()
    start = now - 3600.0
    jobs = jobs if jobs is not None else {"ls.0": {"open": 180, "close": 180, "getattr": 2210, "statfs": 3}}
    totals = {op: 1500 + sum(j.get(op, 0) for j in jobs.values()) for op in _MD_OPS}
    busy = sum(totals.values()) / (now - start) > _BUSY_OPS_PER_S
    paths = lustre_paths(lay, cfg)
    paths["lctl-md-stats"].parent.mkdir(parents=True, exist_ok=True)
    paths["lctl-md-stats"].write_text(_md_stats(fs, totals, now, start, busy))
    body = [f"mdt.{fs}-MDT0000.job_stats=", "job_stats:"]
    for job_id, counts in jobs.items():
        body += _job_block(job_id, counts, now, start, busy)
    paths["lctl-job-stats"].write_text("\n".join(body) + "\n")
    mount = f"/lustre/{fs}"
    inode_used = 1_203_311 + totals["mknod"] + totals["mkdir"]
    paths["lfs-df"].write_text(
        "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
        f"{fs}-MDT0000_UUID    1168087040    34914816  1055306752   4% {mount}[MDT:0]\n"
        f"{fs}-OST0000_UUID   61476352000 30121339904 28282549248  52% {mount}[OST:0]\n"
        f"{fs}-OST0001_UUID   61476352000 29882102272 28521786880  52% {mount}[OST:1]\n"
        "\n"
        f"filesystem_summary:  122952704000 60003442176 56804336128  52% {mount}\n"
    )
    paths["lfs-df-inodes"].write_text(
        "UUID                      Inodes       IUsed       IFree IUse% Mounted on\n"
        f"{fs}-MDT0000_UUID     838860800 {inode_used:>11} {838860800 - inode_used:>11}   1% {mount}[MDT:0]\n"
        f"{fs}-OST0000_UUID     244187136     1010441   243176695   1% {mount}[OST:0]\n"
        f"{fs}-OST0001_UUID     244187136     1009877   243177259   1% {mount}[OST:1]\n"
        "\n"
        f"filesystem_summary:   838860800 {inode_used:>11} {838860800 - inode_used:>11}   1% {mount}\n"
    )
    return paths
