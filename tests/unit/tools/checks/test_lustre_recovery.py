"""check_lustre_recovery on client and server kernel-log shapes (Lustre Operations Manual, lustre-discuss)."""

from __future__ import annotations

from tools.checks.lustre_recovery import LustreRecoveryConfig, check_lustre_recovery


def _client(node: str, target: str = "scratch-OST0004", *, evicted: bool = False, restored: bool = True) -> str:
    lines = [f"[Wed Mar  4 09:03:41 2026] Lustre: {target}-osc-ffff9d3c91a2c800: Connection to {target} "
             "(at 10.40.0.13@o2ib) was lost; in progress operations using this service will wait for recovery to complete"]
    if evicted:
        lines.append(f"[Wed Mar  4 09:20:52 2026] LustreError: 167-0: {target}-osc-ffff9d3c91a2c800: This client was "
                     f"evicted by {target}; in progress operations using this service will fail.")
    if restored:
        lines.append(f"[Wed Mar  4 09:20:53 2026] Lustre: {target}-osc-ffff9d3c91a2c800: Connection restored to "
                     "10.40.0.13@o2ib (at 10.40.0.13@o2ib)")
    return "\n".join(lines) + "\n"


SACCT = """JobID|JobName|User|Partition|State|ExitCode|Start|End|NNodes|NodeList
4411|sd3-ft|mk|gpu|FAILED|1:0|2026-03-04T08:02:13|2026-03-04T09:21:07|1|gx03
4405|bert|yh|gpu|RUNNING|0:0|2026-03-04T07:44:50|Unknown|1|gx01
"""
OSS_STALL = """[Wed Mar  4 09:05:41 2026] LNet: Service thread pid 41822 was inactive for 200.31s. The thread might be hung, or it might only be slow and will resume later.
[Wed Mar  4 09:09:30 2026] Lustre: scratch-OST0004: haven't heard from client 7c1e2a44 (at 10.40.1.3@o2ib) in 228 seconds. I think it's dead, and I am evicting it. exp ffff8e41c3a2d000, cur 17
"""
FAILOVER = """Mar 04 02:00:40 oss21 kernel: Lustre: Failing over scratch-OST0004
Mar 04 02:01:41 oss22 kernel: Lustre: scratch-OST0004: Will be in recovery for at least 2:30, or until 412 clients reconnect
Mar 04 02:02:51 oss22 kernel: Lustre: scratch-OST0004: Recovery over after 1:10, of 412 clients 412 recovered and 0 were evicted.
"""


def _facts(make_facts, files: dict[str, str], *, sacct: bool = True):
    arts = [(f"kernel/{n}.log", "kernel-log", t) for n, t in files.items()]
    if sacct:
        arts.append(("slurm/sacct.txt", "sacct-text", SACCT))
    return make_facts(*arts, **{f"kernel/{n}.log": {"node": n} for n in files})


# Fires: every client was evicted by OST0004 while its OSS's threads hung; job 4411 on gx03 died then.
def test_an_outage_that_evicted_clients_and_failed_a_job_names_the_target_and_the_job(make_facts):
    facts = _facts(make_facts, {"gx01": _client("gx01", evicted=True), "gx03": _client("gx03", evicted=True),
                                "oss03": OSS_STALL})
    (f,) = check_lustre_recovery(facts, LustreRecoveryConfig())
    assert f.root_cause == "storage_unavailable" and f.culprits == ["ost:scratch-OST0004", "job:4411"]
    assert "victims" in f.message and [a.type for a in f.suggested_actions] == ["notify_owner"]


# Healthy, with the reason: a failover by the book, 412 of 412 clients recovered, none evicted, and the
# clients' lost/restored lines are its trace, not a fault.
def test_a_failover_that_recovered_every_client_is_explained_as_normal(make_facts):
    facts = _facts(make_facts, {"a03": _client("a03"), "a12": _client("a12"), "oss22": FAILOVER}, sacct=False)
    (f,) = check_lustre_recovery(facts, LustreRecoveryConfig())
    assert f.root_cause == "healthy" and f.culprits == [] and "412 clients back, 0 evicted" in f.message


# Quiet: clients that lost the target and never got it back are check_fs_unavailable's (still down).
def test_a_target_still_gone_is_left_to_fs_unavailable(make_facts):
    facts = _facts(make_facts, {"gx01": _client("gx01", restored=False), "gx03": _client("gx03", restored=False)})
    assert check_lustre_recovery(facts, LustreRecoveryConfig()) == []


# Quiet: one client losing and regaining a target is that client's blip, not the target's episode.
def test_one_client_blip_is_not_an_episode(make_facts):
    assert check_lustre_recovery(_facts(make_facts, {"gx01": _client("gx01")}, sacct=False), LustreRecoveryConfig()) == []


# An MDS whose MDT LUN lost every multipath path: its service threads hang, clients lose and regain the MDT but
# their requests never return and their tasks hang. The MDS is known as the MDT's server by its md_stats.
MDS_BACKING = """Dec 01 10:01:48 mds01 kernel: sd 3:0:0:4: [sdf] tag#1022 FAILED Result: hostbyte=DID_TRANSPORT_DISRUPTED driverbyte=DRIVER_OK cmd_age=30s
Dec 01 10:01:49 mds01 kernel: device-mapper: multipath: 253:4: Failing path 8:160.
Dec 01 10:05:29 mds01 kernel: LNet: Service thread pid 22817 was inactive for 200.27s. The thread might be hung, or it might only be slow and will resume later. Dumping the stack trace for debugging purposes:
"""
MD_STATS = """mdt.home-MDT0000.md_stats=
snapshot_time             1764583200.000000000 secs.nsecs
open                      1204 samples [reqs]
"""
HUNG = "[Wed Mar  4 09:25:41 2026] INFO: task python:51120 blocked for more than 120 seconds.\n"


def test_an_mds_stalled_on_its_backing_storage_names_its_mdt_and_the_jobs_hung_on_it(make_facts):
    files = {"gx01": _client("gx01", "home-MDT0000") + HUNG, "gx03": _client("gx03", "home-MDT0000") + HUNG,
             "mds01": MDS_BACKING}
    arts = [(f"kernel/{n}.log", "kernel-log", t) for n, t in files.items()]
    squeue = ("             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
              "              4405       gpu     bert       yh  R    1:20:00      1 gx01\n"
              "              4411       gpu   sd3-ft       mk CG    1:18:00      1 gx03\n")
    arts += [("slurm/squeue.txt", "squeue-text", squeue), ("lustre/home/md_stats.txt", "lctl-md-stats", MD_STATS)]
    ctx = {f"kernel/{n}.log": {"node": n} for n in files} | {"lustre/home/md_stats.txt": {"node": "mds01"}}
    (f,) = check_lustre_recovery(make_facts(*arts, **ctx), LustreRecoveryConfig())
    assert f.root_cause == "storage_unavailable" and f.culprits[0] == "mdt:home-MDT0000"
    assert {"job:4405", "job:4411"} <= set(f.culprits) and not any(c.startswith("node:") for c in f.culprits)
    assert "requests do not return" in f.message and "backing storage" in f.message
    assert f.suggested_actions == []  # nothing failed yet: no owner to tell to resubmit
    # Without the MDS's md_stats nothing ties mds01 to the MDT: the reconnects alone are a recovery by the book.
    bare = make_facts(*arts[:-1], **ctx)
    assert [g.root_cause for g in check_lustre_recovery(bare, LustreRecoveryConfig())] == ["healthy"]


def test_a_target_whose_recovery_has_not_ended_is_unavailable_to_everyone_and_names_the_server_that_went_down(make_facts):
    # NOW is 10:15: the recovery began at 10:02 on oss22, after oss21 hit an I/O error on the target and panicked.
    crashed = ("[Wed Mar  4 10:00:31 2026] LustreError: 5521:0:(osd_io.c:1101:osd_ldiskfs_write_record()) "
               "scratch-OST0004: error writing [0x200000001:0x2:0x0]: rc = -5\n"
               "[Wed Mar  4 10:00:31 2026] Kernel panic - not syncing: LBUG\n")
    recovering = "Mar 04 10:02:41 oss22 kernel: Lustre: scratch-OST0004: Will be in recovery for at least 2:30, or until 412 clients reconnect\n"
    refused = ("[Wed Mar  4 10:10:05 2026] LustreError: 11-0: scratch-OST0004-osc-ffff8c1142a7e000: operation ost_connect "
               "to node 10.40.0.14@o2ib failed: rc = -16\n")
    files = {"oss21": crashed, "oss22": recovering, "gx01": _client("gx01", restored=False), "gx02": refused}
    (f,) = [f for f in check_lustre_recovery(_facts(make_facts, files), LustreRecoveryConfig())
            if f.root_cause == "storage_unavailable"]
    assert f.culprits == ["ost:scratch-OST0004", "node:oss21"] and f.suggested_actions == []
    assert "has not finished" in f.message and "1 client(s) trying to connect anew are refused" in f.message
    # once the server logs the end of it, it is the failover episode of before (healthy: every client back)
    ended = recovering + "Mar 04 10:04:01 oss22 kernel: Lustre: scratch-OST0004: Recovery over after 1:20, of 412 clients 412 recovered and 0 were evicted.\n"
    done = check_lustre_recovery(_facts(make_facts, {**files, "oss22": ended}, sacct=False), LustreRecoveryConfig())
    assert [g.root_cause for g in done] == ["healthy"]
    # a start long before the snapshot with no end in the log is not taken as still going on
    old = recovering.replace("10:02:41", "06:02:41")
    assert not [g for g in check_lustre_recovery(_facts(make_facts, {"oss22": old}), LustreRecoveryConfig())
                if "has not finished" in g.message]
