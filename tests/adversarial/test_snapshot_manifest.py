"""Adversarial class from issue 15 items 3, 6 and 11: a snapshot whose manifest points Warden at
files outside it, at files that block, at the same file many times, or that its parsers choke on.

Before: an entry listed 1,000 times was read and counted 1,000 times (its Xid events with it); a
listed file that was absent ended in ``NameError``; a 5,000-deep JSON manifest or a 5,000-digit
integer in it escaped as a traceback (RecursionError, ValueError); a FIFO listed in the manifest
blocked the replay for good. Now each is a one-line SnapshotError naming the manifest and the
entry (or, for a replay that allows absent files, unreadable evidence), and a file swapped for a
symlink or a FIFO after the manifest was checked is refused when it is read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tools.errors import SnapshotError
from tools.read.context import ReadContext
from tools.snapshot.manifest import load_manifest
from tools.sources.snapshot import SnapshotSource

KERNEL = (Path(__file__).parents[1] / "fixtures" / "kernel-log" / "dmesg-xid79-fallen-off-bus.log").read_bytes()
HEAD = "captured_at: 2026-03-04T10:15:00Z\nfiles:\n"


def snap(tmp_path: Path, *entries: str) -> Path:
    root = tmp_path / "snap"
    (root / "kernel").mkdir(parents=True, exist_ok=True)
    (root / "kernel" / "gpu01.log").write_bytes(KERNEL)
    (root / "manifest.yaml").write_text(HEAD + "".join(f"  - {e}\n" for e in entries))
    return root


OK = "{path: kernel/gpu01.log, format: kernel-log, node: gpu01}"


def refused(root: Path, *fragments: str) -> str:
    with pytest.raises(SnapshotError) as e:
        load_manifest(root, allow_absent=True)
    msg = str(e.value)
    assert "\n" not in msg and str(root / "manifest.yaml") in msg, msg
    for f in fragments:
        assert f in msg, (f, msg)
    return msg


def test_the_same_file_listed_twice_is_refused(tmp_path: Path) -> None:
    root = snap(tmp_path, OK, *[OK] * 999)
    refused(root, "files.1: 'kernel/gpu01.log'", "the same file as files.0")
    (root / "manifest.yaml").write_text(HEAD + f"  - {OK}\n  - {{path: ./kernel//gpu01.log, format: kernel-log}}\n")
    refused(root, "the same file as files.0")  # spelled differently, still the same file
    (root / "kernel" / "alias.log").symlink_to("gpu01.log")
    (root / "manifest.yaml").write_text(HEAD + f"  - {OK}\n  - {{path: kernel/alias.log, format: kernel-log}}\n")
    refused(root, "files.1: 'kernel/alias.log'", "the same file as files.0")  # through a symlink


def test_listed_once_its_evidence_is_counted_once(tmp_path: Path) -> None:
    facts = ReadContext.from_snapshot(snap(tmp_path, OK)).facts
    assert len([e for e in facts.kernel_events if e.node == "gpu01" and e.kind == "xid"]) == KERNEL.count(b"Xid")


@pytest.mark.parametrize(("path", "why"), [
    ("/etc/passwd", "paths must be relative"),
    ("../outside.log", "without '..'"),
    ("kernel/../../outside.log", "without '..'"),
    ("kernel/../kernel/gpu01.log", "without '..'"),  # inside after all, but not a path DESIGN.md allows
])
def test_absolute_and_dotdot_paths_are_refused(tmp_path: Path, path: str, why: str) -> None:
    (tmp_path / "outside.log").write_bytes(KERNEL)
    refused(snap(tmp_path, f"{{path: {path!r}, format: kernel-log}}"), why)


def test_a_symlink_leaving_the_snapshot_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("root:x:0:0\n")
    root = snap(tmp_path, OK, "{path: kernel/gpu02.log, format: kernel-log}")
    (root / "kernel" / "gpu02.log").symlink_to(tmp_path / "secret")
    refused(root, "files.1: 'kernel/gpu02.log'", "is outside the snapshot")
    (root / "kernel" / "gpu02.log").unlink()
    (root / "kernel" / "gpu02.log").symlink_to("/dev/zero")
    refused(root, "is outside the snapshot")


def test_a_listed_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    root = snap(tmp_path, OK, "{path: kernel/gpu02.log, format: kernel-log}")
    os.mkfifo(root / "kernel" / "gpu02.log")
    refused(root, "files.1: 'kernel/gpu02.log'", "not a regular file")


def test_a_file_swapped_after_the_manifest_was_checked_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("root:x:0:0\n")
    root = snap(tmp_path, OK)
    src = SnapshotSource(root)
    (entry,) = src.entries()
    (root / "kernel" / "gpu01.log").unlink()
    (root / "kernel" / "gpu01.log").symlink_to(tmp_path / "secret")
    with pytest.raises(SnapshotError, match="now lies outside the snapshot"):
        src.read(entry)
    (root / "kernel" / "gpu01.log").unlink()
    os.mkfifo(root / "kernel" / "gpu01.log")
    with pytest.raises(SnapshotError, match="not a regular file"):  # opened non-blocking: no hang
        src.read(entry)


def test_an_absent_file_is_unreadable_evidence_or_one_line(tmp_path: Path) -> None:
    root = snap(tmp_path, OK, "{path: kernel/gpu02.log, format: kernel-log, node: gpu02}")
    facts = ReadContext.from_snapshot(root).facts  # before: NameError
    assert [(u.kind, u.path) for u in facts.unreadable] == [("file", "kernel/gpu02.log")]
    with pytest.raises(SnapshotError, match="listed file 'kernel/gpu02.log' is absent"):
        load_manifest(root)


@pytest.mark.parametrize(("text", "why"), [
    ('{"captured_at": "2026-03-04T10:15:00Z", "x": ' + "[" * 5000 + "]" * 5000 + ', "files": []}',
     "nested too deeply"),
    ('{"captured_at": "2026-03-04T10:15:00Z", "x": ' + "9" * 5000 + ', "files": []}', "4300 digits"),
    (HEAD.replace("files:\n", "x: " + "9" * 5000 + "\nfiles: []\n"), "4300 digits"),
    (HEAD.replace("files:\n", "x: " + "[" * 5000 + "]" * 5000 + "\nfiles: []\n"), "invalid YAML"),
])
def test_hostile_manifest_documents_are_one_line(tmp_path: Path, text: str, why: str) -> None:
    root = snap(tmp_path)
    (root / "kernel" / "gpu01.log").unlink()
    (root / "manifest.yaml").write_text(text)
    refused(root, why)


DEEP = {"array": "[" * 5000 + "]" * 5000, "object": '{"a":' * 5000 + "1" + "}" * 5000,
        "5000-digit": '{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, '
                      '"value": [1, "' + "1" * 10 + '"]}]}, "n": ' + "9" * 5000 + "}"}


@pytest.mark.parametrize("shape", sorted(DEEP))
@pytest.mark.parametrize("fmt", ["squeue-json", "sinfo-json", "sacct-json", "prometheus-query-json", "k8s-json",
                                 "dcgmi-diag-json"])
def test_every_json_format_survives_absurd_nesting_and_huge_integers(tmp_path: Path, fmt: str, shape: str) -> None:
    """Before: prometheus-query-json raised RecursionError / ValueError out of the replay (a traceback);
    now, as for the other JSON formats, the file is unreadable evidence naming it and the rest is read."""
    from tools.read.context import ReadContext

    root = tmp_path / "snap"
    root.mkdir()
    (root / "f.json").write_text(DEEP[shape])
    (root / "manifest.yaml").write_text(json.dumps({"captured_at": "2026-03-04T10:15:00Z",
                                                    "files": [{"path": "f.json", "format": fmt}]}))
    (u,) = ReadContext.from_snapshot(root).facts.unreadable
    assert u.kind == "file" and u.path == "f.json" and u.reason.startswith("f.json")
