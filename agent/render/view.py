"""A Diagnosis as what a reader needs first: headline, evidence with times and openable paths, fixes.

Every front end (the terminal, Markdown, a chat session, Slack Block Kit) draws the same
:class:`DiagnosisView`, so the order and the wording are decided once here:

    headline   root cause: culprits · confidence · GPU-hours lost   (one line)
    summary    the question and the diagnostician's explanation
    evidence   time (UTC), where (a path that opens from the current directory, or a metric), what
    fixes      each proposed plan: what it does, how reversible, its commands shell-quoted
    unread     evidence that could not be read

All text taken from the Diagnosis (cluster text, the question, a model's summary) is passed through
:func:`agent.render.safe.clean`, and commands through :func:`agent.render.safe.shell_command`, before
it lands in the view: a renderer never sees raw cluster text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from agent.render.safe import clean, clean_line, shell_command
from tools.models.findings import Diagnosis, Evidence

MAX_SIGNALS = 5
MAX_TIMED = 5
"""Files left unread by the time limit listed one per line; the rest as a count."""

__all__ = ["DiagnosisView", "EvidenceLine", "SignalLine", "PlanView", "MAX_SIGNALS", "build_view", "evidence_root", "fit_culprits", "when_text"]


@dataclass(frozen=True)
class EvidenceLine:
    """One piece of evidence, ready to show."""

    when: str | None
    """``2026-03-04 09:51:58Z`` (UTC) when the line carried a timestamp."""
    where: str | None
    """``path:line`` relative to the current directory when the file exists there; else as recorded
    (snapshot-relative path, command or metric name)."""
    text: str


@dataclass(frozen=True)
class SignalLine:
    """Another check's finding, read as a symptom or a lesser cause, with its first piece of evidence."""

    root_cause: str
    confidence: float
    message: str
    first: EvidenceLine | None = None


@dataclass(frozen=True)
class PlanView:
    """One proposed action, ready to show."""

    number: int
    title: str
    reversibility: str
    commands: list[str]
    """Each command as one bash line (shell-quoted); empty when the action could not be planned."""
    plan_hash: str
    error: str | None = None


@dataclass(frozen=True)
class DiagnosisView:
    """What every front end draws for a Diagnosis (all strings already cleaned)."""

    root_cause: str
    culprits: list[str]
    confidence: float
    gpu_hours_lost: float
    question: str
    summary: str
    partial: str | None = None
    """Why the run stopped early (a loop limit, a model failure), when it did."""
    evidence: list[EvidenceLine] = field(default_factory=list)
    signals: list[SignalLine] = field(default_factory=list)
    """Other findings (at most :data:`MAX_SIGNALS`), strongest first: with the evidence's times they
    tell the order of events (the Xid at 09:21, the NCCL watchdog 30 minutes later)."""
    plans: list[PlanView] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    """``where: why`` for each piece of evidence that could not be read."""
    run_id: str | None = None
    model: str = ""

    def headline(self, culprits: list[str] | None = None) -> str:
        """``root_cause: culprits · confidence 0.99 · 32.6 GPU-h lost`` (culprits as given, or all)."""
        shown = self.culprits if culprits is None else culprits
        head = f"{self.root_cause}: {', '.join(shown)}" if shown else self.root_cause
        parts = [head, f"confidence {self.confidence:.2f}"]
        if self.gpu_hours_lost:
            parts.append(f"{self.gpu_hours_lost:g} GPU-h lost")
        if self.partial:
            parts.append("partial")
        return " · ".join(parts)


def fit_culprits(view: DiagnosisView, width: int) -> list[str]:
    """The culprits that fit a headline of ``width`` columns, the rest summed up as ``+N more``."""
    if len(view.headline()) <= width:
        return list(view.culprits)
    for keep in range(len(view.culprits) - 1, 0, -1):
        shown = view.culprits[:keep] + [f"+{len(view.culprits) - keep} more"]
        if len(view.headline(shown)) <= width:
            return shown
    return [f"{len(view.culprits)} culprits"] if view.culprits else []


def when_text(at: datetime | None) -> str | None:
    """``2026-03-04 09:51:58Z`` for a UTC time (None stays None)."""
    return at.strftime("%Y-%m-%d %H:%M:%SZ") if at is not None else None


def evidence_root(target: str | Path | None) -> Path | None:
    """The snapshot directory of an incident or snapshot path (where evidence ``file`` s are relative to)."""
    if target is None or str(target) == "":
        return None
    p = Path(target)
    for cand in (p, p / "snapshot"):
        if (cand / "manifest.yaml").is_file():
            return cand
    return None


def _where(e: Evidence, root: Path | None, cwd: Path) -> str | None:
    if e.file:
        path = e.file
        if root is not None and (root / e.file).exists():
            full = (root / e.file).resolve()
            try:
                rel = os.path.relpath(full, cwd)
            except ValueError:  # another drive (Windows)
                rel = str(full)
            path = rel if not rel.startswith("../../..") else str(full)
        return clean_line(f"{path}:{e.line}" if e.line else path)
    if e.metric:
        return clean_line(e.metric)
    return None


def build_view(d: Diagnosis, *, root: Path | None = None, cwd: Path | None = None) -> DiagnosisView:
    """The view of ``d``; ``root`` is the snapshot directory the evidence files are relative to.

    Args:
        d: the Diagnosis (from a run, or from the run store).
        root: snapshot directory (see :func:`evidence_root`); None for live runs or unknown.
        cwd: the directory paths are made relative to (default: the process's current directory).
    """
    here = (cwd or Path.cwd()).resolve()
    def line(e: Evidence) -> EvidenceLine:
        return EvidenceLine(when=when_text(e.at), where=_where(e, root, here), text=clean_line(e.text))

    evidence = [line(e) for e in d.evidence]
    others = sorted((f for f in d.findings if f.root_cause != d.root_cause), key=lambda f: -f.confidence)
    signals = [SignalLine(root_cause=f.root_cause, confidence=f.confidence, message=clean_line(f.message),
                          first=line(f.evidence[0]) if f.evidence else None) for f in others[:MAX_SIGNALS]]
    plans = [PlanView(number=i, title=clean_line(a.description), reversibility=a.reversibility,
                      commands=[shell_command(argv) for argv in a.commands], plan_hash=a.plan_hash,
                      error=clean_line(a.error) if a.error else None)
             for i, a in enumerate(d.proposed_actions, 1)]
    unread = [clean_line(f"{u.where()}: {u.reason}") for u in d.unreadable if u.kind != "time"]
    timed = [u for u in d.unreadable if u.kind == "time"]  # a stopped run may leave 20,000 of these
    unread += [clean_line(f"{u.where()}: {u.reason}") for u in timed[:MAX_TIMED]]
    if len(timed) > MAX_TIMED:
        unread.append(f"... and {len(timed) - MAX_TIMED:,} more not read before the run's time limit "
                      "(all listed in --output json)")
    return DiagnosisView(root_cause=d.root_cause, culprits=[clean_line(c) for c in d.culprits],
                         confidence=d.confidence, gpu_hours_lost=d.gpu_hours_lost, question=clean(d.question),
                         summary=clean(d.summary), partial=clean_line(d.stopped_by) if d.stopped_by else None,
                         evidence=evidence, signals=signals, plans=plans, unreadable=unread, run_id=d.run_id, model=d.model)
