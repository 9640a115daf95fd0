"""check_gpu_xid on captured kernel-log shapes (NVRM lines as NVIDIA drivers print them)."""

from __future__ import annotations

from tools.checks.gpu_xid import XidConfig, check_gpu_xid

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              4242       gpu    train    alice  R      41:00      2 gpu[016-017]
              4300       gpu    other      bob  R       1:00      1 gpu003
"""

# Fires: Xid 79 is "GPU has fallen off the bus" — hardware.
XID79 = "[Mon Mar  4 10:01:02 2026] NVRM: Xid (PCI:0000:b3:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
# Fires: the multi-line form with no Xid number (NVSentinel #155) must not be missed.
OFF_BUS = """[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0
               NVRM: (PCI ID: 10de:26b5) installed in this system has
               NVRM: fallen off the bus and is not responding to commands.
"""
# Does not fire: Xid 13 (graphics engine exception) is an application fault, not the GPU.
XID13 = "[Mon Mar  4 10:01:02 2026] NVRM: Xid (PCI:0000:3b:00): 13, pid=77, name=python, Graphics Exception: ESR 0x404490=0x80000001\n"


def test_xid79_names_node_and_its_jobs_and_proposes_drain_and_resubmit(make_facts):
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("kernel/gpu017.log", "kernel-log", XID79),
                       **{"kernel/gpu017.log": {"node": "gpu017"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert f.root_cause == "gpu_hardware_fault"
    assert f.culprits == ["node:gpu017", "job:4242"]
    assert f.evidence[0].file == "kernel/gpu017.log" and f.evidence[0].line == 1
    kinds = [(a.type, a.node, a.job, a.exclude_nodes) for a in f.suggested_actions]
    assert ("drain_node", "gpu017", None, []) in kinds
    assert ("resubmit_from_checkpoint", None, "4242", ["gpu017"]) in kinds
    assert "Xid 79" in f.message and "threshold 1" in f.message


def test_fallen_off_bus_without_xid_number_fires(make_facts):
    facts = make_facts(("kernel/gpu017.log", "kernel-log", OFF_BUS), **{"kernel/gpu017.log": {"node": "gpu017"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert f.culprits[0] == "node:gpu017" and "fallen off the bus" in f.message


def test_application_xid_does_not_fire(make_facts):
    facts = make_facts(("kernel/gpu003.log", "kernel-log", XID13), **{"kernel/gpu003.log": {"node": "gpu003"}})
    assert check_gpu_xid(facts, XidConfig()) == []


def test_threshold_is_configurable(make_facts):
    facts = make_facts(("kernel/gpu017.log", "kernel-log", XID79), **{"kernel/gpu017.log": {"node": "gpu017"}})
    assert check_gpu_xid(facts, XidConfig(min_events=2)) == []
