"""check_lustre_unavailable on Lustre client kernel lines (dmesg -T) from several nodes."""

from __future__ import annotations

from tools.checks.storage_unavailable import LustreUnavailableConfig, check_lustre_unavailable

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
    (f,) = check_lustre_unavailable(facts, LustreUnavailableConfig())
    assert f.root_cause == "storage_unavailable"
    assert f.culprits == ["fs:hpcfs", "job:2211540", "job:2211555"]  # no node: the clients are victims
    assert [(a.type, a.job) for a in f.suggested_actions] == [("notify_owner", "2211540"), ("notify_owner", "2211555")]
    assert (f.evidence[0].file, f.evidence[0].line) == ("kernel/hgx09.log", 1)
    assert any("blocked for more than 120 seconds" in e.text for e in f.evidence)
    assert "on 3 of 4 node(s)" in f.message and "threshold 2 per node" in f.message
    assert "servers or LNet unreachable" in f.message and f.confidence == 0.8


def test_one_client_of_many_is_the_clients_fault(make_facts):
    facts = _facts(make_facts, {"hgx09": LOST, "hgx10": QUIET, "hgx17": QUIET, "hgx02": QUIET})
    (f,) = check_lustre_unavailable(facts, LustreUnavailableConfig())
    assert f.culprits == ["node:hgx09", "fs:hpcfs", "job:2211540"]
    assert [(a.type, a.node) for a in f.suggested_actions] == [("drain_node", "hgx09")]
    assert "confined to these clients" in f.message


def test_restored_connection_does_not_fire(make_facts):
    # Lost, LNet timeouts to the same server NID, then "Connection restored": a recovered blip.
    facts = _facts(make_facts, {"hgx09": RECOVERED, "hgx10": RECOVERED, "hgx17": QUIET})
    assert check_lustre_unavailable(facts, LustreUnavailableConfig()) == []


def test_threshold_is_configurable(make_facts):
    facts = _facts(make_facts, {"hgx09": LOST, "hgx10": LOST, "hgx17": QUIET})
    assert check_lustre_unavailable(facts, LustreUnavailableConfig(min_events=5)) == []
    # With a lower share, two of three clients count as "many": servers, not clients.
    (f,) = check_lustre_unavailable(facts, LustreUnavailableConfig(single_client_share=0.7))
    assert f.culprits[:2] == ["node:hgx09", "node:hgx10"]


def test_hostile_job_name_is_plain_data(make_facts):
    squeue = SQUEUE.replace("llama3-8", "$(halt)")
    facts = _facts(make_facts, {"hgx09": LOST, "hgx10": LOST, "hgx17": LOST}, squeue)
    (f,) = check_lustre_unavailable(facts, LustreUnavailableConfig())
    assert "job:2211540" in f.culprits and all("halt" not in (a.reason or "") for a in f.suggested_actions)


def test_job_that_ended_before_the_outage_is_not_a_victim(make_facts):
    # sacct: a job on hgx09 was cancelled by its owner at 10:00, hours before OST000b was lost.
    sacct = """JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocTRES|NodeList|
2211400|sweep-3|xia|ml|gpu|CANCELLED by 3001|0:0|2026-11-29T08:00:00|2026-11-29T08:01:00|2026-11-29T10:00:00|01:59:00|12:00:00|1|billing=64,cpu=64,gres/gpu=8,mem=800G,node=1|hgx09|
"""
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("slurm/sacct.txt", "sacct-text", sacct),
                       *[(f"kernel/{n}.log", "kernel-log", LOST) for n in ("hgx09", "hgx10", "hgx17")],
                       **{f"kernel/{n}.log": {"node": n} for n in ("hgx09", "hgx10", "hgx17")})
    (f,) = check_lustre_unavailable(facts, LustreUnavailableConfig())
    assert "job:2211400" not in f.culprits and "job:2211540" in f.culprits


def test_slow_replies_alone_are_a_symptom_of_load(make_facts):
    # Fires weakly: only "timed out for slow reply" (the server answers, late), no lost connection,
    # no eviction, no hang -- an overloaded MDS/OSS; a check that sees the load should outrank it.
    slow = LOST.splitlines()[0] + "\n" + LOST.splitlines()[0].replace("14:22:40", "14:31:02") + "\n"
    facts = _facts(make_facts, {"hgx09": slow, "hgx10": slow, "hgx02": QUIET})
    (f,) = check_lustre_unavailable(facts, LustreUnavailableConfig())
    assert f.confidence == 0.5
