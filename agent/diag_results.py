"""GPU diagnostic results kept as evidence: what `dcgmi diag -j` printed for a node, fed to the next
live collections as a ``dcgmi-diag-json`` artifact.

After ``run_gpu_diagnostic`` executes, its JSON is saved as ``<dir>/<node>.json`` (default
``$WARDEN_HOME/diagnostics``) next to a small ``<node>.meta.json`` (command, time). A live
collection adds each result younger than ``max_age_h`` as ``gpu/dcgmi-diag-<node>.json`` (format
``dcgmi-diag-json``, the node named), so the result is parsed with the rest of the evidence, recorded
by ``warden record`` and replayed byte for byte.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tools.live.plan import safe_name
from tools.sources.base import RawArtifact

__all__ = ["save_result", "result_artifacts"]


def save_result(directory: Path, node: str, raw_json: str, command: list[str], *, now: datetime | None = None) -> Path:
    """Write one node's latest diagnostic output (replacing the previous one); return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    name = safe_name(node)
    path = directory / f"{name}.json"
    path.write_text(raw_json, encoding="utf-8")
    meta = {"node": node, "command": " ".join(command),
            "captured_at": (now or datetime.now(timezone.utc)).isoformat()}
    (directory / f"{name}.meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return path


def result_artifacts(directory: Path, *, now: datetime, max_age_h: float = 24.0) -> list[RawArtifact]:
    """The saved results younger than ``max_age_h``, as artifacts (unreadable metadata is skipped)."""
    out: list[RawArtifact] = []
    if not directory.is_dir():
        return out
    for meta_path in sorted(directory.glob("*.meta.json")):
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            when = datetime.fromisoformat(meta["captured_at"])
            data = meta_path.with_name(meta_path.name.replace(".meta.json", ".json")).read_bytes()
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if now - when > timedelta(hours=max_age_h):
            continue
        node = str(meta["node"])
        out.append(RawArtifact(format="dcgmi-diag-json", data=data, path=f"gpu/dcgmi-diag-{safe_name(node)}.json",
                               node=node, command=str(meta.get("command") or "dcgmi diag -j"), captured_at=when))
    return out
