"""The evidence on one clock: kernel lines, job-log lines and scheduler events, oldest first.

Sources, all already parsed (nothing here reads a file):

- the Diagnosis' evidence and its findings' evidence, with ``Evidence.at`` as agent/evidence_time.py
  stamped it from the cited line's own timestamp (a model's time is never used);
- the culprits' other timed log lines, a few per kind (the first and the last two): a job's last
  checkpoint and progress lines, a node's other warning-or-worse kernel events, none older than an
  hour before the first cited event;
- scheduler events of the culprits: each culprit job's submit, start and end (queue or accounting),
  each culprit node's drain/down reason time (``scontrol show node`` / ``sinfo -R``);
- Kubernetes events about culprit nodes and pods.

The lane of a piece of evidence comes from where it was read (``kernel/…`` or a kernel event: kernel;
``logs/…``: job log; ``k8s/…``: Kubernetes). At most :data:`MAX_ENTRIES` entries are kept (the cited
evidence first), so a fleet-wide incident stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal

from tools.facts import Facts
from tools.facts.queries import kernel_event_time
from tools.models.findings import Diagnosis, Evidence

__all__ = ["Lane", "LANES", "TimelineEntry", "build_timeline", "MAX_ENTRIES"]

Lane = Literal["kernel", "job log", "scheduler", "kubernetes", "other"]
LANES: tuple[Lane, ...] = ("kernel", "job log", "scheduler", "kubernetes", "other")
MAX_ENTRIES = 200
"""Entries a timeline keeps; the rest are counted in the report, not drawn."""


@dataclass(frozen=True)
class TimelineEntry:
    """One event on the timeline (``text`` is raw cluster text: escape it where it is shown)."""

    at: datetime
    """UTC."""
    lane: Lane
    where: str
    """``kernel/gpu007.log:27``, ``job 73412``, ``node gpu007``."""
    text: str
    cited: bool
    """True for evidence the Diagnosis itself cites (its root cause), False for other findings and events."""


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def _lane(e: Evidence) -> Lane:
    f = e.file or ""
    if f.startswith("kernel/") or "/kernel/" in f:
        return "kernel"
    if f.startswith("logs/") or "/logs/" in f:
        return "job log"
    if f.startswith("k8s/"):
        return "kubernetes"
    if f.startswith("slurm/"):
        return "scheduler"
    return "other"


def _evidence_entries(d: Diagnosis) -> list[TimelineEntry]:
    out: list[TimelineEntry] = []
    seen: set[tuple[str | None, int | None, str]] = set()
    groups = [(d.evidence, True)] + [(f.evidence, f.root_cause == d.root_cause) for f in d.findings]
    for evidence, cited in groups:
        for e in evidence:
            key = (e.file, e.line, e.text)
            if e.at is None or key in seen:
                continue
            seen.add(key)
            where = f"{e.file}:{e.line}" if e.file and e.line else (e.file or e.metric or "")
            out.append(TimelineEntry(at=_utc(e.at), lane=_lane(e), where=where, text=e.text, cited=cited))
    return out


def _culprits(d: Diagnosis, kind: str) -> list[str]:
    return [c.split(":", 1)[1] for c in d.culprits if c.startswith(kind + ":")]


def _scheduler_entries(d: Diagnosis, facts: Facts) -> list[TimelineEntry]:
    out: list[TimelineEntry] = []
    for job_id in _culprits(d, "job"):
        job, acct = facts.job(job_id), facts.acct_job(job_id)
        for what in ("submit_time", "start_time", "end_time"):
            t = getattr(job, what, None) if job else None
            t = t or (getattr(acct, what, None) if acct else None)
            if t is not None:
                state = (job.state if job else None) or (acct.state if acct else None) or ""
                label = {"submit_time": "submitted", "start_time": "started",
                         "end_time": f"ended ({state})" if state else "ended"}[what]
                out.append(TimelineEntry(at=_utc(t), lane="scheduler", where=f"job {job_id}",
                                         text=f"job {job_id} {label}", cited=True))
    for name in _culprits(d, "node"):
        node = facts.node(name)
        if node is not None and node.reason and node.reason_time:
            out.append(TimelineEntry(at=_utc(node.reason_time), lane="scheduler", where=f"node {name}",
                                     text=f"{name} {node.state or ''}: {node.reason}".strip(), cited=True))
        for r in facts.node_reasons:
            if name in r.nodes and r.timestamp and not (node and node.reason_time == r.timestamp):
                out.append(TimelineEntry(at=_utc(r.timestamp), lane="scheduler", where=f"node {name}",
                                         text=f"{name}: {r.reason}", cited=True))
    for kind in ("k8snode", "pod"):
        for name in _culprits(d, kind):
            obj = name.split("/", 1)[-1]
            for ev in facts.events_about("Node" if kind == "k8snode" else "Pod", obj):
                t = ev.last_timestamp or ev.first_timestamp
                if t is not None:
                    out.append(TimelineEntry(at=_utc(t), lane="kubernetes", where=f"{ev.object_kind} {obj}",
                                             text=f"{ev.reason or ev.type or ''}: {ev.message}", cited=True))
    return out


_QUIET = ("notice", "info", "debug")
WINDOW_BEFORE = timedelta(hours=1)
"""Other (uncited) entries older than the earliest cited one by more than this are left out."""
_PER_KIND = 3
"""Log lines kept per culprit and event kind beyond the cited ones: the first and the last two."""


def _few(items: list[TimelineEntry]) -> list[TimelineEntry]:
    items.sort(key=lambda e: e.at)
    return items if len(items) <= _PER_KIND else [items[0], *items[-(_PER_KIND - 1):]]


def _log_entries(d: Diagnosis, facts: Facts) -> list[TimelineEntry]:
    out: list[TimelineEntry] = []
    for job_id in _culprits(d, "job"):
        by_kind: dict[str, list[TimelineEntry]] = {}
        for ev in facts.job_events(job_id):
            if ev.timestamp is not None:
                by_kind.setdefault(ev.kind, []).append(TimelineEntry(
                    at=_utc(ev.timestamp), lane="job log", where=f"{ev.file}:{ev.line}", text=ev.message, cited=False))
        out += [e for group in by_kind.values() for e in _few(group)]
    for name in _culprits(d, "node"):
        by_kind = {}
        for kev in facts.kernel_events_on(name):
            if kev.severity in _QUIET:
                continue  # boot chatter (cables plugged, links up) is no evidence
            t = kernel_event_time(facts, kev)
            if t is not None:
                by_kind.setdefault(kev.kind, []).append(TimelineEntry(
                    at=_utc(t), lane="kernel", where=f"{kev.file}:{kev.line}", text=kev.message, cited=False))
        out += [e for group in by_kind.values() for e in _few(group)]
    return out


def build_timeline(d: Diagnosis, facts: Facts | None) -> tuple[list[TimelineEntry], int]:
    """The timeline of ``d`` (oldest first) and how many entries were left out past :data:`MAX_ENTRIES`.

    Args:
        d: the Diagnosis (its evidence carries ``at``).
        facts: the parsed evidence of the same run, for the scheduler events; None when it is not
            at hand (a live run read back from the run store): then only the cited evidence.
    """
    entries = _evidence_entries(d)
    if facts is not None:
        entries += _scheduler_entries(d, facts) + _log_entries(d, facts)
    kept_by: dict[tuple[object, ...], TimelineEntry] = {}
    for e in entries:  # a line cited by the Diagnosis and also listed among the logs is one entry, cited
        key: tuple[object, ...] = (e.where,) if ":" in e.where else (e.at, e.lane, e.where, e.text)
        if key not in kept_by or (e.cited and not kept_by[key].cited):
            kept_by[key] = e
    unique = list(kept_by.values())
    cited = [e.at for e in unique if e.cited]
    if cited:  # the story starts at the first cited event: a boot a month earlier would flatten the axis
        start = min(cited) - WINDOW_BEFORE
        unique = [e for e in unique if e.cited or e.at >= start]
    unique.sort(key=lambda e: (not e.cited, e.at))  # cited first when cutting
    kept = unique[:MAX_ENTRIES]
    kept.sort(key=lambda e: (e.at, LANES.index(e.lane), e.where))
    return kept, len(unique) - len(kept)
