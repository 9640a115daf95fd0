"""Evidence that could not be read: a typed record instead of an abort (DESIGN.md "partial evidence")."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

__all__ = ["Unreadable", "UnreadableKind"]

UnreadableKind = Literal["file", "fetch", "check", "cut", "time"]
"""``file``: a recorded file failed to parse or was absent; ``fetch``: a live command or URL failed;
``check``: a check raised on these facts; ``cut``: a file was read only in part (size or line cap);
``time``: the run's time limit was reached before the file was read or parsed."""


class Unreadable(BaseModel):
    """One piece of evidence Warden tried to read and could not (or read only in part).

    Exactly one of ``path`` (snapshot-relative file), ``command`` (argv as shown, or URL) or
    ``check`` (check id) names what it was; ``reason`` says why in one line.
    """

    kind: UnreadableKind
    reason: str
    path: str | None = None
    command: str | None = None
    check: str | None = None
    format: str | None = None
    """The format id the file or fetch was expected to have."""
    node: str | None = None
    job: str | None = None

    def where(self) -> str:
        """What it was, for one line of output: the path, the command or ``check <id>``."""
        return self.path or self.command or (f"check {self.check}" if self.check else self.format or "?")
