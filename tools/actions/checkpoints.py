"""Verifying a job's checkpoints against their manifests (sizes and sha256), through a command runner.

A checkpoint is a folder holding the files and a manifest (default ``manifest.json``)::

    {"step": 10, "files": [{"path": "model.pt", "size_bytes": 262144, "sha256": "…"}, …]}

The runner (LocalSource or SSHSource) runs ``find``, ``cat``, ``stat`` and ``sha256sum`` as
argument lists, so checkpoints on a login node's file system are verified where they are.
Used when planning a resubmission live: the newest checkpoint whose manifest verifies.
"""

from __future__ import annotations

import json
import posixpath

from pydantic import BaseModel

from tools.actions.base import CommandRunner
from tools.errors import CommandError

__all__ = ["CheckpointCheck", "verify_checkpoint", "list_checkpoints", "newest_verified_checkpoint"]

_MAX_CHECKED = 8


class CheckpointCheck(BaseModel):
    """The verdict on one checkpoint folder."""

    path: str
    step: int | None = None
    ok: bool
    problem: str | None = None
    """Why it does not verify (missing manifest, size or sha256 mismatch), None when ok."""


def _run(runner: CommandRunner, argv: list[str]) -> str:
    return runner.run(argv, timeout_s=60).decode("utf-8", "replace")


def verify_checkpoint(runner: CommandRunner, folder: str, *, manifest_name: str = "manifest.json") -> CheckpointCheck:
    """Check every file the manifest lists: present, ``size_bytes`` and ``sha256`` as recorded."""
    try:
        manifest = json.loads(_run(runner, ["cat", "--", posixpath.join(folder, manifest_name)]))
        files = manifest["files"]
        names = [str(f["path"]) for f in files]
    except CommandError as e:
        return CheckpointCheck(path=folder, ok=False, problem=f"no readable {manifest_name}: {e.stderr.strip()[:120]}")
    except (ValueError, KeyError, TypeError) as e:
        return CheckpointCheck(path=folder, ok=False, problem=f"malformed {manifest_name}: {e}")
    step = manifest.get("step") if isinstance(manifest.get("step"), int) else None
    if any(n.startswith("/") or ".." in n.split("/") for n in names):
        return CheckpointCheck(path=folder, step=step, ok=False, problem="manifest names a path outside the checkpoint")
    paths = [posixpath.join(folder, n) for n in names]
    if not paths:
        return CheckpointCheck(path=folder, step=step, ok=False, problem="manifest lists no files")
    try:
        sizes = _run(runner, ["stat", "-c", "%s", "--", *paths]).split()
        sums = [line.split()[0] for line in _run(runner, ["sha256sum", "--", *paths]).splitlines() if line.strip()]
    except CommandError as e:
        return CheckpointCheck(path=folder, step=step, ok=False, problem=f"cannot read files: {e.stderr.strip()[:120]}")
    for f, p, size, digest in zip(files, paths, sizes, sums):
        if int(size) != int(f.get("size_bytes", -1)):
            return CheckpointCheck(path=folder, step=step, ok=False,
                                   problem=f"{p}: {size} bytes, manifest says {f.get('size_bytes')}")
        if digest.lstrip("\\") != f.get("sha256"):
            return CheckpointCheck(path=folder, step=step, ok=False, problem=f"{p}: sha256 differs from the manifest")
    if len(sizes) != len(paths) or len(sums) != len(paths):
        return CheckpointCheck(path=folder, step=step, ok=False, problem="could not read every listed file")
    return CheckpointCheck(path=folder, step=step, ok=True)


def list_checkpoints(runner: CommandRunner, root: str, *, manifest_name: str = "manifest.json") -> list[str]:
    """Checkpoint folders under ``root`` (those holding a manifest), newest name last; [] when none."""
    try:
        out = _run(runner, ["find", root, "-mindepth", "2", "-maxdepth", "2", "-name", manifest_name, "-type", "f"])
    except CommandError:
        return []
    return sorted({posixpath.dirname(line) for line in out.splitlines() if line.strip()})


def newest_verified_checkpoint(runner: CommandRunner, root: str, *, manifest_name: str = "manifest.json",
                               ) -> tuple[CheckpointCheck | None, list[CheckpointCheck]]:
    """The newest checkpoint under ``root`` that verifies, and every check made (newest first, at
    most 8 checked)."""
    checks: list[CheckpointCheck] = []
    for folder in reversed(list_checkpoints(runner, root, manifest_name=manifest_name)[-_MAX_CHECKED:]):
        check = verify_checkpoint(runner, folder, manifest_name=manifest_name)
        checks.append(check)
        if check.ok:
            return check, checks
    return None, checks
