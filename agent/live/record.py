"""``warden record``: save a live collection as a snapshot (DESIGN.md's format) that replays byte for byte.

    <out>/manifest.yaml   captured_at, cluster {name, scheduler, slurm_version}, one entry per file
    <out>/slurm/… gpu/… kernel/<node>.log logs/<job>/… lustre/<fs>/…

Every file the collection fetched is written at the snapshot-relative path its request named and
listed with its format, the command or URL it came from, and the node or job it covers.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from tools.errors import SnapshotError, WardenError
from tools.models.unreadable import Unreadable
from tools.models.slurm import SlurmNode
from tools.parsers import parse_artifact
from tools.snapshot.manifest import MANIFEST_NAME, load_manifest
from tools.sources.base import RawArtifact
from tools.read.context import ReadContext

__all__ = ["write_snapshot", "context_of"]


def _slurm_version(artifacts: Sequence[RawArtifact]) -> str | None:
    for art in artifacts:
        if art.format == "scontrol-node-text":
            try:
                nodes = parse_artifact(art)
            except WardenError:  # a version is optional; the diagnosis reports parse errors
                return None
            versions = sorted({n.version for n in nodes if isinstance(n, SlurmNode) and n.version})
            return versions[0] if versions else None
    return None


def write_snapshot(artifacts: Sequence[RawArtifact], out: Path, *, captured_at: datetime, cluster: str,
                   extra: dict[str, Any] | None = None, checks: list[dict[str, Any]] | None = None) -> Path:
    """Write ``artifacts`` and a complete manifest under ``out`` (created; must be empty if it exists).

    Returns:
        ``out``.

    Raises:
        SnapshotError: ``out`` is not empty, or two artifacts claim one path, or the written snapshot
            does not load back (the manifest is checked by tools.snapshot.manifest).
    """
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise SnapshotError(f"{out}: not empty; record into a new directory")
    files, seen = [], set()
    for art in artifacts:
        rel = PurePosixPath(art.path)
        if rel.is_absolute() or ".." in rel.parts or str(rel) == MANIFEST_NAME:
            raise SnapshotError(f"{out}: refusing to write artifact path {art.path!r}")
        if str(rel) in seen:
            raise SnapshotError(f"{out}: two artifacts for {rel}")
        seen.add(str(rel))
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(art.data)
        entry: dict[str, str] = {"path": str(rel), "format": art.format}
        for key in ("command", "url", "node", "job", "columns"):
            value = getattr(art, key)
            if value:
                entry[key] = value
        files.append(entry)
    info: dict[str, str] = {"name": cluster, "scheduler": "slurm"}
    version = _slurm_version(artifacts)
    if version:
        info["slurm_version"] = version
    manifest = {"captured_at": captured_at.isoformat().replace("+00:00", "Z"), "cluster": info,
                **(extra or {}), **({"checks": checks} if checks else {}), "files": files}
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST_NAME).write_text(yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True, width=200))
    load_manifest(out)
    return out


def context_of(artifacts: Sequence[RawArtifact], *, captured_at: datetime, cluster: str,
               checks: list[dict[str, Any]] | None = None, unreadable: Sequence[Unreadable] = ()) -> ReadContext:
    """A ReadContext over artifacts already fetched (the live twin of a recorded snapshot), with
    the site's check overrides and the fetches that failed (as unreadable evidence)."""
    arts = list(artifacts)
    failed = list(unreadable)
    return ReadContext(lambda: iter(arts), captured_at=captured_at, cluster=cluster, checks=checks,
                       unreadable=lambda: failed)
