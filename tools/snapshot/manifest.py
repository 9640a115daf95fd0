"""The snapshot manifest (``manifest.yaml``), DESIGN.md's contract for recording and replay."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tools.errors import SnapshotError
from tools.limits import input_limits
from tools.models.ids import FormatId

__all__ = ["ManifestEntry", "ClusterInfo", "Manifest", "load_manifest", "MANIFEST_NAME"]

MANIFEST_NAME = "manifest.yaml"


class ManifestEntry(BaseModel):
    """One recorded file: its path inside the snapshot and its format; unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore")

    path: str
    format: FormatId
    command: str | None = None
    url: str | None = None
    node: str | None = None
    job: str | None = None
    pod: str | None = None
    """``namespace/name`` of the pod a container log (``kubectl logs``) belongs to; stands for ``job`` when no
    job is given, so the log's lines are the pod's."""
    columns: str | None = None
    source: str | None = None

    @model_validator(mode="after")
    def _pod_is_the_logs_owner(self) -> "ManifestEntry":
        if self.pod and not self.job:
            self.job = self.pod
        return self


class ClusterInfo(BaseModel):
    """Whatever is known of the cluster; all optional."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    scheduler: str | None = None
    slurm_version: str | None = None


class Manifest(BaseModel):
    """A snapshot's manifest: capture time, cluster and the list of files."""

    model_config = ConfigDict(extra="ignore")

    captured_at: datetime
    cluster: ClusterInfo = Field(default_factory=ClusterInfo)
    files: list[ManifestEntry] = Field(default_factory=list)
    checks: list[dict[str, Any]] = Field(default_factory=list)
    """The site's check overrides in force when the snapshot was recorded (optional), so a
    replay weighs the evidence as the live run did."""


def _first_error(err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"])
    return f"{loc}: {e['msg']}"


def load_manifest(snapshot_dir: Path, *, allow_absent: bool = False) -> Manifest:
    """Read and validate ``<snapshot_dir>/manifest.yaml``.

    Checks that every listed file stays inside the snapshot, exists (unless ``allow_absent``: a replay
    then records an absent file as unreadable evidence and reads the rest), and that every file in the
    snapshot is listed (DESIGN.md: both are errors), and that it lists at most
    ``WARDEN_INPUT_MAX_MANIFEST_ENTRIES`` files (tools/limits.py).

    Raises:
        SnapshotError: naming the manifest (and field or file) when anything is wrong.
        ConfigError: a bad ``WARDEN_INPUT_*`` value.
    """
    mpath = snapshot_dir / MANIFEST_NAME
    if not mpath.is_file():
        raise SnapshotError(f"{mpath}: no manifest.yaml in snapshot directory")
    cap = input_limits().max_manifest_entries
    try:
        text = mpath.read_bytes().decode("utf-8")
        keys = text.count("path:") + text.count('"path"')  # one per entry (YAML or JSON): checked before the
        if keys > cap:  # parse, which takes tens of seconds per 100,000 entries
            raise SnapshotError(f"{mpath}: lists about {keys:,} files, over the cap of {cap:,} "
                                "(inputs.max_manifest_entries, WARDEN_INPUT_MAX_MANIFEST_ENTRIES)")
        raw = _load_text(text)
    except UnicodeDecodeError as e:
        raise SnapshotError(f"{mpath}: not UTF-8 ({e.reason} at byte {e.start})") from None
    except yaml.YAMLError as e:
        raise SnapshotError(f"{mpath}: invalid YAML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise SnapshotError(f"{mpath}: nested too deeply to read") from None
    except ValueError as e:  # e.g. an integer of thousands of digits
        raise SnapshotError(f"{mpath}: {' '.join(str(e).split())[:200]}") from None
    if not isinstance(raw, dict):
        raise SnapshotError(f"{mpath}: expected a mapping with captured_at and files")
    if isinstance(raw.get("files"), list) and len(raw["files"]) > cap:
        raise SnapshotError(f"{mpath}: lists {len(raw['files']):,} files, over the cap of {cap:,} "
                            "(inputs.max_manifest_entries, WARDEN_INPUT_MAX_MANIFEST_ENTRIES)")
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as e:
        raise SnapshotError(f"{mpath}: {_first_error(e)}") from None
    _check_files(snapshot_dir, manifest, mpath, allow_absent=allow_absent)
    return manifest


def _load_text(text: str) -> Any:
    """YAML through libyaml when PyYAML has it; a manifest written as JSON (which is YAML, as large
    generated snapshots write it) through the JSON parser, tens of times faster on 20,000 entries.

    Raises:
        yaml.YAMLError: neither JSON nor valid YAML.
        ValueError: a value the parsers refuse (an integer of more than 4,300 digits).
        RecursionError: nesting deeper than the parser's stack.
    """
    if text.lstrip().startswith("{"):
        from tools.parsers.base import json_loads

        try:
            return json_loads(text)
        except json.JSONDecodeError:
            pass  # YAML flow style that is not JSON
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _files(root: Path) -> dict[str, os.DirEntry[str]]:
    """Every entry under ``root`` that is not a directory, by path relative to it (one scandir per directory)."""
    out: dict[str, os.DirEntry[str]] = {}
    stack = [("", str(root))]
    while stack:
        prefix, directory = stack.pop()
        with os.scandir(directory) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append((prefix + e.name + "/", e.path))
                else:
                    out[prefix + e.name] = e
    return out


def _inside(rel: str) -> bool:
    """A manifest path as DESIGN.md allows it: relative, no ``..`` component, no NUL."""
    return bool(rel) and not rel.startswith("/") and "\0" not in rel and ".." not in rel.split("/")


def _check_files(snapshot_dir: Path, manifest: Manifest, mpath: Path, *, allow_absent: bool) -> None:
    """Every listed path is relative and stays inside the snapshot (symlinks resolved), names a
    regular file (or is absent, with ``allow_absent``), is listed once, and every file there is listed.

    Raises:
        SnapshotError: naming the manifest, the entry's index and its path.
    """
    root = snapshot_dir.resolve()
    present = _files(root)
    listed: dict[str, int] = {}
    """Each listed file (symlinks resolved) and the entry that lists it."""
    named: set[str] = set()
    """The paths as written (a listed symlink covers itself and its target)."""
    for i, entry in enumerate(manifest.files):
        where = f"{mpath}: files.{i}: {entry.path!r}"
        if not _inside(entry.path):
            raise SnapshotError(f"{where}: paths must be relative, inside the snapshot, without '..'")
        rel = os.path.normpath(entry.path)
        named.add(rel)
        e = present.get(rel)
        if e is not None and e.is_file(follow_symlinks=False):
            pass  # a plain file inside the snapshot: the common case, no syscalls
        else:
            p = (snapshot_dir / entry.path).resolve()  # a symlink (or an absent file): the careful way
            if root not in p.parents:
                raise SnapshotError(f"{where}: is outside the snapshot (a symlink to {p})")
            if p.exists() and not p.is_file():
                raise SnapshotError(f"{where}: is not a regular file")
            if not p.exists() and not allow_absent:
                raise SnapshotError(f"{mpath}: listed file {entry.path!r} is absent")
            rel = str(p.relative_to(root))
        if rel in listed:  # each entry's evidence is counted: a repeated file would count it again
            raise SnapshotError(f"{where}: the same file as files.{listed[rel]} (each file is listed once)")
        listed[rel] = i
    for rel in sorted(present):
        e = present[rel]
        if e.name != MANIFEST_NAME and not e.name.startswith(".") and e.is_file() and rel not in listed \
                and rel not in named:
            raise SnapshotError(f"{mpath}: file {rel!r} is in the snapshot but not listed")
