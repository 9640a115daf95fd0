"""When each piece of evidence was logged: ``Evidence.at`` from the parsed events, never from a model.

Evidence cites a file and line (``kernel/gpu007.log:27``); the parsers already read that line's own
timestamp into the typed event (``KernelEvent.timestamp`` as printed, ``JobLogEvent.timestamp``,
``K8sEvent.last_timestamp``). This module looks the cited line up among the facts and copies the time
across, so that the Xid in the kernel log and the NCCL watchdog in the job log can be read on one
clock. Evidence whose line is not a parsed event keeps ``at = None``; an ``at`` a model wrote is
dropped, since a model's output is not evidence of when something happened.
"""

from __future__ import annotations

from datetime import datetime, timezone

from tools.facts.queries import kernel_event_time
from tools.facts import Facts
from tools.models.findings import Evidence, Finding

__all__ = ["stamp_evidence", "stamp_findings"]


def _utc(when: datetime | None) -> datetime | None:
    if when is None:
        return None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def _time_of(facts: Facts, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], datetime | None]:
    """The parsed time of each wanted (file, line), looking only at events on those lines."""
    times: dict[tuple[str, int], datetime | None] = {}
    for kev in facts.kernel_events:
        key = (kev.file, kev.line)
        if key in wanted and times.get(key) is None:
            times[key] = _utc(kernel_event_time(facts, kev))
    for jev in facts.job_log_events:
        key = (jev.file, jev.line)
        if key in wanted and times.get(key) is None:
            times[key] = _utc(jev.timestamp)
    for k8s in facts.k8s_events:
        key = (k8s.file or "", k8s.line or 0)
        if key in wanted and times.get(key) is None:
            times[key] = _utc(k8s.last_timestamp or k8s.first_timestamp)
    return times


def _stamped(evidence: list[Evidence], times: dict[tuple[str, int], datetime | None]) -> list[Evidence]:
    return [e.model_copy(update={"at": times.get((e.file, e.line)) if e.file and e.line else None})
            for e in evidence]


def _wanted(evidence: list[Evidence]) -> set[tuple[str, int]]:
    return {(e.file, e.line) for e in evidence if e.file and e.line}


def stamp_evidence(evidence: list[Evidence], facts: Facts) -> list[Evidence]:
    """Copies of ``evidence`` with ``at`` set from the cited line's parsed timestamp (UTC), else None.

    Args:
        evidence: as a check or a model cited it (``file`` snapshot-relative, ``line`` 1-based).
        facts: the parsed evidence of the same run.

    Returns:
        The same items in the same order; only ``at`` differs.
    """
    wanted = _wanted(evidence)
    return _stamped(evidence, _time_of(facts, wanted) if wanted else {})


def stamp_findings(findings: list[Finding], facts: Facts) -> list[Finding]:
    """Copies of ``findings`` whose evidence carries ``at`` (see :func:`stamp_evidence`); one pass over the facts."""
    wanted = _wanted([e for f in findings for e in f.evidence])
    times = _time_of(facts, wanted) if wanted else {}
    return [f.model_copy(update={"evidence": _stamped(f.evidence, times)}) if f.evidence else f for f in findings]
