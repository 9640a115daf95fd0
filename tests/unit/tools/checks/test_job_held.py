"""check_job_held on scontrol show job text (Slurm 22.05-24.11 key=value layout)."""

from __future__ import annotations

from tools.checks.job_held import JobHeldConfig, check_job_held
from tools.knowledge.precedence import INFORMATIONAL


def _job(job_id: str, reason: str, priority: int, restarts: int = 0, nodes: int = 2) -> str:
    return (f"JobId={job_id} JobName=train UserId=ana(1001) GroupId=ana(1001)\n"
            f"   Priority={priority} Nice=0 Account=ml QOS=normal\n"
            f"   JobState=PENDING Reason={reason} Dependency=(null)\n"
            f"   Requeue=1 Restarts={restarts} BatchFlag=1 Reboot=0 ExitCode=0:0\n"
            f"   NumNodes={nodes} NumCPUs=96 NumTasks=16\n   Features=(null) DelayBoot=00:00:00\n")


def _facts(make_facts, *jobs: str):
    return make_facts(("slurm/scontrol_show_job.txt", "scontrol-job-text", "\n".join(jobs)))


def test_launch_failed_requeued_held_is_released(make_facts):
    (f,) = check_job_held(_facts(make_facts, _job("90412", "launch_failed_requeued_held", 0, 1)), JobHeldConfig())
    assert f.root_cause == "job_held" and f.culprits == ["job:90412"]
    assert [(a.type, a.job) for a in f.suggested_actions] == [("release_job", "90412")]
    assert "launch failed" in f.message and f.strength == "state"


def test_bad_constraints_after_a_requeue_re_sets_the_node_count(make_facts):
    (f,) = check_job_held(_facts(make_facts, _job("77310", "BadConstraints", 4294901759, 1, nodes=1)), JobHeldConfig())
    assert [(a.type, a.num_nodes) for a in f.suggested_actions] == [("update_job", 1), ("notify_owner", None)]


def test_bad_constraints_without_a_requeue_is_not_a_hold(make_facts):
    assert check_job_held(_facts(make_facts, _job("5", "BadConstraints", 100, 0)), JobHeldConfig()) == []


def test_a_persons_hold_is_informational_and_never_released(make_facts):
    found = check_job_held(_facts(make_facts, _job("1", "JobHeldUser", 0), _job("2", "JobHeldAdmin", 0)), JobHeldConfig())
    assert [f.confidence for f in found] == [INFORMATIONAL, INFORMATIONAL]
    assert {a.type for f in found for a in f.suggested_actions} == {"notify_owner"}


def test_user_holds_can_be_left_out(make_facts):
    assert check_job_held(_facts(make_facts, _job("1", "JobHeldUser", 0)), JobHeldConfig(report_user_holds=False)) == []


def test_held_after_reaching_the_requeue_limit_is_released_like_a_failed_launch(make_facts):
    text = """JobId=60440 JobName=wav2vec
   UserId=nsato(20702) GroupId=nsato(20702) MCS_label=N/A
   Priority=0 Nice=0 Account=speech QOS=normal
   JobState=PENDING Reason=JobHoldMaxRequeue Dependency=(null)
   Requeue=1 Restarts=5 BatchFlag=1 Reboot=0 ExitCode=0:0
   SubmitTime=2026-03-03T18:00:00 EligibleTime=2026-03-03T18:00:00
   Partition=gpu NodeList=(null) NumNodes=2-2 NumCPUs=64 NumTasks=16
"""
    (f,) = check_job_held(make_facts(("slurm/job.txt", "scontrol-job-text", text)), JobHeldConfig())
    assert "MaxBatchRequeue" in f.message and [(a.type, a.job) for a in f.suggested_actions] == [("release_job", "60440")]


def test_reservation_deleted_in_squeue_and_scontrol_words_is_a_hold(make_facts):
    # squeue's reason code and scontrol's of the same hold (Priority=0 set by slurmctld)
    squeue = ("             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
              "             48811       gpu   bench4      ana PD       0:00      2 (ReservationDeleted)\n")
    (f,) = check_job_held(make_facts(("slurm/squeue.txt", "squeue-text", squeue)), JobHeldConfig())
    assert f.root_cause == "job_held" and "reservation it was submitted to was deleted" in f.message
    assert [a.type for a in f.suggested_actions] == ["release_job", "notify_owner"]
    (f,) = check_job_held(_facts(make_facts, _job("48812", "ReservationDeleted", 0)), JobHeldConfig())
    assert f.culprits == ["job:48812"] and f.suggested_actions[0].type == "release_job"
    # a job waiting for its reservation to start is not held
    (none,) = [check_job_held(_facts(make_facts, _job("48813", "Reservation", 10234)), JobHeldConfig())]
    assert none == []


def test_a_job_requeued_held_on_its_exit_code_is_held_by_slurm_and_released(make_facts):
    # RequeueExitHold=75 in slurm.conf: the job exited 75, Slurm requeued it held (SPECIAL_EXIT, JobHeldUser).
    show = ("JobId=71220 JobName=distill\n   UserId=lchen(51022) GroupId=ml(5100) MCS_label=N/A\n"
            "   Priority=0 Nice=0 Account=ml QOS=normal\n   JobState=SPECIAL_EXIT Reason=JobHeldUser Dependency=(null)\n"
            "   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=75:0\n   NumNodes=1 NumCPUs=32 NumTasks=1\n")
    (f,) = check_job_held(make_facts(("slurm/job.txt", "scontrol-job-text", show)), JobHeldConfig())
    assert f.root_cause == "job_held" and "RequeueExitHold" in f.message and "State=SPECIAL_EXIT" in f.evidence[0].text
    assert [(a.type, a.job) for a in f.suggested_actions] == [("release_job", "71220")]
