"""check_xid_at_cancel: application-class Xids logged the moment a job was cancelled or ended.

When a job is cancelled (scancel, a time limit, preemption), its processes are killed while their CUDA
contexts are live; the driver then tears their channels down and commonly logs Xid 43 ("GPU stopped
processing") or 45 ("preemptive cleanup") for every GPU the job held, within a second or two. NVIDIA's
catalogue files these under RESTART_APP: the program's end, not the GPU. A burst of them at a job's end is
an echo, and an alert on it (DCGM_FI_DEV_XID_ERRORS) is explained — as long as no hardware Xid is there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

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


@dataclass(frozen=True)
class _Kill:
    """A pod the kubelet stopped (a ``Killing`` event), shaped like an accounting row for the matching below."""

    job_id: str
    state: str = "KILLED by the kubelet"


def _pod_kills(facts: Facts, node: str) -> list[tuple[_Kill, datetime, datetime]]:
    """(pod, when) of the kubelet's ``Killing`` events for pods on ``node`` (the event's host, the pod's node, or on
    a Kubernetes node when neither is known: a deleted pod is gone from the list). A ``kubectl get events`` age
    (``50m``) is whole units: the kill lies in that minute (from, to)."""
    if facts.k8s_node(node) is None:
        return []
    out: list[tuple[_Kill, datetime, datetime]] = []
    pods = {(p.namespace, p.name): p.node for p in facts.k8s_pods}
    for e in facts.k8s_events:
        if e.reason != "Killing" or (e.object_kind or "Pod") != "Pod":
            continue
        where = e.source_host or pods.get((e.namespace or e.object_namespace or "", e.object_name or ""))
        if where not in (None, node):
            continue
        kill = _Kill(job_id=f"{e.namespace or e.object_namespace or '?'}/{e.object_name}")
        if e.last_timestamp is not None:
            out.append((kill, e.last_timestamp, e.last_timestamp))
        elif e.last_seen_s is not None:
            seen = facts.captured_at - timedelta(seconds=e.last_seen_s)
            out.append((kill, seen - timedelta(minutes=1), seen))
    return out


def check_xid_at_cancel(facts: Facts, cfg: XidAtCancelConfig) -> list[Finding]:
    """One ``healthy`` finding per node whose only Xids are 43/45 logged within seconds of the end of a job
    that accounting records as CANCELLED (or TIMEOUT / PREEMPTED: killed from outside) on that node, or of a pod
    the kubelet killed there.

    Sources: kernel-log Xid lines with their times (dmesg -T, journalctl, syslog); sacct End and NodeList; the
    kubelet's ``Killing`` events (k8s-json or kubectl get events).
    """
    findings: list[Finding] = []
    for node in sorted({e.node for e in facts.kernel_events_of("xid") if e.node}):
        xids = [e for e in facts.kernel_events_on(node) if isinstance(e, XidEvent)]
        if not xids or any(e.xid not in ECHO_XIDS or xid_class(e.xid) != "application" for e in xids):
            continue
        before, after = timedelta(seconds=cfg.before_s), timedelta(seconds=cfg.after_s)
        ends = [(r, r.end_time - before, r.end_time + after) for r in facts.acct_on_node(node) if r.end_time is not None
                and (r.state or "").startswith(("CANCELLED", "TIMEOUT", "PREEMPTED"))]
        ends += [(k, lo - before, hi + after) for k, lo, hi in _pod_kills(facts, node)]
        times = [kernel_event_time(facts, e) for e in xids]
        if not ends or any(t is None for t in times):
            continue
        matched = {r.job_id for t in times for r, lo, hi in ends if lo <= t <= hi}  # type: ignore[operator]
        if not matched or not all(any(lo <= t <= hi for _, lo, hi in ends) for t in times):  # type: ignore[operator]
            continue
        jobs = ", ".join(sorted(matched))
        states = sorted({(r.state or "").split(" ")[0] for r, _, _ in ends if r.job_id in matched})
        what = "pod" if all(isinstance(r, _Kill) for r, _, _ in ends if r.job_id in matched) else "job"
        findings.append(Finding(
            check="xid_at_cancel", root_cause="healthy",
            message=f"{len(xids)} Xid {'/'.join(str(x) for x in sorted({e.xid for e in xids}))} line(s) on {node} "
                    f"were logged as {what} {jobs} ended ({', '.join(states)}): the driver stopping a killed program's "
                    "GPU channels, not a GPU fault (no hardware Xid on the node)",
            culprits=[], strength="state", confidence=0.3,
            evidence=[kernel_evidence(e) for e in {e.file: e for e in xids}.values()][:3],
        ))
    return findings
