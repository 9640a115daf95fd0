"""check_fs_unavailable on Lustre, GPFS and NFS client lines from several nodes: one client down
(fs_client_fault, drain it) versus servers down for everyone (storage_unavailable, drain nothing)."""

from __future__ import annotations

from tools.checks.fs_unavailable import FsUnavailableConfig, check_fs_unavailable

# Context: 2211540 on hgx[09-10], 2211555 on hgx17, 2211560 on the healthy hgx02.
SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
           2211540       gpu llama3-8     uma  R    3:10:02      2 hgx[09-10]
           2211555       gpu  eval-lm    vera  R      40:10      1 hgx17
           2211560       gpu  sd-xl-f     wen  R    1:40:10      1 hgx02
"""

# The client lost hpcfs-OST000b (on OSS 172.16.20.16): requests expire, LNet times out to the
# server, and nothing comes back (lustre-oss-unreachable incident shapes).
LOST = """[Sun Nov 29 14:22:40 2026] Lustre: 3688:0:(client.c:2310:ptlrpc_expire_one_request()) @@@ Request sent has timed out for slow reply: [sent 1795962113] [real_sent 1795962113] [current 1795962160] [deadline 47s] [delay 0s] [queued 0s]  req@00000000a2ab9d75 x18946845772130898/t0(0) o4->hpcfs-OST000b-osc-ffff9b51bc4a5e8000@172.16.20.16@o2ib:6/4 lens 488/448 e 0 to 1 dl 1795962160 ref 2 fl Rpc:XQr/0/ffffffff rc 0/-1
[Sun Nov 29 14:22:40 2026] Lustre: hpcfs-OST000b-osc-ffff9b51bc4a5e8000: Connection to hpcfs-OST000b (at 172.16.20.16@o2ib) was lost; in progress operations using this service will wait for recovery to complete
[Sun Nov 29 14:22:55 2026] LNetError: 2895:0:(o2iblnd_cb.c:3397:kiblnd_check_txs_locked()) Timed out tx: tx_queue, 13 seconds
[Sun Nov 29 14:22:55 2026] LNetError: 2895:0:(o2iblnd_cb.c:3472:kiblnd_check_conns()) Timed out RDMA with 172.16.20.16@o2ib (63): c: 0, oc: 0, rc: 32
[Sun Nov 29 14:25:02 2026] INFO: task python:2291833 blocked for more than 120 seconds.
"""
# Does not fire: the same loss, then the connection is restored (an OSS failover that completed).
RECOVERED = LOST.replace("[Sun Nov 29 14:25:02 2026] INFO: task python:2291833 blocked for more than 120 seconds.\n", "") + \
    "[Sun Nov 29 14:23:30 2026] Lustre: hpcfs-OST000b-osc-ffff9b51bc4a5e8000: Connection restored to 172.16.20.16@o2ib (at 172.16.20.16@o2ib)\n"
# A healthy client: mount messages only.
QUIET = """[Mon Nov  2 12:46:00 2026] LNet: HW NUMA nodes: 2, HW CPU cores: 224, npartitions: 2
[Mon Nov  2 12:46:01 2026] LNet: Added LNI 172.16.8.10@o2ib [8/256/0/180]
[Mon Nov  2 12:46:03 2026] Lustre: Mounted hpcfs-client
"""


def _facts(make_facts, logs: dict[str, str], squeue: str = SQUEUE):
    return make_facts(("slurm/squeue.txt", "squeue-text", squeue),
                      *[(f"kernel/{n}.log", "kernel-log", t) for n, t in logs.items()],
                      **{f"kernel/{n}.log": {"node": n} for n in logs})


def test_servers_unreachable_from_most_clients_blames_the_fs_and_notifies(make_facts):
    facts = _facts(make_facts, {"hgx09": LOST, "hgx10": LOST, "hgx17": LOST, "hgx02": QUIET})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable"
    # no node: the clients are victims; timeouts name no target (the path to the servers is down)
    assert f.culprits == ["fs:hpcfs", "job:2211540", "job:2211555"]
    assert [(a.type, a.job) for a in f.suggested_actions] == [("notify_owner", "2211540"), ("notify_owner", "2211555")]
    assert (f.evidence[0].file, f.evidence[0].line) == ("kernel/hgx09.log", 1)
    assert any("blocked for more than 120 seconds" in e.text for e in f.evidence)
    assert "on 3 node(s)" in f.message and "servers or network unreachable" in f.message
    assert f.strength == "direct"


def test_one_client_of_many_is_the_clients_fault(make_facts):
    facts = _facts(make_facts, {"hgx09": LOST, "hgx10": QUIET, "hgx17": QUIET, "hgx02": QUIET})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "fs_client_fault"
    assert f.culprits == ["node:hgx09", "job:2211540"]
    assert [(a.type, a.node) for a in f.suggested_actions] == [("drain_node", "hgx09")]
    assert "1 of 4 node(s) with logs report errors" in f.message


def test_restored_connection_does_not_fire(make_facts):
    # Lost, LNet timeouts to the same server NID, then "Connection restored": a recovered blip.
    facts = _facts(make_facts, {"hgx09": RECOVERED, "hgx10": RECOVERED, "hgx17": QUIET})
    assert check_fs_unavailable(facts, FsUnavailableConfig()) == []


def test_threshold_is_configurable(make_facts):
    # hgx10 lost another target on another server: two clients, each with its own trouble.
    other = LOST.replace("OST000b", "OST000c").replace("172.16.20.16", "172.16.20.17")
    facts = _facts(make_facts, {"hgx09": LOST, "hgx10": other, "hgx17": QUIET})
    # Four error events and a hung task per node: under a threshold of six.
    assert check_fs_unavailable(facts, FsUnavailableConfig(min_events=6)) == []
    # With a higher share, two of three clients are still "few": clients, not servers.
    found = check_fs_unavailable(facts, FsUnavailableConfig(single_client_share=0.7))
    assert [(f.root_cause, f.culprits[0]) for f in found] == [("fs_client_fault", "node:hgx09"),
                                                              ("fs_client_fault", "node:hgx10")]


def test_hostile_job_name_is_plain_data(make_facts):
    squeue = SQUEUE.replace("llama3-8", "$(halt)")
    facts = _facts(make_facts, {"hgx09": LOST, "hgx10": LOST, "hgx17": LOST}, squeue)
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert "job:2211540" in f.culprits and all("halt" not in (a.reason or "") for a in f.suggested_actions)


def test_job_that_ended_before_the_outage_is_not_a_victim(make_facts):
    # sacct: a job on hgx09 was cancelled by its owner at 10:00, hours before OST000b was lost.
    sacct = """JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocTRES|NodeList|
2211400|sweep-3|xia|ml|gpu|CANCELLED by 3001|0:0|2026-11-29T08:00:00|2026-11-29T08:01:00|2026-11-29T10:00:00|01:59:00|12:00:00|1|billing=64,cpu=64,gres/gpu=8,mem=800G,node=1|hgx09|
"""
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("slurm/sacct.txt", "sacct-text", sacct),
                       *[(f"kernel/{n}.log", "kernel-log", LOST) for n in ("hgx09", "hgx10", "hgx17")],
                       **{f"kernel/{n}.log": {"node": n} for n in ("hgx09", "hgx10", "hgx17")})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert "job:2211400" not in f.culprits and "job:2211540" in f.culprits


def test_slow_replies_alone_are_a_symptom_of_load(make_facts):
    # Fires weakly: only "timed out for slow reply" (the server answers, late), no lost connection,
    # no eviction, no hang -- an overloaded MDS/OSS; a check that sees the load should outrank it.
    slow = LOST.splitlines()[0] + "\n" + LOST.splitlines()[0].replace("14:22:40", "14:31:02") + "\n"
    facts = _facts(make_facts, {"hgx09": slow, "hgx10": slow, "hgx02": QUIET})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable" and f.strength == "symptom"


# GPFS (IBM Spectrum Scale) shapes, per the Spectrum Scale problem determination guide: the mmfs log's
# [E]/[N] severity tags, expels on an expired lease, lost membership, unmounts; and mmfsd not running.
GPFS_EXPEL = """2026-11-29_14:22:40.112+0000: [E] Node 10.20.0.9 (hgx09) is being expelled because of an expired lease. Pings sent: 60. Replies received: 0.
2026-11-29_14:22:41.002+0000: [E] Lost membership in cluster gpfs.example.org. Unmounting file systems.
2026-11-29_14:22:41.300+0000: [X] File System scratch unmounted by the system with return code 5 reason code 0
"""
GPFS_DOWN = "Nov 29 14:20:00 hgx17 mmfs[4121]: [E] mmfsd is not running\n"
NFS_DOWN = "[Sun Nov 29 14:22:40 2026] nfs: server nfs01 not responding, still trying\n" * 2
NFS_BACK = NFS_DOWN + "[Sun Nov 29 14:23:40 2026] nfs: server nfs01 OK\n"


def test_gpfs_expel_on_one_client_is_that_clients_fault(make_facts):
    # Fires fs_client_fault: hgx09 was expelled and unmounted the file system; the others are quiet.
    facts = _facts(make_facts, {"hgx09": GPFS_EXPEL, "hgx10": QUIET, "hgx17": QUIET, "hgx02": QUIET})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "fs_client_fault" and f.culprits[:2] == ["node:hgx09", "job:2211540"]
    assert "scratch" in f.message and [a.type for a in f.suggested_actions] == ["drain_node"]


def test_gpfs_daemon_down_on_one_node_with_few_logs_is_a_client_fault(make_facts):
    # Fires: only two nodes have logs (too few to compare), but "mmfsd is not running" is about this client.
    facts = _facts(make_facts, {"hgx17": GPFS_DOWN, "hgx02": QUIET})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert (f.root_cause, f.culprits[0]) == ("fs_client_fault", "node:hgx17")


def test_nfs_server_down_for_everyone_drains_nothing(make_facts):
    # Fires storage_unavailable: every client lost nfs01; the clients are victims, not culprits.
    facts = _facts(make_facts, {"hgx09": NFS_DOWN, "hgx10": NFS_DOWN, "hgx17": NFS_DOWN})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable"
    assert [c for c in f.culprits if c.startswith("node:")] == ["node:nfs01"]  # the server, not a client
    assert f.culprits[0] == "fs:nfs01"  # an NFS mount is known by its server
    assert {a.type for a in f.suggested_actions} == {"notify_owner"}


def test_nfs_server_back_ok_does_not_fire(make_facts):
    # Does not fire: "nfs: server nfs01 OK" after the outage on every client.
    facts = _facts(make_facts, {"hgx09": NFS_BACK, "hgx10": NFS_BACK, "hgx17": NFS_BACK})
    assert check_fs_unavailable(facts, FsUnavailableConfig()) == []


def test_stale_handles_in_a_single_node_jobs_log_name_that_node(make_facts):
    # Fires fs_client_fault from the job log alone: the only job on hgx17 sees ESTALE twice.
    log = ("OSError: [Errno 116] Stale file handle: '/gpfs/scratch/vera/data/shard-0003.tar'\n"
           "OSError: [Errno 116] Stale file handle: '/gpfs/scratch/vera/data/shard-0004.tar'\n")
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("logs/2211555/eval.err", "job-log", log),
                       ("kernel/hgx02.log", "kernel-log", QUIET),
                       **{"logs/2211555/eval.err": {"job": "2211555"}, "kernel/hgx02.log": {"node": "hgx02"}})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "fs_client_fault" and f.culprits[:2] == ["node:hgx17", "job:2211555"]
    assert f.evidence[0].file == "logs/2211555/eval.err"


def test_a_job_that_failed_on_the_expelled_client_is_resubmitted_without_it(make_facts):
    # sacct -P (24.05 layout, NodeList last): job 2211777 died on hgx09 after the expel; 2211540 still runs there.
    sacct = ("JobID|JobName|User|State|ExitCode|Start|End|NodeList\n"
             "2211777|gromacs|ines|FAILED|1:0|2026-11-29T09:00:00|2026-11-29T14:23:10|hgx[09-10]\n")
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("slurm/sacct.txt", "sacct-text", sacct),
                       *[(f"kernel/{n}.log", "kernel-log", t) for n, t in
                         {"hgx09": GPFS_EXPEL, "hgx10": QUIET, "hgx17": QUIET, "hgx02": QUIET}.items()],
                       **{f"kernel/{n}.log": {"node": n} for n in ("hgx09", "hgx10", "hgx17", "hgx02")})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert "job:2211777" in f.culprits and "job:2211540" in f.culprits
    (again,) = [a for a in f.suggested_actions if a.type == "resubmit_from_checkpoint"]
    assert (again.job, again.exclude_nodes) == ("2211777", ["hgx09"])  # the running job is left alone


def test_a_target_answering_every_client_with_errors_is_named(make_facts):
    erofs = ("[Sun Nov 22 05:04:12 2026] LustreError: 11-0: scratch-MDT0000-mdc-ffff9a1c2e4b8000: operation mds_reint "
             "to node 10.50.0.11@o2ib failed: rc = -30\n") * 2
    facts = _facts(make_facts, {"hgx09": erofs, "hgx10": erofs, "hgx17": erofs, "hgx02": QUIET})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable" and "mdt:scratch-MDT0000" in f.culprits


def test_a_slurm_control_host_losing_its_storage_is_not_a_client_to_drain(make_facts):
    ctl = ("[Mon Nov 30 06:48:12 2026] nfs: server adm-nfs02 not responding, still trying\n" * 2
           + "[Mon Nov 30 06:51:40 2026] INFO: task slurmctld:2211 blocked for more than 122 seconds.\n")
    quiet = "[Mon Nov 30 05:10:11 2026] EXT4-fs (nvme0n1p3): mounted filesystem with ordered data mode.\n"
    files = [("kernel/ctl.log", "kernel-log", ctl)] + [(f"kernel/c{i}.log", "kernel-log", quiet) for i in range(4)]
    ctx = {"kernel/ctl.log": {"node": "ctl01"}} | {f"kernel/c{i}.log": {"node": f"c{i}"} for i in range(4)}
    (f,) = check_fs_unavailable(make_facts(*files, **ctx), FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable" and "node:ctl01" in f.culprits
    assert "only the Slurm control host" in f.message and f.suggested_actions == []


# A BeeGFS storage server that stopped answering: each client logs one retry, then its tasks hang in D state.
BEEGFS_RETRY = ("[192631.502110] beegfs: Messaging (RPC)(51830): Retrying communication with node: beegfs-storage "
                "bstor02 [ID: 2]\n[192761.112301] INFO: task python:51830 blocked for more than 122 seconds.\n")


def test_one_beegfs_retry_per_client_with_hung_tasks_is_the_server_for_everyone(make_facts):
    logs = {"hgx09": BEEGFS_RETRY, "hgx10": BEEGFS_RETRY, "hgx17": BEEGFS_RETRY, "hgx02": QUIET}
    (f,) = check_fs_unavailable(_facts(make_facts, logs), FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable" and f.culprits[0] == "fs:beegfs" and "hung task" in f.message
    assert not any(a.type == "drain_node" for a in f.suggested_actions)


def test_two_clients_of_many_naming_the_same_server_are_its_victims_not_faulty_clients(make_facts):
    # Two of seven nodes with logs (under the single-client share) report the same NFS server: not their clients.
    nfs = "[Sun Nov 29 14:22:40 2026] nfs: server home-nfs01 not responding, still trying\n" * 2
    logs = {"hgx09": nfs, "hgx17": nfs} | {f"hgx0{i}": QUIET for i in range(2, 7)}
    (f,) = check_fs_unavailable(_facts(make_facts, logs), FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable"
    # One node alone with its own server trouble stays a client fault.
    logs = {"hgx09": nfs} | {f"hgx0{i}": QUIET for i in range(2, 7)}
    (g,) = check_fs_unavailable(_facts(make_facts, logs), FsUnavailableConfig())
    assert g.root_cause == "fs_client_fault" and g.culprits[0] == "node:hgx09"


# GPFS: the cluster manager expels two NSD servers (mmfs.log.latest lines, no syslog prefix); clients see the
# disks those servers serve fail. A different shape from the NSD-pair report: one client, an NFS-style name.
GPFS_MANAGER = """2026-11-29_14:20:10.100+0000: [N] Node 10.8.0.21 (ess-io3) lease renewal is overdue. Pinging to check if it is alive
2026-11-29_14:21:15.200+0000: [E] Node 10.8.0.21 (ess-io3) is being expelled because of an expired lease. Pings sent: 60. Replies received: 0.
2026-11-29_14:21:16.200+0000: [E] Node 10.8.0.22 (ess-io4) is being expelled because of an expired lease. Pings sent: 60. Replies received: 0.
2026-11-29_14:21:30.000+0000: [E] Disk failure.  Volume work. rc = 19. Physical volume io3_md_07.
"""
GPFS_CLIENT = """2026-11-29_14:22:02.000+0000: [E] Read error on disk io3_md_07 of file system work: no NSD server of the disk is available (err 5)
2026-11-29_14:22:03.000+0000: [E] I/O error on inode 551023 of /work (err 5)
"""


def test_nsd_servers_the_manager_expelled_are_named_with_the_file_system(make_facts):
    facts = _facts(make_facts, {"mgr01": GPFS_MANAGER, "hgx09": GPFS_CLIENT, "hgx10": GPFS_CLIENT, "hgx17": GPFS_CLIENT})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable"
    assert f.culprits[:3] == ["fs:work", "node:ess-io3", "node:ess-io4"]
    assert {a.type for a in f.suggested_actions} == {"notify_owner"}  # no client is drained


def test_a_server_one_client_names_is_not_a_culprit(make_facts):
    # One client's NFS server not responding while the others' logs are quiet: that client's fault, no server named.
    facts = _facts(make_facts, {"hgx09": NFS_DOWN, "hgx10": QUIET, "hgx17": QUIET, "hgx02": QUIET})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "fs_client_fault" and "node:nfs01" not in f.culprits


LFS_DF_ONE_OST_DOWN = """UUID                   1K-blocks        Used   Available Use% Mounted on
hpcfs-MDT0000_UUID    1168087040    34914816  1055306752   4% /hpcfs[MDT:0]
hpcfs-OST000a_UUID   61476352000 40121339904 18282549248  69% /hpcfs[OST:10]
hpcfs-OST000b_UUID   : Resource temporarily unavailable
hpcfs-OST000c_UUID   61476352000 44882102272 13521786880  77% /hpcfs[OST:12]

filesystem_summary:  122952704000 85003442176 31804336128  73% /hpcfs
"""


def test_an_ost_lfs_df_shows_unavailable_among_active_ones_is_named(make_facts):
    files = [("lustre/hpcfs/lfs_df.txt", "lfs-df", LFS_DF_ONE_OST_DOWN)]
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), *files,
                       *[(f"kernel/{n}.log", "kernel-log", LOST) for n in ("hgx09", "hgx10")],
                       **{f"kernel/{n}.log": {"node": n} for n in ("hgx09", "hgx10")})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable" and "ost:hpcfs-OST000b" in f.culprits
    # every target unavailable: the servers or LNet are down, no one target is named
    every = LFS_DF_ONE_OST_DOWN.replace("61476352000 40121339904 18282549248  69% /hpcfs[OST:10]",
                                        ": Resource temporarily unavailable").replace(
        "61476352000 44882102272 13521786880  77% /hpcfs[OST:12]", ": Resource temporarily unavailable").replace(
        "1168087040    34914816  1055306752   4% /hpcfs[MDT:0]", ": Resource temporarily unavailable")
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("lustre/hpcfs/lfs_df.txt", "lfs-df", every))
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert not [c for c in f.culprits if c.startswith(("ost:", "mdt:"))]


# The MGS is down: nodes that mounted before keep waiting; nodes booted since cannot mount at all.
MGS_LOST = """[Sun Nov 29 14:10:00 2026] LustreError: 166-1: MGC10.1.0.5@o2ib: Connection to MGS (at 10.1.0.5@o2ib) was lost; in progress operations using this service will fail
[Sun Nov 29 14:12:00 2026] Lustre: 3120:0:(client.c:2295:ptlrpc_expire_one_request()) @@@ Request sent has failed due to network error: [sent 1795961520/real 1795961520]  req@ffff9d3cb6589fc6 x1818231940112400/t0(0) o250->MGC10.1.0.5@o2ib@10.1.0.5@o2ib:26/25 lens 520/544 e 0 to 1 dl 1795961525 ref 1 fl Rpc:eXNQU/0/ffffffff rc 0/-1 job:''
"""
NO_MOUNT = """[Sun Nov 29 14:20:11 2026] LustreError: 15c-8: MGC10.1.0.5@o2ib: The configuration from log 'hpcfs-client' failed (-5). This may be the result of communication errors between this node and the MGS, a bad configuration, or other errors. See the syslog for more information.
[Sun Nov 29 14:20:11 2026] LustreError: 2904:0:(super25.c:183:lustre_fill_super()) llite: Unable to mount <unknown>: rc = -5
[Sun Nov 29 14:20:12 2026] LNetError: 2895:0:(o2iblnd_cb.c:3472:kiblnd_check_conns()) Timed out RDMA with 10.1.0.5@o2ib (63): c: 0, oc: 0, rc: 32
"""
SINFO = """PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
gpu*         up   infinite      5    mix hgx[01-05]
"""
SACCT_QUICK = ("JobID|JobName|User|State|ExitCode|Start|End|NodeList\n"
               "2211601|prep|ines|FAILED|1:0|2026-11-29T14:21:00|2026-11-29T14:21:06|hgx04\n"
               "2211602|prep|ines|FAILED|1:0|2026-11-29T14:23:00|2026-11-29T14:23:04|hgx04\n"
               "2211603|train|uma|FAILED|1:0|2026-11-29T13:00:00|2026-11-29T14:30:00|hgx05\n")


def test_nodes_that_cannot_mount_while_the_mgs_is_down_are_drained(make_facts):
    logs = {"hgx01": MGS_LOST, "hgx02": MGS_LOST, "hgx03": NO_MOUNT}
    facts = make_facts(("slurm/sinfo.txt", "sinfo-text", SINFO), ("slurm/sacct.txt", "sacct-text", SACCT_QUICK),
                       *[(f"kernel/{n}.log", "kernel-log", t) for n, t in logs.items()],
                       **{f"kernel/{n}.log": {"node": n} for n in logs})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable" and f.culprits[0] == "fs:hpcfs"
    # hgx03 says it cannot mount; hgx04 has no log and every job since failed in seconds; hgx05's job ran 90 min
    assert sorted(a.node for a in f.suggested_actions if a.type == "drain_node") == ["hgx03", "hgx04"]
    assert "node:hgx03" in f.culprits and "node:hgx04" in f.culprits and "node:hgx05" not in f.culprits
    # with no node saying it cannot mount, quick failures alone drain nothing
    logs = {"hgx01": MGS_LOST, "hgx02": MGS_LOST, "hgx03": MGS_LOST}
    facts = make_facts(("slurm/sinfo.txt", "sinfo-text", SINFO), ("slurm/sacct.txt", "sacct-text", SACCT_QUICK),
                       *[(f"kernel/{n}.log", "kernel-log", t) for n, t in logs.items()],
                       **{f"kernel/{n}.log": {"node": n} for n in logs})
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert not [a for a in f.suggested_actions if a.type == "drain_node"]


def test_a_server_whose_own_lnet_fails_to_start_is_named(make_facts):
    oss = ("[   58.219901] LNetError: 4211:0:(o2iblnd.c:3447:kiblnd_startup()) Can't find IB device ib0\n"
           "[   58.220113] LNetError: 105-4: Error -100 starting up LNI o2ib\n")
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("lustre/hpcfs/lfs_df.txt", "lfs-df", LFS_DF_ONE_OST_DOWN),
                       ("kernel/oss7.log", "kernel-log", oss), ("kernel/hgx09.log", "kernel-log", LOST),
                       ("kernel/hgx10.log", "kernel-log", LOST),
                       **{"kernel/oss7.log": {"node": "oss7"}, "kernel/hgx09.log": {"node": "hgx09"},
                          "kernel/hgx10.log": {"node": "hgx10"}})
    (f,) = [x for x in check_fs_unavailable(facts, FsUnavailableConfig()) if x.root_cause == "storage_unavailable"]
    assert "node:oss7" in f.culprits and not [a for a in f.suggested_actions if a.type == "drain_node"]


def test_a_target_inactive_in_one_clients_lfs_df_only_is_that_clients_fault(make_facts):
    # `lfs df` on hgx04 shows OST000b inactive (its OSC left deactivated); on hgx01 every target is active.
    here = LFS_DF_ONE_OST_DOWN.replace("hpcfs-OST000b_UUID   : Resource temporarily unavailable",
                                       "OST000b             : inactive device")
    there = LFS_DF_ONE_OST_DOWN.replace("hpcfs-OST000b_UUID   : Resource temporarily unavailable",
                                        "hpcfs-OST000b_UUID   61476352000 42001339904 16282549248  72% /hpcfs[OST:11]")
    files = [("lustre/hpcfs/lfs_df_hgx04.txt", "lfs-df", here), ("lustre/hpcfs/lfs_df_hgx01.txt", "lfs-df", there)]
    facts = make_facts(("slurm/sinfo.txt", "sinfo-text", SINFO), *files)
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "fs_client_fault" and f.culprits[0] == "node:hgx04"
    assert "lfs df on hgx04: OST000b inactive device (active on other clients)" in f.evidence[0].text
    assert [a.type for a in f.suggested_actions][:1] == ["drain_node"]
    # Both clients see it inactive: the target is down for everyone, no client is drained.
    facts = make_facts(("slurm/sinfo.txt", "sinfo-text", SINFO), ("lustre/hpcfs/lfs_df_hgx04.txt", "lfs-df", here),
                       ("lustre/hpcfs/lfs_df_hgx01.txt", "lfs-df", here))
    (f,) = check_fs_unavailable(facts, FsUnavailableConfig())
    assert f.root_cause == "storage_unavailable" and not any(a.type == "drain_node" for a in f.suggested_actions)
