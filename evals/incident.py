"""The incident format (DESIGN.md "Incidents"): incident.yaml plus a snapshot/ directory."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tools.errors import SnapshotError
from tools.models.findings import ActionSpec
from tools.models.ids import RootCause

__all__ = ["Expected", "Incident", "load_incident", "find_incidents", "INCIDENT_FILE"]

INCIDENT_FILE = "incident.yaml"


class Expected(BaseModel):
    """What a good on-call engineer concludes; ``forbidden`` actions fail a case when proposed."""

    model_config = ConfigDict(extra="ignore")

    root_cause: RootCause
    culprits: list[str] = Field(default_factory=list)
    actions: list[ActionSpec] = Field(default_factory=list)
    forbidden: list[ActionSpec] = Field(default_factory=list)


class Incident(BaseModel):
    """One recorded incident; unknown keys are ignored so the format can grow."""

    model_config = ConfigDict(extra="ignore")

    id: str
    title: str
    kind: Literal["slurm", "kubernetes"] = "slurm"
    captured_at: datetime | None = None
    question: str
    expected: Expected
    tags: list[str] = Field(default_factory=list)
    source: str | None = None
    path: Path | None = None
    """The incident directory (set by load_incident)."""

    @property
    def snapshot(self) -> Path:
        """The incident's snapshot directory."""
        assert self.path is not None
        return self.path / "snapshot"


def load_incident(path: Path) -> Incident:
    """Read ``<path>/incident.yaml``.

    Raises:
        SnapshotError: missing or invalid incident.yaml (names the file and field), or no snapshot/.
    """
    f = Path(path) / INCIDENT_FILE
    try:
        raw = yaml.safe_load(f.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise SnapshotError(f"{f}: no incident.yaml") from None
    except UnicodeDecodeError as e:
        raise SnapshotError(f"{f}: not UTF-8 (byte offset {e.start})") from None
    except yaml.YAMLError as e:
        raise SnapshotError(f"{f}: invalid YAML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise SnapshotError(f"{f}: nested too deeply to read") from None
    except ValueError as e:  # e.g. an integer of thousands of digits
        raise SnapshotError(f"{f}: {' '.join(str(e).split())[:200]}") from None
    if not isinstance(raw, dict):
        raise SnapshotError(f"{f}: expected a mapping")
    try:
        inc = Incident.model_validate({**raw, "path": Path(path)})
    except ValidationError as e:
        err = e.errors()[0]
        raise SnapshotError(f"{f}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    if not inc.snapshot.is_dir():
        raise SnapshotError(f"{f}: no snapshot/ directory beside it")
    return inc


def find_incidents(root: Path) -> list[Path]:
    """Incident directories under ``root`` (any depth), sorted; ``root`` itself if it is one."""
    root = Path(root)
    if (root / INCIDENT_FILE).is_file():
        return [root]
    return sorted(p.parent for p in root.rglob(INCIDENT_FILE))
