"""check_node_clock on slurmd/munged/chronyd/ntpd syslog lines and srun launch failures in job logs."""

from __future__ import annotations

from tools.checks.node_clock import NodeClockConfig, check_node_clock

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             60420       gpu  wavlm-2  gmoreau PD       0:00      1 (Priority)
"""
SINFO = """PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
gpu*         up   infinite      3   idle n-[05-07]
"""
CHRONY = ("Nov 30 22:41:03 n-07 chronyd[1180]: Source 10.30.0.5 offline\n"
          "Nov 30 22:41:03 n-07 chronyd[1180]: Can't synchronise: no selectable sources\n")
SLURMD = ("Dec 01 11:06:28 n-07 slurmd[2301]: error: Invalid job credential from 40122@10.30.0.15: Job credential expired\n")
MUNGED = ("Mar 04 09:58:02 n-07 munged[911]: Unauthorized credential for client UID=0 GID=0\n"
          "Mar 04 09:58:03 n-07 slurmd[2301]: error: Munge decode failed: Expired credential\n"
          "Mar 04 09:57:50 n-07 ntpd[870]: no servers can be used, system clock unsynchronized\n")
SRUN = ("srun: error: Task launch for StepId=60413.0 failed on node n-07: Job credential expired\n"
        "srun: error: Application launch failed: Job credential expired\n")


def _facts(make_facts, kernel: str, log: str | None = None):
    files = [("slurm/squeue.txt", "squeue-text", SQUEUE), ("slurm/sinfo.txt", "sinfo-text", SINFO),
             ("kernel/n-07.log", "kernel-log", kernel)]
    ctx = {"kernel/n-07.log": {"node": "n-07"}}
    if log:
        files.append(("logs/60413/err.log", "job-log", log))
        ctx["logs/60413/err.log"] = {"job": "60413"}
    return make_facts(*files, **ctx)


def test_expired_credentials_on_a_node_whose_time_service_lost_its_sources_drain_it(make_facts):
    (f,) = check_node_clock(_facts(make_facts, CHRONY + SLURMD, SRUN), NodeClockConfig())
    assert f.root_cause == "node_software_fault" and f.strength == "direct"
    assert f.culprits == ["node:n-07", "job:60413"] and "time source" in f.message
    assert [(a.type, a.node) for a in f.suggested_actions] == [("drain_node", "n-07")]


def test_munge_refusing_tokens_with_ntpd_unsynchronised_fires_without_job_logs(make_facts):
    (f,) = check_node_clock(_facts(make_facts, MUNGED), NodeClockConfig())
    assert f.culprits == ["node:n-07"] and "not synchronised" in f.message


def test_one_refusal_with_no_clock_line_is_not_enough(make_facts):
    assert check_node_clock(_facts(make_facts, SLURMD), NodeClockConfig()) == []
    # Two refusals alone are: a state finding, weaker than one the time service confirms.
    (f,) = check_node_clock(_facts(make_facts, SLURMD * 2), NodeClockConfig())
    assert f.strength == "state"
