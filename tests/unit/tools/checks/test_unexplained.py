"""unexplained_signals: error-level lines no finding explains make an inconclusive finding; explained ones do not."""

from __future__ import annotations

from tools.checks import run_checks
from tools.checks.unexplained import unexplained_signals

SOFT_LOCKUP = ("Jun 03 04:18:43 n07 kernel: watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:88123]\n"
               "Jun 03 04:19:10 n07 kernel: mce: [Hardware Error]: Machine check events logged\n")
XID79 = "[Mon Mar  4 10:01:02 2026] NVRM: Xid (PCI:0000:b3:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
BENIGN = ("[    1.0] ACPI BIOS Error (bug): Could not resolve symbol [\\_SB.PCI0], AE_NOT_FOUND\n"
          "[    2.0] nvidia: module verification failed: signature and/or required key missing - tainting kernel\n"
          "[    3.0] EDAC MC0: 1 CE memory read error on CPU_SrcID#0 (corrected)\n")


def test_unclassified_error_lines_are_an_inconclusive_finding(make_facts):
    facts = make_facts(("kernel/n07.log", "kernel-log", SOFT_LOCKUP), **{"kernel/n07.log": {"node": "n07"}})
    f = unexplained_signals(facts, [])
    assert f is not None and f.root_cause == "inconclusive" and f.culprits == ["node:n07"]
    assert "2 error-level signal(s)" in f.message and all(a.type in ("run_gpu_diagnostic", "notify_owner")
                                                           for a in f.suggested_actions)


def test_signals_on_a_node_a_finding_names_are_explained(make_facts):
    facts = make_facts(("kernel/n07.log", "kernel-log", XID79 + SOFT_LOCKUP), **{"kernel/n07.log": {"node": "n07"}})
    run = run_checks(facts)
    assert [f.root_cause for f in run.findings] == ["gpu_hardware_fault"]


def test_firmware_noise_and_corrected_errors_are_not_signals(make_facts):
    facts = make_facts(("kernel/n07.log", "kernel-log", BENIGN), **{"kernel/n07.log": {"node": "n07"}})
    assert unexplained_signals(facts, []) is None


def test_a_jobs_gpu_error_with_clean_node_records_is_inconclusive_with_a_diagnostic_on_that_node(make_facts):
    from tools.checks.gpu_xid import XidConfig, check_gpu_xid
    sacct = """JobID|JobName|State|ExitCode|NodeList|
41120|mlm-ft|FAILED|1:0|a100-[10-11]|
"""
    log = ("[rank9]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
           "srun: error: a100-11: task 9: Exited with exit code 1\n")
    prom = 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="1",Hostname="a100-11"} 0\n'
    files = [("slurm/sacct.txt", "sacct-text", sacct), ("logs/41120/out", "job-log", log),
             ("kernel/a100-11.log", "kernel-log", "[ 10.0] mlx5_core 0000:17:00.0: firmware version: 20.39.1002\n"),
             ("gpu/a100-11.prom", "dcgm-prometheus-text", prom)]
    meta = {"logs/41120/out": {"job": "41120"}, "kernel/a100-11.log": {"node": "a100-11"}, "gpu/a100-11.prom": {"node": "a100-11"}}
    facts = make_facts(*files, **meta)
    assert check_gpu_xid(facts, XidConfig()) == []  # uncorroborated: its node's own records are clean
    f = unexplained_signals(facts, [])
    assert f is not None and "node:a100-11" in f.culprits
    assert ("run_gpu_diagnostic", "a100-11") in [(a.type, a.node) for a in f.suggested_actions]
    # without the clean DCGM counters, the job's ECC error on task 9's node is a GPU fault of a100-11
    facts = make_facts(*files[:3], **meta)
    (g,) = check_gpu_xid(facts, XidConfig())
    assert g.culprits[0] == "node:a100-11"


def test_an_nfs_outage_the_client_came_through_is_explained_by_its_own_log(make_facts):
    from tools.checks.unexplained import unexplained_signals
    down = "[Thu Apr  9 02:03:41 2026] nfs: server home01 not responding, still trying\n"
    back = "[Thu Apr  9 02:05:16 2026] nfs: server home01 OK\n"
    facts = make_facts(("kernel/cn3.log", "kernel-log", down * 2 + back), **{"kernel/cn3.log": {"node": "cn3"}})
    assert unexplained_signals(facts, []) is None
    # still not responding at the end of the log: an outage nobody explained
    facts = make_facts(("kernel/cn3.log", "kernel-log", back + down), **{"kernel/cn3.log": {"node": "cn3"}})
    assert unexplained_signals(facts, []) is not None


def test_a_machine_check_notice_whose_record_is_a_corrected_dimm_error_is_explained_unless_a_job_went_nan(make_facts):
    kernel = ("Nov 29 02:09:14 cw03 kernel: mce: [Hardware Error]: Machine check events logged\n"
              "Nov 29 02:09:14 cw03 kernel: EDAC MC1: 1 CE memory read error on CPU_SrcID#1_MC#0_Chan#1_DIMM#0 "
              "(channel:1 slot:0 page:0x3a1f2c offset:0x880 grain:32 syndrome:0x0)\n")
    lone = "Nov 29 02:09:14 cw03 kernel: mce: [Hardware Error]: Machine check events logged\n"
    squeue = ("             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
              "              4242       gpu    train    alice  R    7:41:00      1 cw03\n")
    nan = "2026-11-29T02:10:02Z step 1200 loss nan grad_norm inf: skipping step\n"

    def facts(text: str, log: str | None = None):
        files = [("slurm/squeue.txt", "squeue-text", squeue), ("kernel/cw03.log", "kernel-log", text)]
        if log:
            files.append(("logs/4242/out", "job-log", log))
        return make_facts(*files, **{"kernel/cw03.log": {"node": "cw03"}, "logs/4242/out": {"job": "4242"}})

    assert unexplained_signals(facts(kernel), []) is None
    assert unexplained_signals(facts(lone), []) is not None  # a notice with no record: what it was is unknown
    near = unexplained_signals(facts(kernel, nan), [])
    assert near is not None and "node cw03 (1)" in near.message  # a corrected error as a job went non-finite
