"""ReadContext: what every read tool receives — a source of artifacts and the facts parsed once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from tools.checks import run_checks
from tools.errors import SnapshotError
from tools.facts import Facts, build_facts
from tools.models.findings import Finding
from tools.models.unreadable import Unreadable
from tools.sources.base import RawArtifact
from tools.sources.snapshot import SnapshotSource

__all__ = ["ReadContext", "ProgressFn"]

ProgressFn = Callable[[str], None]
"""Called with a short description each time an artifact is fetched/parsed (for CLI progress)."""


class ReadContext:
    """Lazily collects and parses evidence once; every read tool and check shares the result.

    Evidence that cannot be read (a file that does not parse or is absent, a fetch that fails, a check
    that raises) is recorded in ``facts.unreadable`` and the rest is still used; with ``strict`` the
    first such file raises instead (the behaviour CI pipelines that want exit 2 ask for).

    Args:
        collect: yields raw artifacts (from a snapshot, or fetched live).
        captured_at: "now" for time computations (a snapshot's capture time during replay).
        cluster: cluster name, if known.
        on_progress: optional progress callback.
        checks: site check overrides (see tools.checks.run_checks).
        unreadable: called once after collection for evidence the source already knows it could not read
            (absent files, failed live fetches).
        strict: raise on the first unreadable file instead of recording it.
    """

    def __init__(self, collect: Callable[[], Iterable[RawArtifact]], *, captured_at: datetime | None = None,
                 cluster: str | None = None, on_progress: ProgressFn | None = None,
                 checks: list[Mapping[str, Any]] | None = None,
                 unreadable: Callable[[], Iterable[Unreadable]] | None = None, strict: bool = False) -> None:
        self._collect = collect
        self.checks = checks
        """Site check overrides (``[[checks]]`` of warden.toml) that get_findings and diagnose apply."""
        self._captured_at = captured_at
        self._cluster = cluster
        self._unreadable = unreadable
        self.strict = strict
        self._facts: Facts | None = None
        self._findings: list[Finding] | None = None
        # A model's tool calls of one turn run in parallel threads, and each may be the first to ask for
        # the facts or the findings: without a lock each would parse the snapshot / run every check itself
        # (the built-in model's first turn asks for findings six times: six runs of every check at 10,000 nodes).
        self._facts_lock = threading.Lock()
        self._findings_lock = threading.Lock()
        self.on_progress = on_progress
        self.stop_reading: Callable[[], str | None] | None = None
        """Asked by the source before each snapshot file is read (each is parsed as soon as it is read)
        and before a live collection's second phase; a reason (the run's wall-time limit, set by the
        agent) stops there: what was read so far is used, the rest is ``Unreadable(kind="time")``."""

    @classmethod
    def from_snapshot(cls, root: Path, *, on_progress: ProgressFn | None = None,
                      checks: list[Mapping[str, Any]] | None = None, strict: bool = False) -> ReadContext:
        """Replay a snapshot directory (DESIGN.md snapshot format).

        A listed file that is absent or unreadable is recorded as unreadable evidence (with ``strict``
        it is an error).

        Raises:
            SnapshotError: the manifest is invalid (or, with ``strict``, lists an absent file).
        """
        src = SnapshotSource(root, allow_absent=not strict)
        missing: list[Unreadable] = []

        def collect() -> Iterable[RawArtifact]:
            entries = src.entries()
            last = 0.0
            for i, entry in enumerate(entries):
                why = ctx.stop_reading() if ctx.stop_reading is not None else None
                if why:  # the run's time is up: the rest is listed, not read
                    missing.extend(Unreadable(kind="time", path=e.path, format=e.format, node=e.node, job=e.job,
                                              reason=why) for e in entries[i:])
                    break
                # At most ten progress lines a second: a 10,000-node snapshot has 20,000 files.
                now = time.monotonic()
                if ctx.on_progress and (now - last >= 0.1 or i + 1 == len(entries)):
                    last = now
                    ctx.on_progress(f"reading {entry.path} ({entry.format}) [{i + 1}/{len(entries)}]")
                try:
                    art, cut = src.read_bounded(entry)
                    if cut:  # read in part (tools/limits.py): what was left out is evidence too
                        missing.append(Unreadable(kind="cut", path=entry.path, format=entry.format, node=entry.node,
                                                  job=entry.job, reason=cut))
                    yield art
                except SnapshotError as e:
                    if strict:
                        raise
                    missing.append(Unreadable(kind="file", path=entry.path, format=entry.format, node=entry.node,
                                              job=entry.job, reason=str(e)))

        ctx = cls(collect, captured_at=src.manifest.captured_at, cluster=src.manifest.cluster.name,
                  on_progress=on_progress, checks=checks if checks is not None else (src.manifest.checks or None),
                  unreadable=lambda: missing, strict=strict)
        return ctx

    @property
    def findings(self) -> list[Finding]:
        """Every check's findings over these facts with the site's overrides, most confident first;
        computed once (a run asks for findings several times: per named culprit, then for the Diagnosis).
        A check that raised is recorded in ``facts.unreadable`` (kind ``check``).

        Raises:
            ConfigError: a site check override is invalid.
        """
        if self._findings is None:
            with self._findings_lock:
                if self._findings is None:
                    run = run_checks(self.facts, self.checks)
                    self.facts.unreadable.extend(run.failed)
                    self._findings = run.findings
        return self._findings

    @property
    def facts(self) -> Facts:
        """The parsed facts; collected and parsed on first use.

        Raises:
            ParseError / UnknownFormatError / SnapshotError: only with ``strict``, from the first artifact
                that fails; SourceError when the source itself cannot be used.
        """
        if self._facts is None:
            with self._facts_lock:
                if self._facts is None:
                    # each file parsed as soon as it is read; what the source could not read is known after
                    facts = build_facts(self._collect(), captured_at=self._captured_at, cluster=self._cluster,
                                        strict=self.strict)
                    known = list(self._unreadable()) if self._unreadable else []
                    facts.unreadable[:0] = known
                    self._facts = facts
        return self._facts
