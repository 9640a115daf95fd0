"""A node's own disk failing, as the Linux block layer and local file systems log it.

Sources: the kernel's block-layer messages (``critical medium error, dev nvme0n1, sector …``, ``I/O error, dev
sda, sector …``, ``Buffer I/O error on dev …``), ext4's and XFS's error paths (``EXT4-fs error (device …)``,
``Aborting journal on device …``, ``XFS (…): metadata I/O error``, ``XFS (…): Filesystem has been shut down``,
after which the file system is read-only or gone), and the NVMe driver's controller resets. Network file
systems (Lustre, NFS, GPFS) and multipath devices of storage servers are not here: their own checks read them.
"""

from __future__ import annotations

import re

__all__ = ["disk_failure", "DiskFailure"]

DiskFailure = tuple[str, str]
"""(what, device): ``medium_error``, ``io_error``, ``fs_error`` (the file system aborted or shut down)."""

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bcritical (?:medium|target) error, dev (\w+)"), "medium_error"),
    (re.compile(r"\bEXT4-fs (?:error|\(\w+\): Remounting filesystem read-only)[^(]*\(?(?:device )?(\w+)\)?"), "fs_error"),
    (re.compile(r"\bAborting journal on device (\w+)"), "fs_error"),
    (re.compile(r"\bXFS \((\w+)\): (?:metadata I/O error|log I/O error|Corruption|Filesystem has been shut down|"
                r"Please unmount the filesystem|xfs_do_force_shutdown)"), "fs_error"),
    (re.compile(r"\b(?:blk_update_request: )?(?:critical )?I/O error, dev (\w+), sector"), "io_error"),
    (re.compile(r"\bBuffer I/O error on dev (\w+)"), "io_error"),
)
_NOT_LOCAL = re.compile(r"^(?:dm-|md|nbd|loop|rbd|drbd)")
"""Devices that are not one local disk: device-mapper (a storage server's multipath), RAID, network block
devices, loop files."""


def disk_failure(message: str) -> DiskFailure | None:
    """(what, device) when a kernel line reports a local disk or local file system failing; else None."""
    low = message.lower()
    if "error" not in low and "xfs" not in low and "journal" not in low and "read-only" not in low:
        return None
    for pattern, what in _RULES:
        if (m := pattern.search(message)) is not None:
            dev = m.group(1)
            return None if _NOT_LOCAL.match(dev) else (what, dev)
    return None
