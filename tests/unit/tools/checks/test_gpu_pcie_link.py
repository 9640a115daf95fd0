"""check_gpu_pcie_link on nvidia-smi CSV, Prometheus query results and kernel PCIe lines."""

from __future__ import annotations

import json

from tools.checks.gpu_pcie_link import PcieLinkConfig, check_gpu_pcie_link

HEAD = "index, name, pci.bus_id, pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, utilization.gpu [%]\n"
# l40s-07 GPU 1 trained at x8 of x16 while busy: the width never drops by design, so this is hardware.
NARROW = HEAD + ("0, NVIDIA L40S, 00000000:21:00.0, 4, 4, 16, 16, 97 %\n"
                 "1, NVIDIA L40S, 00000000:A1:00.0, 3, 4, 8, 16, 96 %\n")
# Idle GPUs drop their PCIe generation to save power: Gen1 at 0 % busy is normal.
IDLE = HEAD + "0, NVIDIA L40S, 00000000:21:00.0, 1, 4, 16, 16, 0 %\n"
SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              8812       gpu sdxl-ft     ines  R    4:10:02      1 l40s-07
"""
KERNEL = ("[Tue Apr 21 19:05:40 2026] pci 0000:a1:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s "
          "PCIe x8 link at 0000:a0:01.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)\n"
          + "[Wed Apr 22 06:33:10 2026] pcieport 0000:a0:01.1: AER: Corrected error received: 0000:a1:00.0\n" * 3)


def _replays(value: float) -> str:
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"Hostname": "l40s-07", "gpu": "1"}, "value": [1776848000, str(value)]}]}})


def test_narrow_link_on_a_busy_gpu_is_a_gpu_hardware_fault(make_facts):
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("gpu/l40s-07.csv", "nvidia-smi-csv", NARROW),
                       **{"gpu/l40s-07.csv": {"node": "l40s-07"}})
    (f,) = check_gpu_pcie_link(facts, PcieLinkConfig())
    assert f.root_cause == "gpu_hardware_fault" and f.culprits == ["node:l40s-07", "job:8812"]
    assert "x8 of x16" in f.message and f.strength == "direct"
    assert [a.type for a in f.suggested_actions][:2] == ["run_gpu_diagnostic", "drain_node"]


def test_low_generation_on_an_idle_gpu_does_not_fire(make_facts):
    facts = make_facts(("gpu/l40s-07.csv", "nvidia-smi-csv", IDLE), **{"gpu/l40s-07.csv": {"node": "l40s-07"}})
    assert check_gpu_pcie_link(facts, PcieLinkConfig()) == []


def test_replay_growth_from_an_increase_query_fires_and_small_growth_does_not(make_facts):
    url = "http://prom:9090/api/v1/query?query=increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER%5B1h%5D)"
    art = {"gpu/replay.json": {"url": url}}
    (f,) = check_gpu_pcie_link(make_facts(("gpu/replay.json", "prometheus-query-json", _replays(4210)), **art),
                               PcieLinkConfig())
    assert "PCIe replays +4210" in f.message
    assert check_gpu_pcie_link(make_facts(("gpu/replay.json", "prometheus-query-json", _replays(3)), **art),
                               PcieLinkConfig()) == []


def test_kernel_link_limited_line_and_corrected_aer_corroborate(make_facts):
    facts = make_facts(("gpu/l40s-07.csv", "nvidia-smi-csv", NARROW), ("kernel/l40s-07.log", "kernel-log", KERNEL),
                       **{"gpu/l40s-07.csv": {"node": "l40s-07"}, "kernel/l40s-07.log": {"node": "l40s-07"}})
    (f,) = check_gpu_pcie_link(facts, PcieLinkConfig())
    assert "3 corrected AER error(s)" in f.message and f.confidence > 0.9
    assert any(e.file == "kernel/l40s-07.log" for e in f.evidence)


def test_uncorrected_aer_from_the_address_of_an_xid_is_a_gpu_fault_of_that_node(make_facts):
    log = """[701141.807805] pcieport 0000:97:01.0: AER: Uncorrected (Fatal) error received: 0000:9a:00.0
[701142.578162] NVRM: Xid (PCI:0000:9a:00): 32, pid=2211873, name=python, Channel ID 0000000e intr0 00040000
"""
    other = "[701141.807805] pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:41:00.0\n"
    facts = make_facts(("kernel/hx05.log", "kernel-log", log), ("kernel/hx06.log", "kernel-log", other),
                       **{"kernel/hx05.log": {"node": "hx05"}, "kernel/hx06.log": {"node": "hx06"}})
    (f,) = check_gpu_pcie_link(facts, PcieLinkConfig())  # hx06's AER is from a device that is not a GPU
    assert f.root_cause == "gpu_hardware_fault" and f.culprits[0] == "node:hx05" and "failed" in f.message
