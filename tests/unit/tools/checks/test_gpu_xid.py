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


# Other shapes of the same fault class: DCGM fields alone, nvidia-smi losing the GPU, CUDA errors in logs.
DCGM_DBE = """# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total number of double-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="3",UUID="GPU-1",device="nvidia3",modelName="Tesla V100-SXM2-32GB",Hostname="v100-n07"} 2
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="2",UUID="GPU-2",device="nvidia2",modelName="Tesla V100-SXM2-32GB",Hostname="v100-n07"} 0
# HELP DCGM_FI_DEV_ECC_DBE_AGG_TOTAL Total number of double-bit persistent ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_AGG_TOTAL counter
DCGM_FI_DEV_ECC_DBE_AGG_TOTAL{gpu="1",UUID="GPU-3",device="nvidia1",modelName="Tesla V100-SXM2-32GB",Hostname="v100-n08"} 4
"""
LOST_CSV = ("index, name, pci.bus_id, utilization.gpu [%]\n0, NVIDIA A100-SXM4-80GB, 00000000:07:00.0, 98 %\n"
            "Unable to determine the device handle for GPU0000:B7:00.0: Unknown Error\n")
CUDA_ECC = "[rank11]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
SQUEUE_ONE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
            318204       gpu  bert-ft     ines  F       1:02      1 v100-n07
"""


def test_dcgm_volatile_dbe_alone_is_a_fault_but_lifetime_counts_are_history(make_facts):
    facts = make_facts(("gpu/dcgm.prom", "dcgm-prometheus-text", DCGM_DBE))
    (f,) = check_gpu_xid(facts, XidConfig())
    assert f.culprits[0] == "node:v100-n07" and f.strength == "direct"  # v100-n08's aggregate count is history


def test_nvidia_smi_that_cannot_reach_a_gpu_is_a_lost_gpu(make_facts):
    facts = make_facts(("gpu/dgx-a-05.csv", "nvidia-smi-csv", LOST_CSV), **{"gpu/dgx-a-05.csv": {"node": "dgx-a-05"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert f.culprits[0] == "node:dgx-a-05" and "GPU lost (nvidia-smi)" in f.message


def test_cuda_uncorrectable_ecc_in_a_log_is_attributed_to_the_jobs_node(make_facts):
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE_ONE), ("logs/318204/err", "job-log", CUDA_ECC),
                       **{"logs/318204/err": {"job": "318204"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert f.culprits[:2] == ["node:v100-n07", "job:318204"] and f.strength == "symptom"
    assert f.suggested_actions[0].type == "run_gpu_diagnostic"  # suspected from a log: confirm first


def test_the_same_gpu_failing_different_programs_is_the_gpu(make_facts):
    lines = ("[Tue Oct  6 06:40:01 2026] NVRM: Xid (PCI:0000:b9:00): 13, pid=771203, name=python3, Graphics Exception\n"
             "[Tue Oct  6 09:15:33 2026] NVRM: Xid (PCI:0000:b9:00): 13, pid=802914, name=python3, Graphics Exception\n")
    facts = make_facts(("kernel/h-n23.log", "kernel-log", lines), **{"kernel/h-n23.log": {"node": "h-n23"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert "2 processes" in f.message
    one = make_facts(("kernel/h-n23.log", "kernel-log", lines.splitlines()[0] + "\n"), **{"kernel/h-n23.log": {"node": "h-n23"}})
    assert check_gpu_xid(one, XidConfig()) == []  # one program's Graphics Exception is the program's


def test_xid_154_asking_for_a_reset_is_a_fault(make_facts):
    line = ("[ 912.5] NVRM: Xid (PCI:0000:9d:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 "
            "(GPU Reset Required)\n")
    facts = make_facts(("kernel/h1.log", "kernel-log", line), **{"kernel/h1.log": {"node": "h1"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert "Xid 154 (GPU Reset Required)" in f.message


def test_xid_154_after_an_nvlink_xid_on_that_gpu_is_the_links_not_a_second_fault(make_facts):
    nvlink = "[ 900.1] NVRM: Xid (PCI:0000:9d:00): 74, pid=1, name=python, NVLink: fatal error detected on link 3\n"
    reset = ("[ 912.5] NVRM: Xid (PCI:0000:9d:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 "
             "(GPU Reset Required)\n")
    other = reset.replace("9d:00", "3b:00")
    facts = make_facts(("kernel/h1.log", "kernel-log", nvlink + reset), **{"kernel/h1.log": {"node": "h1"}})
    assert check_gpu_xid(facts, XidConfig()) == []  # interconnect_link_down names the NVLink fault
    facts = make_facts(("kernel/h1.log", "kernel-log", nvlink + other), **{"kernel/h1.log": {"node": "h1"}})
    (f,) = check_gpu_xid(facts, XidConfig())  # another GPU asking for a reset is its own fault
    assert "Xid 154" in f.message


# Fires, without victims: Xid 63 records a row remap that waits for the next GPU reset; the running
# job goes on, so the node is drained (no new work) and the job is neither named nor resubmitted.
XID63 = ("[Mon Mar  4 09:40:11 2026] NVRM: Xid (PCI:0000:b3:00): 63, pid=1234, name=python, "
         "Row Remapper: New row (0x00000000000c2a51) marked for remapping, reset gpu to activate.\n")


def test_row_remap_pending_drains_the_node_but_leaves_the_running_job_alone(make_facts):
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("kernel/gpu017.log", "kernel-log", XID63),
                       **{"kernel/gpu017.log": {"node": "gpu017"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert f.culprits == ["node:gpu017"] and "row remap pending" in f.message
    # drained so no new work lands; a diagnostic confirms the GPU once the running job has left
    assert [a.type for a in f.suggested_actions] == ["run_gpu_diagnostic", "drain_node"]


# Fires with victims: the same Xid 63 plus Xid 79 on the node — the GPU is gone and the job with it.
def test_row_remap_pending_with_a_lost_gpu_still_resubmits(make_facts):
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE),
                       ("kernel/gpu017.log", "kernel-log", XID63 + XID79), **{"kernel/gpu017.log": {"node": "gpu017"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert "job:4242" in f.culprits and "resubmit_from_checkpoint" in [a.type for a in f.suggested_actions]


def _xid48(pcis: list[str]) -> str:
    return "".join(f"[Mon Mar  4 10:01:02 2026] NVRM: Xid (PCI:0000:{p}:00): 48, pid=1234, name=python, "
                   "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 1.\n"
                   for p in pcis)


def _dbe(values: list[int]) -> str:
    return "# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n" + "".join(
        f'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{gpu="{i}",Hostname="gpu017"}} {v}\n' for i, v in enumerate(values))


def test_one_xid_on_many_gpus_at_once_with_every_ecc_counter_zero_is_one_shared_event(make_facts):
    def facts(pcis: list[str], dbe: list[int]):
        return make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("kernel/gpu017.log", "kernel-log", _xid48(pcis)),
                          ("gpu/gpu017.prom", "dcgm-prometheus-text", _dbe(dbe)),
                          **{"kernel/gpu017.log": {"node": "gpu017"}, "gpu/gpu017.prom": {"node": "gpu017"}})
    (f,) = check_gpu_xid(facts(["18", "2a", "3a", "5d"], [0, 0, 0, 0]), XidConfig())
    assert f.root_cause == "inconclusive" and f.suggested_actions == [] and "on 4 GPUs of gpu017" in f.message
    # the counters say a DBE did happen: the GPUs' own fault, drained as usual
    (g,) = check_gpu_xid(facts(["18", "2a", "3a", "5d"], [0, 2, 0, 0]), XidConfig())
    assert g.root_cause == "gpu_hardware_fault" and any(a.type == "drain_node" for a in g.suggested_actions)
    # one GPU alone: its own fault, whatever the counters say
    (h,) = check_gpu_xid(facts(["18"], [0, 0, 0, 0]), XidConfig())
    assert h.root_cause == "gpu_hardware_fault"


def test_xid8_for_different_programs_on_one_gpu_and_a_failed_dcgmi_diag_are_the_gpu(make_facts):
    from pathlib import Path
    xid8 = "".join(f"[Mon Mar  4 1{i}:01:02 2026] NVRM: Xid (PCI:0000:ab:00): 8, pid={pid}, name=python, Channel 0x00000018\n"
                   for i, pid in enumerate((4101, 5202, 6303)))
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("kernel/gpu017.log", "kernel-log", xid8),
                       **{"kernel/gpu017.log": {"node": "gpu017"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert f.root_cause == "gpu_hardware_fault" and "Xid 8 on GPU 0000:ab:00.0 for 3 processes" in f.message
    one = make_facts(("kernel/gpu017.log", "kernel-log", xid8.splitlines(keepends=True)[0]),
                     **{"kernel/gpu017.log": {"node": "gpu017"}})
    assert check_gpu_xid(one, XidConfig()) == []  # one program's Xid 8: nothing to blame the GPU for
    fixtures = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "dcgmi-diag-json"
    for name, causes in (("4.1-level2-fail-gpu1.json", ["gpu_hardware_fault"]), ("3.3-level2-pass.json", [])):
        diag = make_facts(("gpu/diag.json", "dcgmi-diag-json", (fixtures / name).read_text()),
                          **{"gpu/diag.json": {"node": "gpu017"}})
        assert [g.root_cause for g in check_gpu_xid(diag, XidConfig())] == causes, name


def test_a_dbe_counter_the_driver_never_logged_with_work_running_on_is_inconclusive(make_facts):
    benign = "[Mon Mar  4 09:00:00 2026] mlx5_core 0000:3b:00.0: Port module event: module 0, Cable plugged\n"
    xid48 = ("[Mon Mar  4 10:01:02 2026] NVRM: Xid (PCI:0000:18:00): 48, pid=1234, name=python, "
             "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 1.\n")
    failed = SQUEUE.replace("alice  R", "alice  F")

    def facts(kernel: str | None, queue: str = SQUEUE):
        files = [("slurm/squeue.txt", "squeue-text", queue), ("gpu/gpu017.prom", "dcgm-prometheus-text", _dbe([0, 1, 0]))]
        meta = {"gpu/gpu017.prom": {"node": "gpu017"}}
        if kernel is not None:
            files.append(("kernel/gpu017.log", "kernel-log", kernel))
            meta["kernel/gpu017.log"] = {"node": "gpu017"}
        return make_facts(*files, **meta)

    (f,) = check_gpu_xid(facts(benign), XidConfig())
    assert f.root_cause == "inconclusive" and f.culprits == ["node:gpu017"] and f.suggested_actions == []
    assert "no Xid 48/94/95" in f.message
    # the driver logged the DBE: the GPU's fault, drained as usual
    (g,) = check_gpu_xid(facts(benign + xid48), XidConfig())
    assert g.root_cause == "gpu_hardware_fault" and any(a.type == "drain_node" for a in g.suggested_actions)
    # a job on the node failed: work was lost, the counter is believed
    (h,) = check_gpu_xid(facts(benign, failed), XidConfig())
    assert h.root_cause == "gpu_hardware_fault"
    # the kernel log was not read: nothing contradicts the counter
    (k,) = check_gpu_xid(facts(None), XidConfig())
    assert k.root_cause == "gpu_hardware_fault"


def test_amdgpu_uncorrectable_hbm_errors_and_failed_resets_are_the_gpu_but_page_faults_are_not(make_facts):
    umc = ("[Wed Jun  3 06:57:51 2026] amdgpu 0000:75:00.0: amdgpu: socket: 1, die: 0, 1 new uncorrectable hardware "
           "errors detected in UMC block\n")
    reset = "[ 812.114] amdgpu 0000:9e:00.0: amdgpu: ASIC reset failed with error, -62 for drm dev, 0000:9e:00.0\n"
    vm_fault = ("[ 812.114] amdgpu 0000:9e:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32770, "
                "for process python pid 4101)\n")
    for text, label in ((umc, "uncorrectable HBM (UMC)"), (reset, "reset failed")):
        facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("kernel/gpu017.log", "kernel-log", text),
                           **{"kernel/gpu017.log": {"node": "gpu017"}})
        (f,) = check_gpu_xid(facts, XidConfig())
        assert f.root_cause == "gpu_hardware_fault" and label in f.message and f.culprits[:2] == ["node:gpu017", "job:4242"]
        assert any(a.type == "drain_node" and a.node == "gpu017" for a in f.suggested_actions)
    quiet = make_facts(("kernel/gpu017.log", "kernel-log", vm_fault), **{"kernel/gpu017.log": {"node": "gpu017"}})
    assert check_gpu_xid(quiet, XidConfig()) == []  # a program's bad address, not the GPU
