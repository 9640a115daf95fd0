"""check_iommu_faults on the IOMMU fault shapes of Intel VT-d and AMD-Vi kernels."""

from __future__ import annotations

from tools.checks.iommu_fault import IommuConfig, check_iommu_faults

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
            772410       gpu  clip-ft    achen  R    1:02:00      1 ls06
"""
DMAR = """[ 1802.556104] DMAR: DRHD: handling fault status reg 2
[ 1802.556112] DMAR: [DMA Read NO_PASID] Request device [4f:00.0] fault addr 0xe1c0000000 [fault reason 0x06] PTE Read access is not set
[ 1802.556190] DMAR: [DMA Write NO_PASID] Request device [56:00.0] fault addr 0xe5e0000000 [fault reason 0x05] PTE Write access is not set
"""
AMD_VI = """[  912.114210] nvidia 0000:41:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000b address=0xfd000000 flags=0x0020]
[  912.114290] AMD-Vi: Event logged [IO_PAGE_FAULT device=c1:00.0 domain=0x0000 address=0x0 flags=0x0000]
"""


def _facts(make_facts, kernel: str, queue: str | None = SQUEUE):
    files = [("kernel/ls06.log", "kernel-log", kernel)]
    if queue is not None:
        files.append(("slurm/squeue.txt", "squeue-text", queue))
    return make_facts(*files, **{"kernel/ls06.log": {"node": "ls06"}})


def test_dmar_faults_from_gpus_under_a_running_job_are_the_nodes_iommu_configuration(make_facts):
    (f,) = check_iommu_faults(_facts(make_facts, DMAR), IommuConfig())
    assert f.root_cause == "node_software_fault" and f.culprits == ["node:ls06", "job:772410"]
    assert "2 device(s) (4f:00.0, 56:00.0)" in f.message and f.evidence[0].line == 2
    kinds = [(a.type, a.node, a.job, a.exclude_nodes) for a in f.suggested_actions]
    assert ("drain_node", "ls06", None, []) in kinds and ("resubmit_from_checkpoint", None, "772410", ["ls06"]) in kinds


def test_amd_vi_io_page_faults_in_both_layouts_name_their_devices(make_facts):
    (f,) = check_iommu_faults(_facts(make_facts, AMD_VI), IommuConfig())
    assert "(41:00.0, c1:00.0)" in f.message


def test_one_record_or_no_work_on_the_node_is_not_a_finding(make_facts):
    one = DMAR.splitlines(keepends=True)[1]
    assert check_iommu_faults(_facts(make_facts, one), IommuConfig()) == []
    idle = SQUEUE.splitlines(keepends=True)[0]
    assert check_iommu_faults(_facts(make_facts, DMAR, idle), IommuConfig()) == []
    benign = "[    0.412207] DMAR: IOMMU enabled\n[    1.883015] iommu: Default domain type: Translated\n"
    assert check_iommu_faults(_facts(make_facts, benign), IommuConfig()) == []
