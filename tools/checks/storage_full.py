"""check_storage_full: a full OST or MDT (blocks or inodes), and jobs failing with ENOSPC."""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig, job_culprits, kernel_evidence, log_evidence
from tools.facts import Facts
from tools.facts.queries import is_slurm_job_id, job_nodes, job_user
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.lustre import LfsDfRow
from tools.platform import node_ref, take_out_of_service

__all__ = ["StorageFullConfig", "check_storage_full"]


class StorageFullConfig(CheckConfig):
    """Thresholds for fullness."""

    full_pct: float = 95.0
    min_writer_share: float = 0.5
    """Share of the bytes written to a full OST (obdfilter job_stats) that names a job as filling it."""


def _top_writers(facts: Facts, full: list[LfsDfRow], min_share: float) -> list[tuple[str, str, float]]:
    """(job id, OST, share) of jobs that wrote most of the bytes to a full OST."""
    out: list[tuple[str, str, float]] = []
    for row in full:
        if row.kind != "OST" or row.inodes:
            continue
        target = row.uuid.removesuffix("_UUID")
        entries = [e for e in facts.job_stats if e.target == target]
        total = sum(e.bytes.get("write_bytes", 0) for e in entries)
        if not total:
            continue
        top = max(entries, key=lambda e: e.bytes.get("write_bytes", 0))
        share = top.bytes.get("write_bytes", 0) / total
        if share >= min_share:
            out.append((top.job_id, target, share))
    return out


def _hot_osts_only(facts: Facts, full: list, cfg: StorageFullConfig) -> list[Finding]:
    """A healthy finding when every full target is an OST (blocks, not inodes) of a file system whose OSTs
    together are well under ``full_pct`` and no job logged ENOSPC: Lustre's allocator stops placing new objects
    on a nearly-full OST, so one hot OST is a thing to rebalance, not a fault stopping jobs."""
    if any(r.kind != "OST" or r.inodes for r in full):
        return []
    out: list[Finding] = []
    for fs in sorted({r.fs or r.uuid.split("-")[0] for r in full}):
        osts = {r.uuid: r for r in facts.lfs_df if r.kind == "OST" and not r.inodes and (r.fs or r.uuid.split("-")[0]) == fs}
        total = sum(r.total for r in osts.values())
        share = 100.0 * sum(r.used for r in osts.values()) / total if total else 100.0
        if len(osts) < 2 or share > cfg.full_pct - 15:
            return []
        hot = sorted({r.uuid.removesuffix("_UUID") for r in full if (r.fs or r.uuid.split("-")[0]) == fs})
        out.append(Finding(
            check="storage_full", root_cause="healthy",
            message=f"{', '.join(hot)} at {max(r.use_pct for r in full):.0f}% while {fs}'s {len(osts)} OSTs hold "
                    f"{share:.0f}% and no job logged ENOSPC: new objects go to the other OSTs; rebalance or drain the "
                    "hot OST (lfs_migrate), nothing to stop",
            culprits=[f"fs:{fs}"], strength="state", confidence=0.3,
            evidence=[Evidence(text=f"{r.uuid} {r.use_pct:.0f}% used on {r.mount}", metric="lfs df", value=r.use_pct,
                               unit="%") for r in full[:2]]))
    return out


def _full_targets(facts: Facts, full: list[LfsDfRow]) -> list[str]:
    """``mdt:`` culprits for full MDTs (every create fails there, whatever the OSTs hold) and ``ost:`` culprits
    for full OSTs when the file system's other OSTs still have room (the full ones are the thing to fix); with
    every OST full the file system is, and no one OST is named."""
    named: list[str] = []
    for r in full:
        target = r.uuid.removesuffix("_UUID")
        fs = r.fs or r.uuid.split("-")[0]
        if r.kind == "MDT":
            named.append(f"mdt:{target}")
        elif r.kind == "OST":
            osts = {o.uuid for o in facts.lfs_df if o.kind == "OST" and (o.fs or o.uuid.split("-")[0]) == fs}
            if len({o.uuid for o in full if o.kind == "OST" and (o.fs or o.uuid.split("-")[0]) == fs}) < len(osts):
                named.append(f"ost:{target}")
    return list(dict.fromkeys(named))[:4]


def check_storage_full(facts: Facts, cfg: StorageFullConfig) -> list[Finding]:
    """storage_full per file system with a target at or over ``full_pct`` (blocks from `lfs df`,
    inodes from `lfs df -i`), corroborated by ENOSPC / quota / failed-write lines in job logs.

    A job log ENOSPC with no `lfs df` view still yields a finding (lower confidence): quota or a
    full volume that was not recorded.
    """
    hosts = _service_hosts(facts)
    full = [r for r in facts.lfs_df if r.use_pct >= cfg.full_pct]
    # /dev/shm full is the container's or node's shared-memory size, not a file system running out.
    failed = [e for e in facts.job_events_of("enospc", "checkpoint_write_failure") if "/dev/shm" not in e.message]
    if not full and not [e for e in failed if e.kind == "enospc"]:
        return hosts
    if full and not failed and (room := _hot_osts_only(facts, full, cfg)):
        return hosts + room
    # One line can be both kinds ("No space left on device" while saving a .pt): count lines.
    enospc = list({(e.file, e.line): e for e in failed[::-1]}.values())[::-1]  # first event of each line
    victims = [e.job for e in enospc if e.job]
    writers = _top_writers(facts, full, cfg.min_writer_share)
    jobs = list(dict.fromkeys([w for w, _, _ in writers if is_slurm_job_id(w)] + victims))
    evidence = [
        Evidence(
            text=f"{r.uuid} {'inodes' if r.inodes else 'space'} {r.use_pct:.0f}% used ({r.used:,} of {r.total:,}"
            f"{'' if r.inodes else ' KiB'}) on {r.mount}",
            metric="lfs df -i" if r.inodes else "lfs df", value=r.use_pct, unit="%")
        for r in full[:4]
    ] + [Evidence(text=f"job_stats on {t}: job_id {w} wrote {share:.0%} of the bytes written there",
                  metric="obdfilter job_stats", value=round(share * 100, 1), unit="%") for w, t, share in writers]
    evidence += [log_evidence(e) for e in enospc[:3]]
    fss = sorted({r.fs or r.uuid.split("-")[0] for r in full} or _written_fs(enospc))  # lfs df names it when read
    # A quota (EDQUOT) is the owner's: their usage is what to cut, whatever the file system holds.
    quota_users = [f"user:{u}" for j in dict.fromkeys(e.job for e in enospc if e.job and getattr(e, "error", "") == "EDQUOT")
                   if (u := job_user(facts, j))]
    culprits = [f"fs:{fs}" for fs in fss] + _full_targets(facts, full) + job_culprits(jobs) + list(dict.fromkeys(quota_users))
    what = ", ".join(f"{r.uuid} {r.use_pct:.0f}%{' inodes' if r.inodes else ''}" for r in full[:4])
    local = _local_disks(facts, enospc)
    if local and not full:
        return hosts + local
    return hosts + local + [Finding(
        check="storage_full", root_cause="storage_full",
        message=(f"full targets: {what} (threshold {cfg.full_pct:.0f}%)" if full else "jobs hit ENOSPC")
        + (f"; {len(enospc)} write failure(s) in job logs" if enospc else ""),
        culprits=culprits, evidence=evidence,
        strength="direct" if full else "symptom", confidence=confidence("direct" if full else "symptom", corroborated=bool(full and enospc)),
        suggested_actions=[ActionSpec(type="notify_owner", job=j,
                                      reason="fills the full target" if j in {w for w, _, _ in writers}
                                      else "writes fail: file system full") for j in jobs],
    )]


def _local_disks(facts: Facts, enospc: list) -> list[Finding]:
    """storage_full per node whose own disk (a ``/dev/`` device in a ``df`` row a job printed) is full: culprit
    the node and the jobs that hit ENOSPC there; take the node out of service until the disk is cleaned (what a
    previous job left in node-local scratch fails every job placed there next)."""
    by_node: dict[str, list] = {}
    for e in enospc:
        if getattr(e, "device", None) and e.device.startswith("/dev/") and e.job:
            nodes = job_nodes(facts, e.job)
            if len(nodes) == 1:
                by_node.setdefault(nodes[0], []).append(e)
    out: list[Finding] = []
    for node, rows in sorted(by_node.items()):
        jobs = list(dict.fromkeys(e.job for e in enospc if e.job and job_nodes(facts, e.job) == [node]))
        ref = node_ref(facts, node)
        mounts = ", ".join(sorted({f"{e.mount} {e.use_pct:.0f}%" for e in rows}))
        out.append(Finding(
            check="storage_full", root_cause="storage_full",
            message=f"{node}: its own disk is full ({mounts}); jobs placed there fail with ENOSPC",
            culprits=[ref.culprit, *job_culprits(jobs)],
            evidence=[log_evidence(e) for e in (rows[:1] + [x for x in enospc if x.job in jobs and x not in rows][:2])],
            strength="direct", confidence=confidence("direct", corroborated=len(jobs) >= 1),
            suggested_actions=take_out_of_service(facts, ref, f"node-local disk full: {mounts}")
            + [ActionSpec(type="notify_owner", job=j, reason=f"failed on a full local disk of {node}") for j in jobs],
        ))
    return out


_PATH = re.compile(r"['\"]?(/[\w.+-]+(?:/[\w.+-]+)+)")
_SITE_ROOTS = ("lustre", "gpfs", "mnt", "fs", "beegfs", "weka")
_NOT_SHARED = ("tmp", "dev", "var", "proc", "sys", "run", "local", "usr", "opt", "etc", "root")


def _written_fs(enospc: list) -> set[str]:
    """File systems two or more ENOSPC lines were writing to, by mount convention (``/gpfs1/proj/…`` -> gpfs1,
    ``/lustre/scratch/…`` -> scratch); node-local paths (``/tmp``, ``/local``, ``/dev/shm``) are not."""
    seen: dict[str, int] = {}
    for e in enospc:
        m = _PATH.search(e.message)
        if m is None or getattr(e, "device", None):
            continue
        parts = m.group(1).strip("/").split("/")
        name = parts[1] if parts[0] in _SITE_ROOTS and len(parts) > 2 else parts[0]
        if parts[0] not in _NOT_SHARED:
            seen[name] = seen.get(name, 0) + 1
    return {n for n, k in seen.items() if k >= 2}


_DISK_FULL = ("no space left on device", "disk is full", "errcode: 28", "disk full")


def _service_hosts(facts: Facts) -> list[Finding]:
    """storage_full per host outside the scheduler's nodes (a database, controller or login host) whose own
    daemons log that its disk is full (MariaDB ``Disk is full writing … (Errcode: 28 "No space left on
    device")``, slurmctld/slurmdbd write errors): what stalls on it (slurmdbd's database, StateSaveLocation)
    is a consequence. No action: freeing space there (binlogs, old logs) is an administrator's task.

    Sources: kernel-log/syslog lines per host (daemon tag kept as the source)."""
    compute = set(facts.node_names()) | {n.name for n in facts.k8s_nodes}
    by_host: dict[str, list] = {}
    for e in facts.kernel_events_of("generic", "slurm_node"):
        if e.node and e.node not in compute and any(w in e.message.lower() for w in _DISK_FULL):
            by_host.setdefault(e.node, []).append(e)
    out: list[Finding] = []
    for host, events in sorted(by_host.items()):
        daemons = sorted({e.source for e in events if e.source and e.source != "kernel"})
        out.append(Finding(
            check="storage_full", root_cause="storage_full",
            message=f"{host}: its disk is full ({len(events)} line(s)" + (f" from {', '.join(daemons[:3])}" if daemons else "")
                    + "): the services on it stall until space is freed",
            culprits=[f"node:{host}"], evidence=[kernel_evidence(e) for e in events[:3]],
            strength="direct", confidence=confidence("direct", corroborated=len(events) >= 2),
            suggested_actions=[],
        ))
    return out
