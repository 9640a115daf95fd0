"""What the file-system checks read about hosts rather than clients' errors: which `lfs df` view came from which
client, which hosts serve the file system, which nodes Slurm drained while their jobs sat in I/O.

Sources: `lfs df` rows (tools.models.lustre.LfsDfRow, with the file they came from) and the artifacts' manifest
node or command; kernel/syslog events of servers; `sinfo -R` / scontrol drain reasons.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from tools.facts import Facts

__all__ = ["server_hosts", "kill_failed", "file_node", "inactive_here_only"]

_SERVER_STATES = ("recovery_started", "recovery_complete", "client_evicted", "service_hung", "failover")


def server_hosts(facts: Facts) -> list[str]:
    """Hosts that are no compute node whose own log shows them serving the file system (Lustre target recovery,
    evictions, GPFS/NFS server daemons): the storage team's machines, whom to tell."""
    hosts: set[str] = set()
    for e in facts.kernel_events_of("lustre_error", "fs_client", "generic"):
        n = e.node
        if not n or facts.node(n) is not None or facts.k8s_node(n) is not None:
            continue
        if getattr(e, "state", None) in _SERVER_STATES or (e.source or "").startswith(("mmfsd", "nfsd", "rpc.mountd")):
            hosts.add(n)
    return sorted(hosts)


def kill_failed(facts: Facts, nodes: Iterable[str]) -> list[str]:
    """Of ``nodes``, those drained with ``Kill task failed`` (Slurm could not end a job stuck in I/O)."""
    return sorted(n for n in nodes if "kill task failed" in (facts.reason_of(n) or "").lower())[:3]


def file_node(facts: Facts, path: str | None) -> str | None:
    """The node a recorded file was taken on: its manifest ``node``, else the one known node name among the
    words of its path and command (``lfs_df_gn14.txt``, ``lfs df /scratch (run on gn14)``)."""
    art = next((a for a in facts.artifacts if a.path == path), None)
    if art is None:
        return None
    if art.node:
        return art.node
    words = set(re.split(r"[^A-Za-z0-9-]+", f"{art.path} {art.command or ''}"))
    named = [w for w in words if w and facts.node(w) is not None]
    return named[0] if len(named) == 1 else None


def inactive_here_only(facts: Facts, down: list) -> dict[str, list]:
    """{node: its `lfs df` rows showing a target inactive} for targets that another client's `lfs df` shows
    active at the same time; {} when every view agrees (then the target is down for everyone)."""
    if not down:
        return {}
    # An inactive row may print only ``OST0007 : inactive device`` (no file-system prefix): match by kind
    # and index, and by file system where both rows name one.
    active = [r for r in facts.lfs_df if r.status == "active"]
    out: dict[str, list] = defaultdict(list)
    for r in down:
        seen = any(a.kind == r.kind and a.index == r.index and a.inodes == r.inodes and (not r.fs or a.fs == r.fs)
                   and a.file != r.file for a in active)
        if seen and (node := file_node(facts, r.file)):
            out[node].append(r)
    return dict(out)
