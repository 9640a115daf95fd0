"""check_hung_task_transient on `dmesg -T` hung-task reports with squeue and a job log."""

from __future__ import annotations

from tools.checks.hung_task_transient import HungTaskConfig, check_hung_task_transient

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              5120       gpu  vit-pre     mona  R    9:10:02      1 n07
"""
REPORT = ("[Wed Mar  4 09:31:02 2026] INFO: task python3:4412 blocked for more than 241 seconds.\n"
          "[Wed Mar  4 09:31:02 2026]       Not tainted 5.14.0-427.el9.x86_64 #1\n"
          "[Wed Mar  4 09:31:02 2026] Call Trace:\n")


def _facts(make_facts, kernel: str, log: str = "2026-03-04 10:05:00 | step 8800 | loss 1.02\n"):
    return make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("kernel/n07.log", "kernel-log", kernel),
                      ("logs/5120/out", "job-log", log), **{"kernel/n07.log": {"node": "n07"}, "logs/5120/out": {"job": "5120"}})


def test_one_report_then_the_job_logging_on_is_a_slow_write(make_facts):
    (f,) = check_hung_task_transient(_facts(make_facts, REPORT), HungTaskConfig())
    assert f.root_cause == "healthy" and f.culprits == ["node:n07"] and "1 hung-task report(s) on n07 at 09:31" in f.message


def test_repeated_reports_a_silent_log_or_fs_errors_are_not_transient(make_facts):
    many = "".join(REPORT.replace("09:31", f"09:{m}") for m in (31, 33, 35, 37, 39))
    assert check_hung_task_transient(_facts(make_facts, many), HungTaskConfig()) == []
    silent = "2026-03-04 09:30:00 | step 8700 | loss 1.03\n"
    assert check_hung_task_transient(_facts(make_facts, REPORT, silent), HungTaskConfig()) == []
    lustre = REPORT + ("[Wed Mar  4 09:30:40 2026] LustreError: 11-0: scratch-OST0004-osc-ffff9a: operation ost_write to "
                       "node 10.1.0.14@o2ib failed: rc = -110\n")
    assert check_hung_task_transient(_facts(make_facts, lustre), HungTaskConfig()) == []
