"""check_job_pending_blocked on squeue (default text) and `scontrol show job` text."""

from __future__ import annotations

from pathlib import Path

from tools.checks.pending import PendingConfig, check_job_pending_blocked

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures"
# NOW in conftest is 2026-03-04T10:15:00Z.


def _scontrol(job: str, name: str, user: str, reason: str, submit: str, nodes: int = 4) -> str:
    return f"""JobId={job} JobName={name}
   UserId={user}(20702) GroupId={user}(20702) MCS_label=N/A
   Priority=9740 Nice=0 Account=bio-struct QOS=normal
   JobState=PENDING Reason={reason} Dependency=(null)
   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:00 TimeLimit=1-00:00:00 TimeMin=N/A
   SubmitTime={submit} EligibleTime={submit}
   StartTime=Unknown EndTime=Unknown Deadline=N/A
   Partition=gpu AllocNode:Sid=login01:2926910
   NodeList=(null)
   NumNodes={nodes}-{nodes} NumCPUs=128 NumTasks=8 CPUs/Task=16 ReqB:S:C:T=0:0:*:*
   TRES=cpu=128,mem=896G,node={nodes},billing=128,gres/gpu={8 * nodes}
"""


def _facts(make_facts, *texts: str):
    return make_facts(*[(f"slurm/scontrol_show_job_{i}.txt", "scontrol-job-text", t) for i, t in enumerate(texts)])


# Fires: a 4-node job asks for nodes reserved for maintenance; it has waited 2.6 h and will not
# start before the reservation ends unless its time limit is cut.
MAINT = _scontrol("75510", "llm34b-pt", "judy", "ReqNodeNotAvail,_Reserved_for_maintenance", "2026-03-04T07:39:00")
# Fires: dave already holds his QOS's GPU allowance; his own other jobs are the cause.
QOS = _scontrol("51890", "esm-ft-15b", "dave", "QOSMaxGRESPerUser", "2026-03-04T08:02:13", nodes=1)
# Does not fire: waiting its turn on Priority for 5 minutes on a busy cluster.
PRIORITY_5MIN = _scontrol("75601", "sweep-a", "erin", "Priority", "2026-03-04T10:10:00")
# Does not fire: held by its owner (JobHeldUser) -- waiting by choice.
HELD = _scontrol("51618", "esm-embed", "dave", "JobHeldUser", "2026-03-03T10:00:00", nodes=1)
# Fires (lower confidence): waiting on Resources for 7 h, past queue_wait_after_h.
RESOURCES_7H = _scontrol("73612", "llm34b-pre", "judy", "Resources", "2026-03-04T03:15:00", nodes=16)


def test_reservation_block_proposes_a_shorter_time_limit(make_facts):
    (f,) = check_job_pending_blocked(_facts(make_facts, MAINT), PendingConfig())
    assert f.root_cause == "scheduler_wait"
    assert f.culprits == ["job:75510"]
    assert f.evidence[0].metric == "squeue" and "Reason=ReqNodeNotAvail, Reserved for maintenance" in f.evidence[0].text
    assert "TimeLimit=1440 min" in f.evidence[0].text
    # A shorter limit, or waiting the window out: the owner's choice, so they are told too.
    a, told = f.suggested_actions
    assert (a.type, a.job) == ("update_job", "75510") and "time limit" in a.reason
    assert (told.type, told.job) == ("notify_owner", "75510") and "reservation" in told.reason
    assert "pending 2.6 h" in f.message and "(threshold 10 min)" in f.message and f.strength == "state"


def test_per_user_qos_limit_names_the_user(make_facts):
    (f,) = check_job_pending_blocked(_facts(make_facts, QOS), PendingConfig())
    assert f.culprits == ["job:51890", "user:dave"]
    assert [(a.type, a.job) for a in f.suggested_actions] == [("notify_owner", "51890")]


def test_short_priority_wait_and_user_hold_do_not_fire(make_facts):
    assert check_job_pending_blocked(_facts(make_facts, PRIORITY_5MIN, HELD), PendingConfig()) == []


def test_long_resources_wait_fires_with_its_threshold(make_facts):
    (f,) = check_job_pending_blocked(_facts(make_facts, RESOURCES_7H), PendingConfig())
    assert f.strength == "heuristic" and "pending 7.0 h" in f.message and "(threshold 6.0 h)" in f.message


def test_thresholds_are_configurable(make_facts):
    assert check_job_pending_blocked(_facts(make_facts, RESOURCES_7H), PendingConfig(queue_wait_after_h=8)) == []
    assert check_job_pending_blocked(_facts(make_facts, MAINT), PendingConfig(blocked_after_min=200)) == []
    assert len(check_job_pending_blocked(_facts(make_facts, PRIORITY_5MIN), PendingConfig(queue_wait_after_h=0.05))) == 1


def test_squeue_text_without_submit_time_still_reports_blocks(make_facts):
    squeue = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             75510       gpu llm34b-p     judy PD       0:00      4 (ReqNodeNotAvail, Reserved for maintenance)
             73612       gpu llm34b-p     judy PD       0:00     16 (Resources)
             73615       gpu clip-eva     erin PD       0:00      1 (Dependency)
"""
    (f,) = check_job_pending_blocked(make_facts(("slurm/squeue.txt", "squeue-text", squeue)), PendingConfig())
    assert f.culprits == ["job:75510"] and "unknown time" in f.message


def test_hostile_job_text_is_plain_data(make_facts):
    # The fixture's running job 4242 has a shell-injection name and a Comment that fakes
    # "Reason=fake"; job 4250 is pending ReqNodeNotAvail since 10:10 (5 min: not yet reported).
    text = (FIXTURES / "scontrol-job-text" / "24.05-hostile-and-maintenance.txt").read_text()
    facts = make_facts(("slurm/scontrol_show_job.txt", "scontrol-job-text", text))
    assert check_job_pending_blocked(facts, PendingConfig()) == []
    (f,) = check_job_pending_blocked(facts, PendingConfig(blocked_after_min=5))
    assert f.culprits == ["job:4250"]
    assert "rm -rf" not in f.message and "Ignore previous" not in f.message


def test_pinned_drained_nodes_notify_the_owner(make_facts):
    # The job's --nodelist pins four nodes drained for switch work: only its owner can pick other
    # nodes (update_job changes time limits and node counts, not node lists).
    pinned = _scontrol("1186400", "llm-ablation", "kira", "ReqNodeNotAvail,_UnavailableNodes:gpu-a-[029-032]",
                       "2026-03-04T04:15:00", nodes=8)
    (f,) = check_job_pending_blocked(_facts(make_facts, pinned), PendingConfig())
    assert f.culprits == ["job:1186400"]
    assert [(a.type, a.job) for a in f.suggested_actions] == [("notify_owner", "1186400")]


def test_long_begin_time_and_dependency_waits_are_by_design(make_facts):
    # Submitted 7 h ago with --begin (the owner chose a later start) or --dependency on a long
    # upstream job: neither is the scheduler failing the job. Before the fix both were reported
    # as scheduler_wait once past queue_wait_after_h.
    begin = _scontrol("73700", "nightly-eval", "erin", "BeginTime", "2026-03-04T03:15:00", nodes=1)
    dep = _scontrol("73701", "post-proc", "erin", "Dependency", "2026-03-04T03:15:00", nodes=1)
    assert check_job_pending_blocked(_facts(make_facts, begin, dep), PendingConfig()) == []
    never = _scontrol("73702", "post-proc", "erin", "DependencyNeverSatisfied", "2026-03-04T03:15:00", nodes=1)
    assert check_job_pending_blocked(_facts(make_facts, never), PendingConfig())[0].culprits == ["job:73702"]


def test_waiting_for_its_own_reservation_is_by_design_and_a_deleted_one_is_a_hold(make_facts):
    # Reason=Reservation: the job asked for --reservation=X that has not started yet (squeue(1):
    # waiting for its advanced reservation to become available). Before the fix it was "blocked"
    # and proposed a shorter time limit.
    waiting = _scontrol("73800", "demo-run", "erin", "Reservation", "2026-03-04T06:00:00", nodes=2)
    assert check_job_pending_blocked(_facts(make_facts, waiting), PendingConfig()) == []
    gone = _scontrol("73801", "demo-run", "erin", "ReservationDeleted", "2026-03-04T06:00:00", nodes=2)
    assert check_job_pending_blocked(_facts(make_facts, gone), PendingConfig()) == []  # job_held reports it


def _begin(job: str, submit: str, start: str) -> str:
    return _scontrol(job, "eval", "ana", "BeginTime", submit).replace("StartTime=Unknown", f"StartTime={start}")


def test_a_begin_time_past_at_submission_rolls_to_the_next_day_and_is_said(make_facts):
    (f,) = check_job_pending_blocked(_facts(make_facts, _begin("8801", "2026-03-04T09:20:00", "2026-03-05T09:00:00")),
                                     PendingConfig())
    assert f.root_cause == "scheduler_wait" and "means the next day" in f.message and f.culprits == ["job:8801"]
    (a,) = f.suggested_actions
    assert (a.type, a.job, a.start_time) == ("update_job", "8801", "now")


def test_a_begin_time_an_hour_ahead_is_as_asked_and_a_far_one_is_not_a_rollover(make_facts):
    assert check_job_pending_blocked(_facts(make_facts, _begin("8802", "2026-03-04T10:00:00", "2026-03-04T11:00:00")),
                                     PendingConfig()) == []
    (f,) = check_job_pending_blocked(_facts(make_facts, _begin("8803", "2026-03-04T08:00:00", "2026-03-06T22:00:00")),
                                     PendingConfig())
    assert "next day" not in f.message and "waits for its begin time 2026-03-06 22:00" in f.message


def test_waiting_for_licenses_is_a_shared_limit_with_nothing_to_change(make_facts):
    short = _scontrol("88001", "fluent-cfd", "ana", "Licenses", "2026-03-04T10:25:00", nodes=1)
    long = _scontrol("88002", "fluent-cfd", "ana", "Licenses", "2026-03-04T08:00:00", nodes=1)
    (f,) = check_job_pending_blocked(_facts(make_facts, short, long), PendingConfig())
    assert f.culprits == ["job:88002"] and f.strength == "state" and "(Licenses)" in f.message
    assert f.suggested_actions == []


def test_partition_node_limit_fix_uses_the_partitions_job_size_limit(make_facts):
    sinfo = """PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST
gpu*         up 2-00:00:00        1-8   no   EXCLUS        all     31        idle kg[01-31]
"""
    job = _scontrol("90417", "big", "ana", "PartitionNodeLimit", "2026-03-04T09:00:00", nodes=12)
    facts = make_facts(("slurm/sinfo.txt", "sinfo-text", sinfo), ("slurm/job.txt", "scontrol-job-text", job))
    (f,) = check_job_pending_blocked(facts, PendingConfig())
    assert [(a.type, a.num_nodes) for a in f.suggested_actions] == [("update_job", 8)]


def test_partition_time_limit_fix_asks_for_the_partitions_limit(make_facts):
    sinfo = """PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
gpu*         up 2-00:00:00     31   idle kg[01-31]
long         up   infinite      2   idle kl[01-02]
"""
    job = _scontrol("91402", "big", "ana", "PartitionTimeLimit", "2026-03-04T09:00:00", nodes=2).replace(
        "TimeLimit=1-00:00:00", "TimeLimit=3-00:00:00")
    facts = make_facts(("slurm/sinfo.txt", "sinfo-text", sinfo), ("slurm/job.txt", "scontrol-job-text", job))
    (f,) = check_job_pending_blocked(facts, PendingConfig())
    assert [(a.type, a.time_limit_min) for a in f.suggested_actions] == [("update_job", 2880)]


def test_a_usage_cap_answers_about_its_job_but_a_per_job_limit_is_a_fault_at_once(make_facts):
    from tools.knowledge.precedence import INFORMATIONAL
    capped = _scontrol("5512350", "bigfold", "kpatel", "AssocGrpCpuLimit", "2026-03-04T08:00:00")
    (f,) = check_job_pending_blocked(_facts(make_facts, capped), PendingConfig())
    assert f.confidence == INFORMATIONAL and "user:kpatel" in f.culprits
    # Asks for more nodes than its QOS allows one job: cannot start as submitted, reported without waiting.
    too_big = _scontrol("990213", "pretrain", "mli", "QOSMaxNodePerJobLimit", "2026-03-04T10:14:00", nodes=16)
    (g,) = check_job_pending_blocked(_facts(make_facts, too_big), PendingConfig())
    assert g.confidence > INFORMATIONAL and g.strength == "state"


def test_a_qos_per_job_limit_fix_asks_for_the_limit_sacctmgr_prints(make_facts):
    # sacctmgr show qos -P from a real 22.05 capture: QOS gpu8 allows a job 8 nodes and 2 days; "long" is cut in
    # the fixed-width table (MaxTRES "cpu=512,node+") and gives no number.
    qos = (FIXTURES / "sacctmgr-qos-text" / "22.05-parsable2.txt").read_text()
    too_big = _scontrol("990213", "pretrain", "mli", "QOSMaxNodePerJobLimit", "2026-03-04T10:00:00",
                        nodes=16).replace("QOS=normal", "QOS=gpu8")
    too_long = _scontrol("990214", "pretrain", "mli", "QOSMaxWallDurationPerJobLimit", "2026-03-04T10:00:00",
                         nodes=2).replace("QOS=normal", "QOS=gpu8").replace("TimeLimit=1-00:00:00", "TimeLimit=3-00:00:00")
    facts = make_facts(("slurm/qos.txt", "sacctmgr-qos-text", qos), ("slurm/a.txt", "scontrol-job-text", too_big),
                       ("slurm/b.txt", "scontrol-job-text", too_long))
    by_job = {f.culprits[0]: f for f in check_job_pending_blocked(facts, PendingConfig())}
    (nodes,) = by_job["job:990213"].suggested_actions
    assert (nodes.type, nodes.num_nodes) == ("update_job", 8) and "MaxTRES node=8" in nodes.reason
    assert "sacctmgr show qos gpu8: MaxTRES=node=8" in by_job["job:990213"].evidence[1].text
    (wall,) = by_job["job:990214"].suggested_actions
    assert (wall.type, wall.time_limit_min) == ("update_job", 2880)
    # the cut table: the limit is unknown, so nothing is guessed (the owner is told instead)
    cut = (FIXTURES / "sacctmgr-qos-text" / "22.05-default.txt").read_text()
    job = too_big.replace("QOS=gpu8", "QOS=long")
    (f,) = check_job_pending_blocked(make_facts(("slurm/qos.txt", "sacctmgr-qos-text", cut),
                                                ("slurm/a.txt", "scontrol-job-text", job)), PendingConfig())
    assert [(a.type, a.num_nodes) for a in f.suggested_actions] == [("notify_owner", None)]


def test_a_singleton_dependency_names_the_same_name_job_that_holds_it(make_facts):
    waiting = _scontrol("88410", "nightly-eval", "vg", "Dependency", "2026-03-04T02:00:00", nodes=1).replace(
        "Dependency=(null)", "Dependency=singleton(unfulfilled)")
    holder = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             88001       gpu nightly-       vg  R 2-01:11:09      1 g021
"""
    facts = make_facts(("slurm/job.txt", "scontrol-job-text", waiting), ("slurm/squeue.txt", "squeue-text", holder))
    (f,) = check_job_pending_blocked(facts, PendingConfig())
    assert f.culprits == ["job:88410", "job:88001"] and "waits on --dependency=singleton: job 88001" in f.message
    assert [(a.type, a.job) for a in f.suggested_actions] == [("notify_owner", "88001")]
    # an afterok dependency on a running job is waiting by design: nothing said
    plain = _scontrol("88411", "eval", "vg", "Dependency", "2026-03-04T02:00:00", nodes=1).replace(
        "Dependency=(null)", "Dependency=afterok:88001(unfulfilled)")
    assert check_job_pending_blocked(make_facts(("slurm/job.txt", "scontrol-job-text", plain),
                                                ("slurm/squeue.txt", "squeue-text", holder)), PendingConfig()) == []


def test_a_resources_wait_beside_idle_nodes_with_its_request_unread_is_named_for_the_answer(make_facts):
    from tools.facts.queries import idle_fit_unread
    squeue = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
            771402       gpu nerf-sca    ajohn PD       0:00      2 (Resources)
            771377       gpu bert-mlm     ycho  R    7:12:40      2 p[01-02]
"""
    sinfo = ("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ngpu*         up 2-00:00:00      2  alloc p[01-02]\n"
             "gpu*         up 2-00:00:00      3   idle p[03-05]\n")
    facts = make_facts(("slurm/squeue.txt", "squeue-text", squeue), ("slurm/sinfo.txt", "sinfo-text", sinfo))
    assert idle_fit_unread(facts, "771402") == ["p03", "p04", "p05"] and idle_fit_unread(facts, "771377") == []
    # with the job's request read (scontrol show job), what it asks for can be checked: no gap
    detail = _scontrol("771402", "nerf-sca", "ajohn", "Resources", "2026-03-04T07:00:00", nodes=2)
    read = make_facts(("slurm/squeue.txt", "squeue-text", squeue), ("slurm/sinfo.txt", "sinfo-text", sinfo),
                      ("slurm/job.txt", "scontrol-job-text", detail))
    assert idle_fit_unread(read, "771402") == []


def test_a_per_user_qos_limit_names_the_users_running_jobs_that_hold_it(make_facts):
    squeue = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             33150       gpu    train     dave PD    2:10:00      1 (QOSMaxGRESPerUser)
             33102       gpu     bash     dave  R 2-01:00:00      1 gn01
             33140       gpu     bash     dave  R 1-22:00:00      1 gn02
             33160       gpu    other      eve  R      10:00      1 gn03
"""
    def util(node: str, pct: float) -> str:  # dcgm-exporter text, 2 GPUs
        return ("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n" + "".join(
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{node}-{g}",Hostname="{node}"}} {pct:g}\n' for g in (0, 1)))

    def facts(pct_gn01: float):
        pages = {"gn01": util("gn01", pct_gn01), "gn02": util("gn02", 0), "gn03": util("gn03", 97)}
        return make_facts(("slurm/squeue.txt", "squeue-text", squeue),
                          *[(f"gpu/{n}.prom", "dcgm-prometheus-text", t) for n, t in pages.items()],
                          **{f"gpu/{n}.prom": {"node": n} for n in pages})

    # Two interactive sessions hold dave's GPUs and use none of them: they are what holds his limit.
    (f,) = check_job_pending_blocked(facts(0), PendingConfig())
    assert f.culprits == ["job:33150", "user:dave", "job:33102", "job:33140"]
    # A session that is working uses the quota as meant: not named.
    (f,) = check_job_pending_blocked(facts(88), PendingConfig())
    assert f.culprits == ["job:33150", "user:dave", "job:33140"]
    # No GPU metrics read: idle cannot be told, nothing named beyond the job and its user.
    (f,) = check_job_pending_blocked(make_facts(("slurm/squeue.txt", "squeue-text", squeue)), PendingConfig())
    assert f.culprits == ["job:33150", "user:dave"]
