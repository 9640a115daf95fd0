"""SnapshotSource reads a listed file only while it is inside the snapshot, whichever way its path goes.

The reader opens a path one component at a time from the snapshot root, refusing symlinks on the way
(the fast path); a symlink met on the way sends it to resolving the path and checking where it ends.
These cases cover both paths: a directory of the path swapped for a symlink after the manifest was
checked, leading out of the snapshot or staying inside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.errors import SnapshotError
from tools.sources.snapshot import SnapshotSource

LINE = b"[Mon Mar  4 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"


def _snap(tmp_path: Path) -> Path:
    root = tmp_path / "snap"
    (root / "kernel").mkdir(parents=True)
    (root / "kernel" / "gpu01.log").write_bytes(LINE)
    (root / "manifest.yaml").write_text("captured_at: 2026-03-04T10:15:00Z\nfiles:\n"
                                        "  - {path: kernel/gpu01.log, format: kernel-log, node: gpu01}\n")
    return root


def test_a_listed_file_is_read_byte_for_byte(tmp_path: Path) -> None:
    src = SnapshotSource(_snap(tmp_path))
    (entry,) = src.entries()
    assert src.read(entry).data == LINE


def test_a_directory_swapped_for_a_symlink_out_of_the_snapshot_is_not_read(tmp_path: Path) -> None:
    root = _snap(tmp_path)
    src = SnapshotSource(root)
    (entry,) = src.entries()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "gpu01.log").write_bytes(b"root:x:0:0\n")
    (root / "kernel").rename(root / "kernel.old")
    (root / "kernel").symlink_to(outside)
    with pytest.raises(SnapshotError, match="now lies outside the snapshot"):
        src.read(entry)


def test_a_directory_swapped_for_a_symlink_inside_the_snapshot_is_still_read(tmp_path: Path) -> None:
    root = _snap(tmp_path)
    src = SnapshotSource(root)
    (entry,) = src.entries()
    (root / "kernel").rename(root / "moved")
    (root / "kernel").symlink_to("moved")
    assert src.read(entry).data == LINE
