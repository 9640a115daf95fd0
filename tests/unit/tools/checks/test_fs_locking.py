"""check_fs_lock_unsupported on sacct -p rows and Python fcntl tracebacks (an NFS client mounted nolock)."""

from __future__ import annotations

from tools.checks.fs_locking import FsLockConfig, check_fs_lock_unsupported

HEADER = "JobID|JobName|User|State|ExitCode|Start|End|Elapsed|NodeList|\n"
LOCK_FAIL = """Traceback (most recent call last):
  File "/home/u/env/lib/python3.11/site-packages/filelock/_unix.py", line 44, in _acquire
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
OSError: [Errno 37] No locks available
"""


def _facts(make_facts, failing_nodes: list[str], peers: bool = True):
    rows = [f"81{i:02d}|tok-shard|u|FAILED|1:0|2026-03-04T09:00:00|2026-03-04T09:00:20|00:00:20|{n}|"
            for i, n in enumerate(failing_nodes)]
    if peers:
        rows += ["8190|tok-shard|u|COMPLETED|0:0|2026-03-04T08:00:00|2026-03-04T08:40:00|00:40:00|c20|",
                 "8191|tok-shard|u|RUNNING|0:0|2026-03-04T09:30:00|Unknown|00:45:00|c21|"]
    files = [("slurm/sacct.txt", "sacct-text", HEADER + "\n".join(rows) + "\n")]
    ctx = {}
    for i, _ in enumerate(failing_nodes):
        files.append((f"logs/81{i:02d}/err", "job-log", LOCK_FAIL))
        ctx[f"logs/81{i:02d}/err"] = {"job": f"81{i:02d}"}
    return make_facts(*files, **ctx)


def test_lock_enosys_on_one_node_while_the_same_jobs_lock_elsewhere_is_its_client(make_facts):
    (f,) = check_fs_lock_unsupported(_facts(make_facts, ["c07", "c07"]), FsLockConfig())
    assert f.root_cause == "fs_client_fault" and f.culprits == ["node:c07"]
    assert [(a.type, a.node) for a in f.suggested_actions] == [("drain_node", "c07")]
    assert "2 job(s) on c07" in f.message and "2 job(s) of the same name ran on other nodes" in f.message


def test_a_cluster_wide_failure_or_no_job_locking_fine_elsewhere_is_not_one_client(make_facts):
    assert check_fs_lock_unsupported(_facts(make_facts, ["c07", "c08", "c09"]), FsLockConfig()) == []
    assert check_fs_lock_unsupported(_facts(make_facts, ["c07"], peers=False), FsLockConfig()) == []
