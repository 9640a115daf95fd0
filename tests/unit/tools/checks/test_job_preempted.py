"""check_job_preempted on sacct -p, squeue and job-log text."""

from __future__ import annotations

from tools.checks.job_preempted import JobPreemptedConfig, check_job_preempted

SACCT = """JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocTRES|NodeList|
55120|scav-ft|omar|ml|scavenger|PREEMPTED|0:15|2026-06-01T01:00:00|2026-06-01T01:05:00|2026-06-01T06:12:40|05:07:40|2-00:00:00|2|billing=96,gres/gpu=16,node=2|gpu[21-22]|
55121|eval|omar|ml|gpu|COMPLETED|0:0|2026-06-01T01:00:00|2026-06-01T01:05:00|2026-06-01T02:00:00|00:55:00|04:00:00|1|billing=48,gres/gpu=8,node=1|gpu23|
"""
LOG = ("2026-06-01 05:40:00 saved checkpoint to /scratch/omar/ckpt/step_004000\n"
       "slurmstepd: error: *** JOB 55120 ON gpu21 CANCELLED AT 2026-06-01T06:12:40 DUE TO PREEMPTION ***\n")
REQUEUED = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
            318442 scavenger  sweep-3     lena PD       0:00      1 (Preempted)
"""


def test_cancelled_by_preemption_resubmits_from_its_newest_checkpoint(make_facts):
    facts = make_facts(("slurm/sacct.txt", "sacct-text", SACCT), ("logs/55120/out", "job-log", LOG),
                       **{"logs/55120/out": {"job": "55120"}})
    (f,) = check_job_preempted(facts, JobPreemptedConfig())
    assert f.root_cause == "job_preempted" and f.culprits == ["job:55120"]
    resubmit, notify = f.suggested_actions
    assert (resubmit.type, resubmit.checkpoint, resubmit.exclude_nodes) == (
        "resubmit_from_checkpoint", "/scratch/omar/ckpt/step_004000", [])
    assert notify.type == "notify_owner" and len(f.evidence) == 2  # sacct and the job log agree


def test_requeued_by_preemption_only_tells_the_owner(make_facts):
    (f,) = check_job_preempted(make_facts(("slurm/squeue.txt", "squeue-text", REQUEUED)), JobPreemptedConfig())
    assert "requeued by preemption" in f.message
    assert [a.type for a in f.suggested_actions] == ["notify_owner"]


def test_jobs_that_ended_otherwise_do_not_fire(make_facts):
    sacct = SACCT.replace("PREEMPTED", "FAILED")
    assert check_job_preempted(make_facts(("slurm/sacct.txt", "sacct-text", sacct)), JobPreemptedConfig()) == []


# PreemptMode=SUSPEND: a higher-tier partition's job runs on gn[05-06] while 733104 sits suspended there
# (its GPUs keep their memory and show 0 % use). The owner is told; nothing is resubmitted or requeued.
SUSPENDED = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
            733104       gpu mistral-   lmeyer  S    5:59:00      2 gn[05-06]
            733190 cpu-urgen wrf-urge   metops  R    1:43:58      2 gn[05-06]
"""


def test_a_job_suspended_under_a_higher_tier_job_is_preempted_not_hung(make_facts):
    (f,) = check_job_preempted(make_facts(("slurm/squeue.txt", "squeue-text", SUSPENDED)), JobPreemptedConfig())
    assert f.culprits == ["job:733104"] and "suspended by preemption: 733190 took its nodes" in f.message
    assert [a.type for a in f.suggested_actions] == ["notify_owner"]


def test_a_suspended_job_alone_on_its_nodes_is_still_said_to_resume_when_released(make_facts):
    alone = SUSPENDED.splitlines()[0] + "\n" + SUSPENDED.splitlines()[1] + "\n"
    (f,) = check_job_preempted(make_facts(("slurm/squeue.txt", "squeue-text", alone)), JobPreemptedConfig())
    assert "scontrol suspend" in f.message and [a.type for a in f.suggested_actions] == ["notify_owner"]


def test_preempted_then_a_failed_next_run_leaves_the_preemption_as_history(make_facts):
    # sacct with duplicates (the requeued job's two runs), the second FAILED at resume
    rerun = SACCT.replace("55121|eval|omar|ml|gpu|COMPLETED", "55120|scav-ft|omar|ml|scavenger|FAILED").replace(
        "|0:0|2026-06-01T01:00:00|2026-06-01T01:05:00|2026-06-01T02:00:00",
        "|1:0|2026-06-01T01:00:00|2026-06-01T06:40:00|2026-06-01T06:43:00")
    facts = make_facts(("slurm/sacct.txt", "sacct-text", rerun))
    (f,) = check_job_preempted(facts, JobPreemptedConfig())
    assert "next run then ended FAILED" in f.message and f.confidence < 0.5
    assert [a.type for a in f.suggested_actions] == ["notify_owner"]  # no resubmit: the failure is another finding's


def test_preempted_then_requeued_and_running_again_is_the_policy_working(make_facts):
    # sacct's PREEMPTED row of the first run (sacct -D keeps it) and squeue showing the requeued job running.
    running = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             55120 scavenger   scav-ft     omar  R      41:07      2 gpu[24-25]
"""
    facts = make_facts(("slurm/sacct.txt", "sacct-text", SACCT), ("logs/55120/out", "job-log", LOG),
                       ("slurm/squeue.txt", "squeue-text", running), **{"logs/55120/out": {"job": "55120"}})
    (f,) = check_job_preempted(facts, JobPreemptedConfig())
    assert f.root_cause == "healthy" and "is RUNNING again" in f.message and f.suggested_actions == []
    # Still pending after the requeue: the owner is told, nothing resubmitted.
    pending = running.replace(" R      41:07      2 gpu[24-25]", " PD       0:00      2 (Priority)")
    facts = make_facts(("slurm/sacct.txt", "sacct-text", SACCT), ("slurm/squeue.txt", "squeue-text", pending))
    (f,) = check_job_preempted(facts, JobPreemptedConfig())
    assert f.root_cause == "job_preempted" and [a.type for a in f.suggested_actions] == ["notify_owner"]
