"""check_node_local_disk on block-layer and local file-system failure shapes (NVMe + ext4, SATA + XFS)."""

from __future__ import annotations

from tools.checks.node_disk import NodeDiskConfig, check_node_local_disk

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             99120       gpu    train    alice  R      41:00      1 cn-g21
"""
SINFO = """PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
gpu*         up   infinite      1  {state} cn-g21
"""
NVME_EXT4 = """[3318431.663890] critical medium error, dev nvme0n1, sector 1288340480 op 0x1:(WRITE) flags 0x8800 phys_seg 32 prio class 2
[3318431.664012] Buffer I/O error on dev nvme0n1p3, logical block 158862848, lost async page write
[3318431.708819] EXT4-fs error (device nvme0n1p3): ext4_journal_check_start:83: comm kubelet: Detected aborted journal
"""
SATA_XFS = """Mar 04 09:12:01 cn-g21 kernel: blk_update_request: I/O error, dev sda, sector 20480 op 0x1:(WRITE) flags 0x800
Mar 04 09:12:01 cn-g21 kernel: XFS (sda2): metadata I/O error in "xfs_buf_ioend+0x1a0/0x3e0" at daddr 0x2810 len 8 error 5
"""
MULTIPATH = """[ 812.1] blk_update_request: I/O error, dev dm-3, sector 2048 op 0x0:(READ)
[ 812.2] Buffer I/O error on dev dm-3, logical block 256, async page read
"""


def _facts(make_facts, kernel: str, state: str = "mix"):
    return make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("slurm/sinfo.txt", "sinfo-text", SINFO.format(state=state)),
                      ("kernel/cn-g21.log", "kernel-log", kernel), **{"kernel/cn-g21.log": {"node": "cn-g21"}})


def test_a_failing_local_disk_under_a_node_that_still_takes_work_is_the_nodes_fault(make_facts):
    for kernel, device in ((NVME_EXT4, "nvme0n1"), (SATA_XFS, "sda")):
        (f,) = check_node_local_disk(_facts(make_facts, kernel), NodeDiskConfig())
        assert f.root_cause == "node_software_fault" and f.culprits[:2] == ["node:cn-g21", "job:99120"]
        assert device in f.message and "file system aborted" in f.message
        kinds = [(a.type, a.node or a.job) for a in f.suggested_actions]
        assert ("drain_node", "cn-g21") in kinds and ("resubmit_from_checkpoint", "99120") in kinds


def test_device_mapper_io_errors_a_lone_io_error_and_a_node_that_stopped_answering_are_not_this_checks(make_facts):
    assert check_node_local_disk(_facts(make_facts, MULTIPATH), NodeDiskConfig()) == []
    assert check_node_local_disk(_facts(make_facts, SATA_XFS.splitlines(keepends=True)[0] * 3), NodeDiskConfig()) == []
    assert check_node_local_disk(_facts(make_facts, NVME_EXT4, state="down*"), NodeDiskConfig()) == []
