"""check_lustre_recovery: a Lustre target that went away and came back — harmless when every client
recovered (a planned failover, a restart within the recovery window), ``storage_unavailable`` when it
cost work (clients evicted, service threads stalled on the backing storage, jobs that died with I/O errors
while it was gone).

Targets that are still unreachable are check_fs_unavailable's; a target whose server logged the start of a
recovery and not its end is unavailable for everyone until it ends (storage_unavailable, the target the culprit);
otherwise this check reads the episodes that ended:
clients' ``Connection to T was lost`` … ``Connection restored``, ``This client was evicted by T``; the
servers' ``haven't heard from client … evicting it``, ``Service thread pid N was inactive for S s``,
``Will be in recovery`` / ``Recovery over after …, of N clients M recovered and K were evicted``,
``Failing over T``. Shapes: the Lustre Operations Manual (recovery, failover, eviction) and
lustre-discuss reports.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tools.checks.base import CheckConfig, job_culprits, kernel_evidence, log_evidence
from tools.facts import Facts
from tools.facts.queries import ENDED_BADLY, affected_jobs, event_time, job_nodes
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import FsErrorEvent, LustreEvent

__all__ = ["LustreRecoveryConfig", "check_lustre_recovery"]

_LOST = ("connection_lost", "evicted", "request_timeout")
_BACKING = ("multipath", "failing path", "all paths down", "did_transport", "i/o error, dev", "blk_update_request",
            "buffer i/o error", "remaining active paths: 0")
"""A Lustre server's own block devices failing (SCSI/multipath/blk-mq lines): why its threads hang."""


class LustreRecoveryConfig(CheckConfig):
    """How many clients make an episode the servers' and how long after it a failure still counts."""

    min_clients: int = 2
    """Clients that lost the same target before the episode is about the target, not one client."""
    after_min: float = 10.0
    """Minutes after the last restore (or the recovery's end) in which a job's failure is counted against it."""
    recovery_window_min: float = 45.0
    """A recovery that started this long before the snapshot with no end logged is still going on (Lustre's hard
    recovery limit is 15 minutes by default, a few times that with imperative recovery extending it); older, the
    log more likely stops before its end."""


@dataclass
class _Episode:
    clients: set[str] = field(default_factory=set)
    evicted: set[str] = field(default_factory=set)
    restored: set[str] = field(default_factory=set)
    server: list[LustreEvent] = field(default_factory=list)
    client_events: list[LustreEvent] = field(default_factory=list)
    times: list[datetime] = field(default_factory=list)


def _episodes(facts: Facts) -> dict[str, _Episode]:
    eps: dict[str, _Episode] = defaultdict(_Episode)
    hung_on: dict[str, list[LustreEvent]] = defaultdict(list)
    served: dict[str, set[str]] = defaultdict(set)
    for ev in facts.kernel_events_of("lustre_error"):
        if not isinstance(ev, LustreEvent) or not ev.node:
            continue
        if ev.state == "service_hung":
            hung_on[ev.node].append(ev)
            continue
        if not ev.target:
            continue
        ep = eps[ev.target]
        if (t := event_time(facts, ev)) is not None:
            ep.times.append(t)
        if ev.state in ("client_evicted", "recovery_started", "recovery_complete", "failover"):
            ep.server.append(ev)
            served[ev.node].add(ev.target)
        elif ev.state in _LOST:
            ep.clients.add(ev.node)
            ep.client_events.append(ev)
            if ev.state == "evicted":
                ep.evicted.add(ev.node)
        elif ev.state == "connection_restored":
            ep.restored.add(ev.node)
    for m in facts.md_stats:  # an MDS's own md_stats name the MDTs it serves
        if m.server:
            served[m.server].add(m.target)
    for node, hung in hung_on.items():  # an OSS whose service threads hang stalls every target it serves
        for target in served.get(node, ()):
            eps[target].server += hung[:2]
    return eps


def _in_recovery(facts: Facts, ep: _Episode, within: timedelta) -> LustreEvent | None:
    """The server's ``Will be in recovery`` line when the target's last recovery started ``within`` of the
    snapshot and no ``Recovery over`` follows it: clients' requests block until it ends (Lustre Operations
    Manual, "Recovery": a target in recovery serves only the clients it is waiting for, and refuses new ones)."""
    started = [(t, e) for e in ep.server if e.state == "recovery_started" and (t := event_time(facts, e)) is not None]
    if not started:
        return None
    when, ev = max(started, key=lambda s: s[0])
    done = [t for e in ep.server if e.state == "recovery_complete" and (t := event_time(facts, e)) is not None]
    if any(t >= when for t in done) or facts.captured_at - when.replace(tzinfo=facts.captured_at.tzinfo) > within:
        return None
    return ev


def _went_down(facts: Facts, node: str) -> bool:
    """The node's kernel log records it going down (a panic, a fatal hardware error, a hard lockup)."""
    return any(getattr(e, "fatal", False) for e in facts.kernel_events_on(node) if e.kind == "host_fault")


def _recovering(facts: Facts, ep: _Episode, target: str, ev: LustreEvent) -> Finding:
    """storage_unavailable for a target still in recovery: every client waits on it; no node is at fault."""
    refused = sorted({e.node for e in facts.kernel_events_of("lustre_error") if isinstance(e, LustreEvent)
                      and e.target == target and e.state == "op_failed" and "rc = -16" in e.message and e.node})
    kind = "mdt" if "-MDT" in target else "ost"
    # The server it failed over from: a node whose own lines speak for the target (``T: error writing``, not a
    # client's ``T-mdc-…``) and that then went down (a panic, an LBUG).
    failed = sorted({e.node for e in facts.kernel_events_of("lustre_error") if isinstance(e, LustreEvent) and e.node
                     and e.node != ev.node and e.target == target and f"{target}:" in e.message
                     and _went_down(facts, e.node)})
    return Finding(
        check="lustre_recovery", root_cause="storage_unavailable",
        message=f"{target} is in recovery on {ev.node} since {ev.timestamp or '?'} and has not finished: until it does, "
                f"every client's requests to it block (tasks hang in D state)"
                + (f" and {len(refused)} client(s) trying to connect anew are refused (rc = -16, EBUSY)" if refused else "")
                + (f"; it failed over from {', '.join(failed)}, which went down" if failed else "")
                + " — the file system is unavailable for everyone; the clients are victims, not faulty",
        culprits=[f"{kind}:{target}", *(f"node:{n}" for n in failed)],
        evidence=[kernel_evidence(ev)] + [kernel_evidence(e) for e in ep.client_events[:2]],
        strength="direct", confidence=confidence("direct", corroborated=bool(ep.clients) or bool(refused)),
        suggested_actions=[],
    )


def _recovery_evictions(ep: _Episode) -> int:
    return sum(e.evicted or 0 for e in ep.server if e.state == "recovery_complete") + \
        sum(1 for e in ep.server if e.state == "client_evicted")


def _victims(facts: Facts, clients: set[str], start: datetime | None, end: datetime | None,
             after: timedelta) -> list[str]:
    """Jobs that ended badly on the clients while the target was gone (or just after), and jobs whose logs
    show file-system errors on those clients in that window."""
    if start is None or end is None:
        return []
    lo, hi = start - timedelta(minutes=1), end + after
    out: dict[str, None] = {}
    for node in sorted(clients):
        for r in facts.acct_on_node(node):
            state = (r.state or "").split(" ")[0]
            if state in ENDED_BADLY and r.end_time is not None and lo <= r.end_time.replace(tzinfo=lo.tzinfo) <= hi:
                out.setdefault(r.job_id)
    for e in facts.job_events_of("fs_error"):
        if isinstance(e, FsErrorEvent) and e.job and set(job_nodes(facts, e.job)) & clients:
            out.setdefault(e.job)
    return list(out)


def check_lustre_recovery(facts: Facts, cfg: LustreRecoveryConfig) -> list[Finding]:
    """Per Lustre target that ``min_clients`` or more clients lost and got back: ``storage_unavailable`` when
    the episode evicted clients, stalled the server's threads or failed jobs (culprits the targets, then the
    jobs; no node is drained — the clients were victims), else one ``healthy`` finding saying the target
    failed over or recovered with every client back (so a sweep that sees the lost-connection lines can call
    the file system healthy and say why)."""
    after = timedelta(minutes=cfg.after_min)
    harmful: dict[str, _Episode] = {}
    harmless: dict[str, _Episode] = {}
    findings: list[Finding] = []
    for target, ep in _episodes(facts).items():
        if (started := _in_recovery(facts, ep, timedelta(minutes=cfg.recovery_window_min))) is not None:
            findings.append(_recovering(facts, ep, target, started))
            continue
        # Back when most of the clients that lost it logged the restore (or an eviction, after which they
        # reconnect), or the server finished recovery; a log that ends early on one client does not keep it down.
        back = (ep.clients and 2 * len(ep.clients & (ep.restored | ep.evicted)) >= len(ep.clients)) or any(
            e.state == "recovery_complete" for e in ep.server)
        if len(ep.clients | {e.node for e in ep.server if e.state == "client_evicted"}) < cfg.min_clients and \
                not any(e.state in ("recovery_complete", "failover") for e in ep.server):
            continue
        if not back:
            continue  # still down: check_fs_unavailable's
        stalled = any(e.state == "service_hung" for e in ep.server)
        failed = _victims(facts, ep.clients, min(ep.times, default=None), max(ep.times, default=None), after)
        if ep.evicted or _recovery_evictions(ep) or stalled or failed:
            harmful[target] = ep
        elif ep.restored or any(e.state in ("recovery_complete", "failover") for e in ep.server):
            harmless[target] = ep  # came back by the book; timeouts alone are a slow server, not this
    if harmful:
        clients = set().union(*(ep.clients for ep in harmful.values()))
        times = [t for ep in harmful.values() for t in ep.times]
        jobs = _victims(facts, clients, min(times, default=None), max(times, default=None), after)
        server = [e for ep in harmful.values() for e in ep.server if e.state in ("client_evicted", "service_hung")]
        stalled = any(e.state == "service_hung" for e in server)
        # While the server's threads hang, clients reconnect but their requests do not return: the jobs with
        # tasks hung on those clients are waiting on it (named, not notified: nothing for their owners to do).
        hung_nodes = {e.node for e in facts.kernel_events_of("hung_task") if e.node in clients} if stalled else set()
        waiting = [j for j in affected_jobs(facts, sorted(hung_nodes)) if j not in jobs]
        backing = [e for n in {e.node for e in server if e.state == "service_hung"} for e in facts.kernel_events_on(n)
                   if e.kind == "generic" and any(w in e.message.lower() for w in _BACKING)]
        client = [e for ep in harmful.values() for e in ep.client_events if e.state == "evicted"]
        fs_errs = [e for e in facts.job_events_of("fs_error") if e.job in jobs]
        evidence = [kernel_evidence(e) for e in server[:2] + backing[:1] + client[:2]] + [log_evidence(e) for e in fs_errs[:2]]
        evicted = len(set().union(*(ep.evicted for ep in harmful.values()))) + sum(map(_recovery_evictions, harmful.values()))
        names = sorted(harmful)
        findings.append(Finding(
            check="lustre_recovery", root_cause="storage_unavailable",
            message=f"{', '.join(names[:4])} went away for {len(clients)} client(s) and "
                    + ("they reconnected, but its requests do not return" if stalled else "came back")
                    + (f"; {evicted} eviction(s)" if evicted else "")
                    + ("; the server's service threads stalled" if stalled else "")
                    + (f" on its failing backing storage ({len(backing)} block-device/multipath error(s))" if backing else "")
                    + (f"; {len(jobs)} job(s) failed while it was gone" if jobs else "")
                    + (f"; tasks of {len(waiting)} running job(s) hang on it in the kernel" if waiting else "")
                    + " — the clients were victims, not faulty",
            culprits=[f"{'mdt' if '-MDT' in t else 'ost'}:{t}" for t in names[:6]] + job_culprits(jobs + waiting[:6]),
            evidence=evidence[:6] or [Evidence(text=f"{len(clients)} clients lost {', '.join(names[:3])}")],
            strength="direct", confidence=confidence("direct", corroborated=bool(jobs) and bool(server)),
            suggested_actions=[ActionSpec(type="notify_owner", job=j,
                                          reason="job failed with I/O errors while a Lustre target was unavailable; "
                                                 "it can be resubmitted now that the target is back")
                               for j in jobs[:5]],
        ))
    if harmless:
        names = sorted(harmless)
        done = [e for ep in harmless.values() for e in ep.server if e.state == "recovery_complete"]
        clients = set().union(*(ep.clients for ep in harmless.values()))
        findings.append(Finding(
            check="lustre_recovery", root_cause="healthy",
            message=f"{', '.join(names[:4])} failed over or restarted and recovered"
                    + (f" ({done[0].clients} clients back, 0 evicted)" if done and done[0].clients else "")
                    + (f"; the {len(clients)} client(s) that lost it reconnected" if clients else ""),
            culprits=[], evidence=[kernel_evidence(e) for e in done[:2]]
            + [kernel_evidence(e) for ep in harmless.values() for e in ep.client_events[:1]][:2],
            strength="state", confidence=0.3,
        ))
    return findings
