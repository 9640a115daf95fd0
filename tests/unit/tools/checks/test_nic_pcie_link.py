"""check_nic_pcie_link on `dmesg -T` probe lines of a RoCE adapter (bnxt_en) and a GPU, with squeue."""

from __future__ import annotations

from tools.checks.gpu_pcie_link import PcieLinkConfig, check_gpu_pcie_link
from tools.checks.nic_pcie_link import NicPcieLinkConfig, check_nic_pcie_link

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             61200       gpu  gpt-pre     ana  R    3:10:02      2 r[07-08]
"""
NIC = ("[Tue Mar  3 08:01:12 2026] bnxt_en 0000:c1:00.0: 31.504 Gb/s available PCIe bandwidth, limited by 8.0 GT/s "
       "PCIe x4 link at 0000:c0:03.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)\n")
GPU = ("[Tue Mar  3 08:01:14 2026] nvidia 0000:41:00.0: 126.024 Gb/s available PCIe bandwidth, limited by 16.0 GT/s "
       "PCIe x8 link at 0000:40:01.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)\n")


def _facts(make_facts, kernel: str):
    return make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("kernel/r08.log", "kernel-log", kernel),
                      **{"kernel/r08.log": {"node": "r08"}})


def test_a_roce_adapter_on_a_narrow_link_is_the_interconnect_not_a_gpu(make_facts):
    facts = _facts(make_facts, NIC)
    (f,) = check_nic_pcie_link(facts, NicPcieLinkConfig())
    assert f.root_cause == "interconnect_fault" and f.culprits == ["node:r08", "job:61200"]
    assert "bnxt_en 0000:c1:00.0" in f.message
    assert [a.type for a in f.suggested_actions][:2] == ["drain_node", "resubmit_from_checkpoint"]
    assert not any(a.type == "run_gpu_diagnostic" for a in f.suggested_actions)
    assert check_gpu_pcie_link(facts, PcieLinkConfig()) == []


def test_a_gpus_own_narrow_link_stays_the_gpus(make_facts):
    facts = _facts(make_facts, GPU)
    assert check_nic_pcie_link(facts, NicPcieLinkConfig()) == []
    (g,) = check_gpu_pcie_link(facts, PcieLinkConfig())
    assert g.root_cause == "gpu_hardware_fault" and g.culprits[0] == "node:r08"
