"""check_fs_unavailable: a file system that nodes cannot reach — on one node (its client is down:
``fs_client_fault``, drain that node) or for everyone (servers or LNet down: ``storage_unavailable``, drain
nothing). Lustre, GPFS/Spectrum Scale, NFS, BeeGFS."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from tools.checks.base import CheckConfig, job_culprits, kernel_evidence, log_evidence
from tools.checks.fs_views import inactive_here_only, kill_failed, server_hosts
from tools.facts import Facts
from tools.facts.queries import ENDED_BADLY, affected_jobs, control_plane_hosts, first_seen, job_nodes, job_state
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import FsClientEvent, FsErrorEvent, LustreEvent
from tools.platform import node_ref, take_out_of_service, victims

__all__ = ["FsUnavailableConfig", "check_fs_unavailable"]

_LUSTRE_BAD = ("connection_lost", "evicted", "request_timeout", "lnet_timeout", "op_failed", "mount_failed")
_FS_BAD = ("expelled", "lost_connection", "stale_handle", "unmounted", "not_mounted", "not_responding",
           "not_started", "io_error", "quorum_lost", "error")
_CLIENT_ONLY = ("not_started", "not_mounted", "unmounted", "expelled", "stale_handle", "mount_failed")
"""States that describe this node's client, whatever the others do."""


class FsUnavailableConfig(CheckConfig):
    """Thresholds for file-system errors."""

    min_events: int = 2
    """Error events (lost connection, eviction, timeout, expel) on a node that make it count."""
    quick_fail_s: int = 120
    """A job that ends badly this soon after starting, on a node that cannot mount, never reached its work."""
    single_client_share: float = 0.34
    """If no more than this share of the nodes with logs report errors, the fault is on those clients
    (drain them); above it, the servers or LNet are at fault."""


_MOUNT_ROOTS = ("/gpfs/", "/lustre/", "/mnt/", "/fs/")
_CLIENT_LOG = re.compile(r"(?:log '|Unmounted )([\w-]{1,64}?)-client\b")


def _fs_name(ev: object) -> str | None:
    if isinstance(ev, FsErrorEvent) and ev.path:
        for root in _MOUNT_ROOTS:  # /gpfs/<fs>/..., /lustre/<fs>/...: the site's mount convention
            if ev.path.startswith(root):
                return ev.path[len(root):].split("/", 1)[0] or None
        return None
    if isinstance(ev, LustreEvent):
        target = ev.target or ""
        for sep in ("-OST", "-MDT", "-MGS"):
            if sep in target:
                return target.split(sep)[0]
        named = _CLIENT_LOG.search(ev.message)  # the MGC's lines name the client's config log: <fs>-client
        return named[1] if named else None
    if isinstance(ev, FsClientEvent) and not ev.fs and ev.fs_type in _NAMED_BY_TYPE:
        return ev.fs_type  # a client line that names no mount: the site's one file system of that kind
    if isinstance(ev, FsClientEvent) and not ev.fs and ev.fs_type == "nfs" and ev.server:
        return ev.server.split(":", 1)[0]  # an NFS mount is known by its server (``nfs: server home01 not responding``)
    return getattr(ev, "fs", None)


_NAMED_BY_TYPE = ("beegfs", "cephfs", "ceph")


def _key(ev: object) -> set[str]:
    """What a restore must name to clear an error: the Lustre target/NID, or the GPFS/NFS server."""
    if isinstance(ev, LustreEvent):
        return {k for k in (ev.target, ev.nid) if k}
    if isinstance(ev, FsClientEvent):
        return {k for k in (ev.server, ev.fs) if k}
    return set()


def _node_events(facts: Facts) -> dict[str, list[object]]:
    """Unrecovered error events per node (a later restore to the same server clears an error)."""
    bad: dict[str, list[object]] = defaultdict(list)
    restores: dict[str, list[object]] = defaultdict(list)
    for ev in facts.kernel_events_of("lustre_error", "fs_client"):
        if not ev.node:
            continue
        state = ev.state
        if state in ("connection_restored", "restored"):
            restores[ev.node].append(ev)
        elif (isinstance(ev, LustreEvent) and state in _LUSTRE_BAD) or (isinstance(ev, FsClientEvent) and state in _FS_BAD):
            node = ev.node
            if isinstance(ev, FsClientEvent) and state == "expelled" and ev.server and ev.server in facts.node_names():
                node = ev.server  # the manager logs the expel of another node: that node lost the file system
            bad[node].append(ev)

    def recovered(e: object, node: str) -> bool:
        later = [r for r in restores[node] if r.file == e.file and r.line > e.line]  # type: ignore[attr-defined]
        keys = _key(e)
        return any(not keys or keys & _key(r) for r in later)

    out: dict[str, list[object]] = {}
    for node, events in bad.items():
        kept = [e for e in events if not recovered(e, node)]
        if kept:
            out[node] = kept
    for e in facts.job_events_of("fs_error"):
        if isinstance(e, FsErrorEvent) and e.job:
            allocated = job_nodes(facts, e.job)
            host = e.host if e.host in allocated else (allocated[0] if len(allocated) == 1 else None)
            if host:
                out.setdefault(host, []).append(e)
    return out


def check_fs_unavailable(facts: Facts, cfg: FsUnavailableConfig) -> list[Finding]:
    """fs_client_fault for nodes whose file-system client is down while the others are fine (a minority
    of the nodes with logs, or a client-only state such as GPFS not started, unmounted or expelled);
    storage_unavailable when many clients lose the servers or `lfs df` shows targets unavailable.

    Sources: kernel/syslog lustre_error and fs_client events, job-log fs_error events, `lfs df` status.
    """
    hung = {e.node for e in facts.kernel_events_of("hung_task") if e.node}
    # One error line counts when the node's tasks hang in the kernel too: its I/O is waiting on that server.
    per_node = {n: evs for n, evs in _node_events(facts).items()
                if len(evs) + (n in hung) >= cfg.min_events or any(_client_only(e) for e in evs)}
    down_targets = [r for r in facts.lfs_df if r.status != "active"]
    # `lfs df` shows the client's own view: a target inactive on some clients and active on others is those
    # clients' OSC/MDC left deactivated (lctl --device … deactivate, never reactivated), not the server.
    local = inactive_here_only(facts, down_targets)
    down_targets = [r for r in down_targets if not any(r in rows for rows in local.values())]
    for n in local:
        per_node.setdefault(n, [])
    if not per_node and not down_targets:
        return []
    logged = {e.node for e in facts.kernel_events if e.node} | {a.node for a in facts.artifacts
                                                               if a.format == "kernel-log" and a.node}
    share = len(per_node) / max(len(logged | set(per_node)), 1)
    client_only = {n for n, evs in per_node.items() if any(_client_only(e) for e in evs)} | set(local)
    if down_targets:
        clients: list[str] = []  # the servers are down: every client's errors are its consequence
    elif len(logged) >= 3:
        clients = sorted(per_node) if share <= cfg.single_client_share else []
    else:
        clients = sorted(client_only)  # too few logs to compare nodes: trust client-only states
    # Clients whose errors all name a server that other clients report too are that server's victims.
    shared = _shared_servers(per_node)
    clients = [n for n in clients if n in client_only or not _servers(per_node[n]) or not _servers(per_node[n]) <= shared]
    # A Slurm control host is no compute client to drain: its file-system trouble is the controller's.
    control = set(control_plane_hosts(facts)) & set(per_node) - set(facts.node_names())
    clients = [n for n in clients if n not in control]
    # Requests that only timed out "for slow reply" were answered, late: the server is slow (an overloaded
    # MDS/OSS), not this client down — however few clients logged it.
    clients = [n for n in clients if n in client_only or not all(_slow_reply(e) for e in per_node[n])]
    findings: list[Finding] = []
    for node in clients:
        events = per_node[node]
        ref = node_ref(facts, node)
        jobs = affected_jobs(facts, [node], since=first_seen(facts, events))
        # The jobs that ended badly there lost their work to the client: resubmitted without the node.
        lost, again = victims(facts, ref, f"file-system client down on {node}",
                              jobs=[j for j in jobs if job_state(facts, j) in ENDED_BADLY])
        lost += [c for c in job_culprits(jobs) if c not in lost]
        fss = sorted({f for e in events if (f := _fs_name(e))})
        findings.append(Finding(
            check="fs_unavailable", root_cause="fs_client_fault",
            message=f"{node}: file-system client down ({len(events)} error event(s)"
            + (f" on {', '.join(fss)}" if fss else "") + f"; {len(per_node)} of {len(logged | set(per_node))} node(s) "
            "with logs report errors, the others reach the servers)",
            culprits=[ref.culprit, *lost],
            evidence=[Evidence(text=f"lfs df on {node}: {r.uuid} {r.status} (active on other clients)", file=r.file,
                               metric="lfs df") for r in local.get(node, [])[:2]] + [_evidence(e) for e in events[:4]],
            strength="direct", confidence=confidence("direct", corroborated=len(events) >= 2 * cfg.min_events
                                                     or (node in local and bool(events))),
            suggested_actions=take_out_of_service(facts, ref, "file-system client down on this node") + again,
        ))
    rest = {n: evs for n, evs in per_node.items() if n not in clients}
    if rest or down_targets:
        events = [e for evs in rest.values() for e in evs]
        fss = sorted({f for e in events if (f := _fs_name(e))} | {r.fs for r in down_targets if r.fs})
        if not fss and any(isinstance(e, LustreEvent) for e in events):
            fss = _lustre_fs_named(facts, rest)
        hung = [e for n in rest for e in facts.kernel_events_on(n) if e.kind == "hung_task"]
        jobs = affected_jobs(facts, rest, since=first_seen(facts, events))
        slow_only = bool(events) and all(_slow_reply(e) for e in events)
        evidence = [_evidence(e) for e in events[:4]] + [kernel_evidence(e) for e in hung[:2]]
        evidence += [Evidence(text=f"lfs df: {r.uuid} {r.status}", metric="lfs df") for r in down_targets[:3]]
        only_control = bool(rest) and set(rest) <= control
        findings.append(Finding(
            check="fs_unavailable", root_cause="storage_unavailable",
            message=f"{len(events)} file-system connection loss/eviction/timeout event(s) on {len(rest)} node(s)"
            + (" (only the Slurm control host(s): slurmctld/slurmdbd storage)" if only_control else "")
            + (f"; {len(down_targets)} target(s) unavailable in lfs df" if down_targets else "")
            + (f"; {len(hung)} hung task(s)" if hung else "")
            + ("" if only_control else "; servers or network unreachable for many clients")
            + (f"; {', '.join(stuck)} drained with Kill task failed: its processes wait on this file system, so "
               "resume it only once the file system answers again" if (stuck := kill_failed(facts, rest)) else ""),
            culprits=[f"fs:{fs}" for fs in fss] + _targets(rest) + _down_targets(facts, down_targets)
            + _lost_servers(facts, rest) + _failing_servers(facts) + job_culprits(jobs)
            + ([f"node:{n}" for n in sorted(rest)] if only_control else []), evidence=evidence[:6],
            # Only "timed out for slow reply": the servers answer, slowly (an overloaded MDS/OSS): a symptom.
            strength="symptom" if slow_only else "direct",
            confidence=confidence("symptom" if slow_only else "direct", corroborated=bool(hung or down_targets)),
            suggested_actions=[ActionSpec(type="notify_owner", job=j, reason="job hung on unreachable file-system servers")
                               for j in jobs]
            + [ActionSpec(type="notify_owner", node=h, reason="file-system servers unreachable for many clients")
               for h in server_hosts(facts)[:2]],
        ))
        if holes := _unmounted_nodes(facts, rest, cfg):
            found = findings[-1]
            found.culprits[len(fss):len(fss)] = [node_ref(facts, n).culprit for n in holes]
            found.message += (f"; {', '.join(holes)} could not mount it while the servers are down (booted during the "
                              "outage: every job there fails at once): drain them until it mounts")
            found.suggested_actions[:0] = [a for n in holes for a in take_out_of_service(
                facts, node_ref(facts, n), "file system not mounted (its servers are down): jobs fail here at once")]
    return findings


_NOT_MOUNTED = ("mount_failed", "not_mounted", "unmounted")


def _slow_reply(e: object) -> bool:
    """A Lustre request that timed out waiting for a slow reply (``Request sent has timed out for slow reply``)."""
    return isinstance(e, LustreEvent) and e.state == "request_timeout"


def _lustre_fs_named(facts: Facts, nodes: Iterable[str]) -> list[str]:
    """For Lustre errors that name no target (MGC and LNet lines): the file system the nodes' other Lustre lines
    name (``The configuration from log 'scratch-client' failed``), else the one Lustre file system `lfs df` read."""
    named = {f for n in nodes for e in facts.kernel_events_on(n)
             if isinstance(e, LustreEvent) and (f := _fs_name(e))}
    recorded = {r.fs for r in facts.lfs_df if r.fs}
    return sorted(named) if named else sorted(recorded) if len(recorded) == 1 else []


def _ran_s(r: object) -> float | None:
    """Seconds a sacct row ran: its Elapsed, else End - Start (a ``--format`` without Elapsed)."""
    if getattr(r, "elapsed_s", None) is not None:
        return r.elapsed_s  # type: ignore[attr-defined]
    start, end = getattr(r, "start_time", None), getattr(r, "end_time", None)
    return (end - start).total_seconds() if start and end else None


def _unmounted_nodes(facts: Facts, rest: dict[str, list[object]], cfg: FsUnavailableConfig) -> list[str]:
    """Compute nodes with no mount of the file system while its servers are down: their own log says the mount
    failed (``lustre_fill_super(): Unable to mount``), or — when at least one node says so — they have no log
    read and their jobs since the outage began all failed within ``quick_fail_s`` (the same black hole).
    Nodes that mounted before the outage keep their jobs waiting, and are left alone."""
    compute = set(facts.node_names())
    direct = sorted(n for n, evs in rest.items() if n in compute and any(getattr(e, "state", None) in _NOT_MOUNTED
                                                                           for e in evs))
    if not direct:
        return []
    since = first_seen(facts, [e for evs in rest.values() for e in evs])
    logged = {a.node for a in facts.artifacts if a.format == "kernel-log" and a.node}
    rows: dict[str, list] = {}
    for r in facts.acct:
        if len(r.nodes) == 1 and r.nodes[0] not in logged and r.nodes[0] in compute and r.start_time \
                and (since is None or r.start_time >= since):
            rows.setdefault(r.nodes[0], []).append(r)
    inferred = [n for n, rs in sorted(rows.items()) if all(
        (r.state or "") in ENDED_BADLY and (ran := _ran_s(r)) is not None and ran <= cfg.quick_fail_s for r in rs)]
    return (direct + inferred)[:8]


def _targets(per_node: dict[str, list[object]]) -> list[str]:
    """``mdt:`` / ``ost:`` culprits for the Lustre targets that answered two or more nodes (or the only node)
    with errors — failed operations (``rc = -30``: read-only), evictions — named as Lustre names them
    (``scratch-MDT0000``)."""
    seen: dict[str, set[str]] = {}
    for node, events in per_node.items():
        for e in events:
            target = getattr(e, "target", None)
            # A target that answers with an error (read-only, failed operations, evictions) is that target's
            # fault; timeouts and lost connections say only that the path to the servers is down.
            unreachable = getattr(e, "rc", None) in (-110, -107, -113, -111) or "connect" in str(getattr(e, "op", "") or "")
            if isinstance(e, LustreEvent) and target and ("-MDT" in target or "-OST" in target) \
                    and e.state in ("op_failed", "error", "evicted") and not unreachable:
                seen.setdefault(target, set()).add(node)
    need = 1 if len(per_node) == 1 else 2
    return [f"{'mdt' if '-MDT' in t else 'ost'}:{t}" for t, nodes in sorted(seen.items()) if len(nodes) >= need][:4]


def _down_targets(facts: Facts, down: list) -> list[str]:
    """``mdt:`` / ``ost:`` culprits for the targets `lfs df` shows unavailable, when the file system's other
    targets still answer (one MDT of a DNE namespace, a few OSTs): those targets are the fault. When every
    target is down the servers or LNet are, and no one target is named."""
    named: list[str] = []
    for fs in sorted({r.fs for r in down if r.fs}):
        rows = [r for r in facts.lfs_df if r.fs == fs]
        gone = [r for r in down if r.fs == fs]
        if len(gone) < len(rows):
            for r in gone:
                target = r.uuid.removesuffix("_UUID")
                target = target if "-" in target else f"{fs}-{target}"  # a bare ``OST000b`` row
                if "-MDT" in target or "-OST" in target:
                    named.append(f"{'mdt' if '-MDT' in target else 'ost'}:{target}")
    return named[:4]


_SERVER_NET_DOWN = re.compile(r"starting up LNI|kiblnd_startup|Can't find IB device|Failed to bind \S+ to CMA device|"
                              r"lnet_startup|No usable routes", re.IGNORECASE)
"""A Lustre server's own LNet failing to come up on a network (``Error -100 starting up LNI o2ib``): its targets
are unreachable over that network whatever the clients do."""


def _failing_servers(facts: Facts) -> list[str]:
    """``node:`` culprits for hosts that are not compute nodes whose own kernel log shows LNet failing to start (a
    storage server back from a reboot with its IB interface renamed or missing)."""
    compute = set(facts.node_names())
    hosts = {e.node for e in facts.kernel_events_of("lustre_error")
             if e.node and e.node not in compute and _SERVER_NET_DOWN.search(e.message)}
    return [f"node:{h}" for h in sorted(hosts)][:4]


def _lost_servers(facts: Facts, per_node: dict[str, list[object]]) -> list[str]:
    """``node:`` culprits for file-system servers that two or more nodes lost (GPFS NSD servers expelled or
    overdue on their lease, an NFS server not responding), named by host name; Lustre NIDs and IP
    addresses name no host and are left out, as are compute nodes (whose loss is their own finding). The
    cluster manager's expel of a server counts from that one report: it is the cluster's own verdict."""
    seen: dict[str, set[str]] = {}
    expelled: set[str] = set()
    for node, events in per_node.items():
        for e in events:
            server = getattr(e, "server", None) if isinstance(e, FsClientEvent) else None
            if server and "@" not in server and not server.replace(".", "").replace(":", "").isdigit() \
                    and server != node:
                seen.setdefault(server, set()).add(node)
                if e.state == "expelled":
                    expelled.add(server)
    compute = set(facts.node_names())
    return [f"node:{s}" for s, nodes in sorted(seen.items())
            if (len(nodes) >= 2 or s in expelled) and s not in compute][:4]


def _client_only(e: object) -> bool:
    """An error about this node's own client: a client-only state, or a stale handle / lost transport the
    job saw (the node's mount is stale or gone; servers that are down time out instead)."""
    if isinstance(e, FsErrorEvent):
        return e.error in ("ESTALE", "ENOTCONN", "ENOENT_MOUNT")
    return getattr(e, "state", None) in _CLIENT_ONLY


def _evidence(e: object) -> Evidence:
    return log_evidence(e) if isinstance(e, FsErrorEvent) else kernel_evidence(e)  # type: ignore[arg-type]


def _servers(events: list[object]) -> set[str]:
    return {k for e in events for k in _key(e)}


def _shared_servers(per_node: dict[str, list[object]]) -> set[str]:
    """Servers (or Lustre targets/NIDs) that two or more nodes report errors with."""
    seen: dict[str, int] = {}
    for events in per_node.values():
        for k in _servers(events):
            seen[k] = seen.get(k, 0) + 1
    return {k for k, n in seen.items() if n >= 2}
