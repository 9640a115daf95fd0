"""check_gpu_access_lost on Slurm job logs with nvidia-smi CSV, and on pod logs with a dcgm-exporter page."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, node, pod
from tools.checks import run_checks
from tools.checks.gpu_access_lost import GpuAccessLostConfig, check_gpu_access_lost

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              8812       gpu sdxl-ft     ines  R      14:02      1 a100-03
"""
# A job on a reimaged node whose gres.conf names the wrong device files: cgroup device rules hide every GPU.
JOB_LOG = ("2026-03-04 10:01:02,113 | INFO | starting on a100-03\n"
           "RuntimeError: CUDA error: no CUDA-capable device is detected\n")
SMI = ("index, name, pci.bus_id, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
       "0, NVIDIA A100-SXM4-80GB, 00000000:07:00.0, 0 %, 4 MiB, 81920 MiB\n"
       "1, NVIDIA A100-SXM4-80GB, 00000000:0F:00.0, 0 %, 4 MiB, 81920 MiB\n")
LOST = SMI.replace("1, NVIDIA A100-SXM4-80GB, 00000000:0F:00.0, 0 %, 4 MiB, 81920 MiB",
                   "Unable to determine the device handle for GPU0000:0F:00.0: Unknown Error")


def _slurm(make_facts, smi: str | None = SMI):
    files = [("slurm/squeue.txt", "squeue-text", SQUEUE), ("logs/8812/out", "job-log", JOB_LOG)]
    if smi is not None:
        files.append(("gpu/a100-03.csv", "nvidia-smi-csv", smi))
    return make_facts(*files, **{"logs/8812/out": {"job": "8812"}, "gpu/a100-03.csv": {"node": "a100-03"}})


def test_a_job_that_sees_no_gpu_on_a_node_whose_nvidia_smi_reads_them_is_node_software(make_facts):
    (f,) = check_gpu_access_lost(_slurm(make_facts), GpuAccessLostConfig())
    assert f.root_cause == "node_software_fault" and f.culprits == ["node:a100-03", "job:8812"]
    assert [a.type for a in f.suggested_actions][:2] == ["drain_node", "resubmit_from_checkpoint"]
    assert f.suggested_actions[1].exclude_nodes == ["a100-03"]
    # ... and the GPU-fault check does not also call the GPUs broken
    run = run_checks(_slurm(make_facts))
    assert {g.root_cause for g in run.findings} >= {"node_software_fault"}
    assert "gpu_hardware_fault" not in {g.root_cause for g in run.findings}


def test_a_lost_gpu_or_no_host_reading_is_not_called_software(make_facts):
    assert check_gpu_access_lost(_slurm(make_facts, LOST), GpuAccessLostConfig()) == []  # gpu_xid's
    assert check_gpu_access_lost(_slurm(make_facts, None), GpuAccessLostConfig()) == []  # nothing says the GPUs work


DCGM = "\n".join(["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"] + [
    f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",UUID="GPU-{g}",device="nvidia{g}",Hostname="gn-4"}} 41' for g in range(4)]) + "\n"


def test_pods_that_lost_their_gpus_are_evicted_and_a_statefulsets_owner_is_told(make_facts):
    nodes = api_list("NodeList", [node("gn-4"), node("gn-5")])
    pods = api_list("PodList", [pod("ft-0-x1", "ml", node_name="gn-4", gpus=4, owner=("Job", "ft-0")),
                                pod("nb-0", "lab", node_name="gn-4", gpus=1, owner=("StatefulSet", "nb")),
                                pod("ft-1-x2", "ml", node_name="gn-5", gpus=4, owner=("Job", "ft-1"))])
    nvml = "Failed to initialize NVML: Unknown Error\n"
    facts = make_facts(("k8s/nodes.json", "k8s-json", nodes), ("k8s/pods.json", "k8s-json", pods),
                       ("logs/a.log", "job-log", "RuntimeError: No CUDA GPUs are available\n" * 3),
                       ("logs/b.log", "job-log", nvml), ("gpu/gn-4.prom", "dcgm-prometheus-text", DCGM),
                       **{"logs/a.log": {"job": "ml/ft-0-x1"}, "logs/b.log": {"job": "lab/nb-0"},
                          "gpu/gn-4.prom": {"node": "gn-4"}})
    (f,) = check_gpu_access_lost(facts, GpuAccessLostConfig())
    assert f.culprits == ["k8snode:gn-4", "pod:ml/ft-0-x1", "pod:lab/nb-0"]
    assert [(a.type, a.pod) for a in f.suggested_actions] == [("evict_pod", "ft-0-x1"), ("notify_owner", "nb-0")]
    assert not any(a.type in ("cordon_node", "drain_k8s_node") for a in f.suggested_actions)
