"""Replay source: serves a recorded snapshot's files back, byte for byte."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from tools.errors import SnapshotError
from tools.limits import InputLimits, bounded, byte_cap, cut_mode, input_limits
from tools.models.ids import FormatId
from tools.snapshot.manifest import Manifest, ManifestEntry, load_manifest
from tools.sources.base import FetchRequest, RawArtifact

__all__ = ["SnapshotSource"]


_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_BENEATH = os.open in os.supports_dir_fd


def _open_beneath(top: Path, rel: str) -> int | None:
    """``rel`` opened one component at a time from ``top`` (``openat`` with O_NOFOLLOW): with no symlink on
    the way the file is inside the snapshot by construction, in two or three system calls instead of
    resolving every component of the path (20,000 files at 10,000 nodes). None when a component is a
    symlink (or the platform has no ``dir_fd``): the caller then resolves the path and checks it.

    Raises:
        OSError: a component is absent or cannot be opened.
    """
    parts = rel.split("/")
    if not _BENEATH or any(part in ("", ".", "..") for part in parts):
        return None
    dirs: list[int] = []
    try:
        try:
            dirs.append(os.open(top, _DIR_FLAGS))
            for part in parts[:-1]:
                dirs.append(os.open(part, _DIR_FLAGS, dir_fd=dirs[-1]))
            return os.open(parts[-1], _FLAGS, dir_fd=dirs[-1])
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink (O_NOFOLLOW refuses it): the slow path decides
                return None
            raise
    finally:
        for d in dirs:
            os.close(d)


def _read_inside(root: Path, rel: str, top: Path, fmt: str, limits: InputLimits) -> tuple[bytes, int]:
    """The bytes of ``rel`` if it is still, when opened, a regular file inside ``root``: the manifest
    was checked when loaded, but the directory may have changed since (a file swapped for a symlink
    out of the snapshot, or for a FIFO that would block the read). ``top``: ``root`` resolved.
    Returns (bytes read, the file's size): for a log, at most its cap from the end (tools/limits.py).

    Raises:
        SnapshotError: the file now lies outside the snapshot, is not a regular file, or is over
            its size cap and cannot be cut (tools/limits.py).
        OSError: it cannot be opened or read.
    """
    fd = _open_beneath(top, rel)
    if fd is None:  # a symlink on the way: resolve it, and read it only if it stays inside
        p = (root / rel).resolve()
        if top not in p.parents:
            raise SnapshotError(f"{rel}: now lies outside the snapshot ({p})")
        fd = os.open(p, _FLAGS)
    try:  # the descriptor itself, no file object around it (20,000 files at 10,000 nodes)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SnapshotError(f"{rel}: listed in the manifest but not a regular file")
        cap = byte_cap(fmt, limits)
        if st.st_size > cap:
            if cut_mode(fmt) != "tail":
                try:
                    bounded(fmt, b"", st.st_size, limits)
                except ValueError as e:
                    raise SnapshotError(f"{rel}: {e}") from None
            os.lseek(fd, st.st_size - cap, os.SEEK_SET)
            return _read_n(fd, cap), st.st_size
        # read(cap + 1) would allocate the whole cap (hundreds of MiB) for every file before shrinking it;
        # the size is known, and one more byte tells a file that grew meanwhile (then read on up to the cap).
        data = _read_n(fd, st.st_size + 1)
        if len(data) > st.st_size:
            data += _read_n(fd, cap + 1 - len(data))
        return data, max(st.st_size, len(data))
    finally:
        os.close(fd)


def _read_n(fd: int, n: int) -> bytes:
    """Up to ``n`` bytes from ``fd``: fewer only at the end of the file (what a file object's read(n) gives)."""
    data = os.read(fd, n)
    if len(data) == n or not data:
        return data
    parts = [data]
    left = n - len(data)
    while left > 0:
        more = os.read(fd, left)
        if not more:
            break
        parts.append(more)
        left -= len(more)
    return b"".join(parts)


class SnapshotSource:
    """A Source over a snapshot directory (DESIGN.md snapshot format).

    Args:
        root: the snapshot directory holding ``manifest.yaml``.
        allow_absent: accept a manifest listing files that are absent (``read`` then raises for them).

    Raises:
        SnapshotError: at construction when the manifest is invalid; on fetch when no entry matches.
    """

    name = "snapshot"

    def __init__(self, root: Path, *, allow_absent: bool = False) -> None:
        self.root = Path(root)
        self.manifest: Manifest = load_manifest(self.root, allow_absent=allow_absent)
        self._top = self.root.resolve()
        self._limits: InputLimits | None = None
        """The input caps (config file, then environment), read at the first read: 20,000 reads of a
        large snapshot would otherwise look them up 20,000 times."""

    def entries(self, format: FormatId | None = None) -> list[ManifestEntry]:
        """Manifest entries, optionally only those of one format."""
        return [e for e in self.manifest.files if format is None or e.format == format]

    def fetch(self, req: FetchRequest) -> RawArtifact:
        """Return the recorded bytes of the entry matching ``req`` (path, else format+node+job)."""
        if req.path is not None:
            matches = [e for e in self.manifest.files if e.path == req.path]
        else:
            matches = [
                e
                for e in self.manifest.files
                if e.format == req.format
                and (req.node is None or e.node == req.node)
                and (req.job is None or e.job == req.job)
            ]
        if not matches:
            raise SnapshotError(f"{self.root}: no recorded {req.format} file" + (f" {req.path}" if req.path else ""))
        return self.read(matches[0])

    def read(self, entry: ManifestEntry) -> RawArtifact:
        """Read one manifest entry's file as a RawArtifact (capture time from the manifest), within
        the input caps (tools/limits.py; :meth:`read_bounded` also says what was cut).

        Raises:
            SnapshotError: the listed file is absent, cannot be read, or is over a cap that cannot
                cut it (names it and why).
        """
        return self.read_bounded(entry)[0]

    def read_bounded(self, entry: ManifestEntry) -> tuple[RawArtifact, str | None]:
        """:meth:`read`, and the reason when a cap cut the file (None when it was read whole).

        Raises:
            SnapshotError: as :meth:`read`; ConfigError: a bad ``WARDEN_INPUT_*`` value.
        """
        limits = self._limits = self._limits or input_limits()
        try:
            raw, size = _read_inside(self.root, entry.path, self._top, entry.format, limits)
        except OSError as e:
            raise SnapshotError(f"{entry.path}: listed in the manifest but cannot be read: "
                                f"{e.strerror or type(e).__name__}") from None
        try:
            data, cut = bounded(entry.format, raw, size, limits)
        except ValueError as e:
            raise SnapshotError(f"{entry.path}: {e}") from None
        return RawArtifact(
            format=entry.format,
            data=data,
            path=entry.path,
            command=entry.command,
            url=entry.url,
            node=entry.node,
            job=entry.job,
            columns=entry.columns,
            captured_at=self.manifest.captured_at,
        ), cut
