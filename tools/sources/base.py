"""The one interface every source implements: fetch a raw artifact.

A read tool asks for an artifact by *what* it is (a format id plus the command, URL, node or job it
covers); the source decides *how*: run a local command, run it over SSH, GET a URL, call the
Kubernetes API, or serve the recorded bytes of a snapshot. Read tools never know which.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from tools.models.ids import FormatId

__all__ = ["FetchRequest", "RawArtifact", "Source"]


class FetchRequest(BaseModel):
    """What to fetch.

    For commands, ``argv`` is an argument list (never a shell string). For HTTP, ``url``. For a
    snapshot, the manifest entry is matched on ``path`` when given, else on format + node + job.
    """

    format: FormatId
    argv: list[str] | None = None
    url: str | None = None
    path: str | None = None
    node: str | None = None
    job: str | None = None
    timeout_s: float = 30.0


class RawArtifact(BaseModel):
    """Raw bytes exactly as the cluster printed them, and where they came from."""

    format: FormatId
    data: bytes
    path: str
    """Snapshot-relative path, or a display name for a live fetch (the command or URL)."""
    command: str | None = None
    url: str | None = None
    node: str | None = None
    job: str | None = None
    columns: str | None = None
    """Non-default column layout of a text format (e.g. ``%i %P %j``), if any."""
    captured_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))


@runtime_checkable
class Source(Protocol):
    """Anything that can fetch raw artifacts."""

    name: str

    def fetch(self, req: FetchRequest) -> RawArtifact:
        """Fetch one artifact.

        Raises:
            SourceError: (CommandError, HTTPSourceError) when the fetch fails;
            SnapshotError: when a snapshot has no such artifact.
        """
        ...
