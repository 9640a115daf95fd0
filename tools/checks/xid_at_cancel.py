"""check_xid_at_cancel: application-class Xids logged the moment a job was cancelled or ended.

When a job is cancelled (scancel, a time limit, preemption), its processes are killed while their CUDA
contexts are live; the driver then tears their channels down and commonly logs Xid 43 ("GPU stopped
processing") or 45 ("preemptive cleanup") for every GPU the job held, within a second or two. NVIDIA's
catalogue files these under RESTART_APP: the program's end, not the GPU. A burst of them at a job's end is
an echo, and an alert on it (DCGM_FI_DEV_XID_ERRORS) is explained — as long as no hardware Xid is there.
"""

from __future__ import annotations

from datetime import timedelta

from tools.checks.base import CheckConfig, kernel_evidence
from tools.facts import Facts
from tools.facts.queries import kernel_event_time
from tools.knowledge.xid import xid_class
from tools.models.findings import Finding
from tools.models.logs import XidEvent

__all__ = ["XidAtCancelConfig", "check_xid_at_cancel", "ECHO_XIDS"]

ECHO_XIDS = frozenset({43, 45})
"""Xids the driver logs when a killed process's channels are stopped and cleaned up."""


class XidAtCancelConfig(CheckConfig):
    """How close to the job's end the Xids must be."""

    before_s: float = 5.0
    """Xids up to this long before the recorded end (the kill precedes the accounting end)."""
    after_s: float = 30.0
    """... and up to this long after it (teardown of many GPUs)."""


def check_xid_at_cancel(facts: Facts, cfg: XidAtCancelConfig) -> list[Finding]:
    """One ``healthy`` finding per node whose only Xids are 43/45 logged within seconds of the end of a job
    that accounting records as CANCELLED (or TIMEOUT / PREEMPTED: killed from outside) on that node.

    Sources: kernel-log Xid lines with their times (dmesg -T, journalctl, syslog); sacct End and NodeList.
    """
    findings: list[Finding] = []
    for node in sorted({e.node for e in facts.kernel_events_of("xid") if e.node}):
        xids = [e for e in facts.kernel_events_on(node) if isinstance(e, XidEvent)]
        if not xids or any(e.xid not in ECHO_XIDS or xid_class(e.xid) != "application" for e in xids):
            continue
        ends = [(r, r.end_time) for r in facts.acct_on_node(node) if r.end_time is not None
                and (r.state or "").startswith(("CANCELLED", "TIMEOUT", "PREEMPTED"))]
        times = [kernel_event_time(facts, e) for e in xids]
        if not ends or any(t is None for t in times):
            continue
        matched = {r.job_id for t in times for r, end in ends
                   if end - timedelta(seconds=cfg.before_s) <= t <= end + timedelta(seconds=cfg.after_s)}  # type: ignore[operator]
        if not matched or not all(any(end - timedelta(seconds=cfg.before_s) <= t <= end + timedelta(seconds=cfg.after_s)
                                       for _, end in ends) for t in times):  # type: ignore[operator]
            continue
        jobs = ", ".join(sorted(matched))
        states = sorted({(r.state or "").split(" ")[0] for r, _ in ends if r.job_id in matched})
        findings.append(Finding(
            check="xid_at_cancel", root_cause="healthy",
            message=f"{len(xids)} Xid {'/'.join(str(x) for x in sorted({e.xid for e in xids}))} line(s) on {node} "
                    f"were logged as job {jobs} ended ({', '.join(states)}): the driver stopping a killed program's "
                    "GPU channels, not a GPU fault (no hardware Xid on the node)",
            culprits=[], strength="state", confidence=0.3,
            evidence=[kernel_evidence(e) for e in {e.file: e for e in xids}.values()][:3],
        ))
    return findings
