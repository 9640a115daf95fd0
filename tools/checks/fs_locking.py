"""check_fs_lock_unsupported: file locking that fails as "not implemented" (ENOSYS, errno 38) on one node while
the same work locks fine elsewhere — that node's client mounted the file system without lock support (Lustre
``noflock`` instead of ``flock``, NFS ``nolock``/``local_lock``), typically after a reimage or a hand mount. HDF5
(``H5FD__sec2_lock(): unable to lock file, errno = 38``), netCDF, SQLite and pip all stop there.

Sources: job-log traceback/generic lines (the job's stderr); squeue/sacct for where each job ran and for the
same-named jobs that did not fail on other nodes; the remedy is the node's mount options (drain it, remount
with ``flock``), so it is ``fs_client_fault``.
"""

from __future__ import annotations

import re
from collections import defaultdict

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.facts.queries import printed_on
from tools.knowledge.precedence import confidence
from tools.models.findings import Evidence, Finding
from tools.platform import node_ref, take_out_of_service

__all__ = ["FsLockConfig", "check_fs_lock_unsupported"]

_LOCK = re.compile(r"\b(?:lock(?:ing)? (?:the )?file|flock|fcntl|lockf|F_SETLK|advisory lock)", re.IGNORECASE)
_ENOSYS = re.compile(r"errno\s*=?\s*38\b|\[Errno 38\]|\bENOSYS\b|Function not implemented", re.IGNORECASE)
_NOLCK = re.compile(r"\[Errno 37\]|errno\s*=?\s*37\b|\bENOLCK\b|No locks available", re.IGNORECASE)
"""ENOLCK: an NFS client with no lock manager (``nolock`` mounts, lockd not reachable)."""
_OK = ("COMPLETED", "RUNNING")


class FsLockConfig(CheckConfig):
    """How many nodes may show it before it is a cluster-wide mount policy rather than one client."""

    max_nodes: int = 2


def check_fs_lock_unsupported(facts: Facts, cfg: FsLockConfig) -> list[Finding]:
    """fs_client_fault per node (at most ``max_nodes``) where jobs' file locks fail with ENOSYS or ENOLCK while jobs of the
    same name ran or completed on other nodes; drain the node (its mount must be redone). Culprit the node only:
    the jobs are victims whose owners resubmit once it is fixed."""
    failed: dict[str, list] = defaultdict(list)
    for e in facts.job_events_of("traceback", "generic", "fs_error"):
        if e.job and ((_LOCK.search(e.message) and _ENOSYS.search(e.message)) or _NOLCK.search(e.message)):
            node = printed_on(facts, e)
            if node is not None:
                failed[node].append(e)
    if not failed or len(failed) > cfg.max_nodes:
        return []
    findings: list[Finding] = []
    for node, events in sorted(failed.items()):
        names = {_name(facts, e.job) for e in events} - {None}
        fine = [r for r in facts.acct_jobs() if r.name in names and (r.state or "").startswith(_OK)
                and r.nodes and node not in r.nodes and not set(r.nodes) & set(failed)]
        if not fine:
            continue  # nothing shows the same work locking fine elsewhere
        ref = node_ref(facts, node)
        jobs = list(dict.fromkeys(e.job for e in events))
        findings.append(Finding(
            check="fs_lock_unsupported", root_cause="fs_client_fault",
            message=f"{len(jobs)} job(s) on {node} fail to lock files (ENOSYS 'Function not implemented' / ENOLCK 'No locks available') "
                    f"while {len(fine)} job(s) of the same name ran on other nodes: {node}'s file-system client is "
                    "mounted without lock support (Lustre noflock, NFS nolock); remount it with flock",
            culprits=[ref.culprit], strength="state", confidence=confidence("state", corroborated=len(jobs) >= 2),
            evidence=[log_evidence(e) for e in events[:2]]
            + [Evidence(text=f"sacct: job {r.job_id} ({r.name}) {r.state} on {','.join(r.nodes[:3])}", metric="sacct")
               for r in fine[:2]],
            suggested_actions=take_out_of_service(facts, ref, "file locking not supported by its file-system mount")))
    return findings


def _name(facts: Facts, job: str | None) -> str | None:
    if not job:
        return None
    j, a = facts.job(job), facts.acct_job(job)
    return (j.name if j else None) or (a.name if a else None)
