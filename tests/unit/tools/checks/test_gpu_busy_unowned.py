"""check_gpu_busy_unowned on dcgm-exporter pages and nvidia-smi CSV against sinfo / squeue and pods."""

from __future__ import annotations

import pytest

from tests.unit.tools.checks._k8s_api import api_list, node, pod
from tools.checks.gpu_busy_unowned import GpuBusyUnownedConfig, check_gpu_busy_unowned

SINFO = """PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
gpu*         up 2-00:00:00      1   idle h-07
gpu*         up 2-00:00:00      1  alloc h-08
gpu*         up 2-00:00:00      1  drain h-09
"""
SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              9001       gpu   llm-ft     ines  R    2:10:02      1 h-08
"""


def _dcgm(host: str, util: int, fb_mib: int) -> str:
    return ("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="{host}"}} 0\nDCGM_FI_DEV_GPU_UTIL{{gpu="1",Hostname="{host}"}} {util}\n'
            "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
            f'DCGM_FI_DEV_FB_USED{{gpu="0",Hostname="{host}"}} 3\nDCGM_FI_DEV_FB_USED{{gpu="1",Hostname="{host}"}} {fb_mib}\n')


def _facts(make_facts, host: str, util: int, fb: int):
    return make_facts(("slurm/sinfo.txt", "sinfo-text", SINFO), ("slurm/squeue.txt", "squeue-text", SQUEUE),
                      (f"gpu/{host}.prom", "dcgm-prometheus-text", _dcgm(host, util, fb)),
                      **{f"gpu/{host}.prom": {"node": host}})


def test_a_gpu_at_work_on_an_idle_node_is_inconclusive_and_names_the_node(make_facts):
    (f,) = check_gpu_busy_unowned(_facts(make_facts, "h-07", 98, 40_960), GpuBusyUnownedConfig())
    assert f.root_cause == "inconclusive" and f.culprits == ["node:h-07"] and f.suggested_actions == []
    assert "GPU 1 at 98 % with 40,960 MiB in use" in f.message and "--query-compute-apps" in f.message


@pytest.mark.parametrize(("host", "util", "fb", "why"), [
    ("h-08", 98, 40_960, "its job runs there"),
    ("h-09", 98, 40_960, "drained: an admin's burn-in is asked-for work"),
    ("h-07", 0, 3, "idle GPUs on an idle node"),
])
def test_work_the_scheduler_knows_of_or_idle_gpus_do_not_fire(make_facts, host, util, fb, why):
    assert check_gpu_busy_unowned(_facts(make_facts, host, util, fb), GpuBusyUnownedConfig()) == [], why


def test_a_kubernetes_node_with_no_gpu_pod_bound_is_named_by_its_platform(make_facts):
    nodes = api_list("NodeList", [node("gn-1"), node("gn-2")])
    pods = api_list("PodList", [pod("ft-0", "ml", node_name="gn-2", gpus=8, owner=("Job", "ft"))])
    smi = ("index, name, utilization.gpu [%], memory.used [MiB]\n0, NVIDIA H100 80GB HBM3, 100 %, 61234 MiB\n")
    for host, fired in (("gn-1", True), ("gn-2", False)):
        facts = make_facts(("k8s/nodes.json", "k8s-json", nodes), ("k8s/pods.json", "k8s-json", pods),
                           ("gpu/x.csv", "nvidia-smi-csv", smi), **{"gpu/x.csv": {"node": host}})
        found = check_gpu_busy_unowned(facts, GpuBusyUnownedConfig())
        assert [f.culprits for f in found] == ([[f"k8snode:{host}"]] if fired else [])


def test_jobs_refused_a_busy_gpu_there_make_the_stray_process_the_nodes_fault(make_facts):
    sacct = ("JobID|JobName|User|State|ExitCode|Start|End|Elapsed|NodeList|\n"
             "9100|ft|ana|FAILED|1:0|2026-03-04T09:00:00|2026-03-04T09:00:40|00:00:40|h-07|\n")
    log = "[rank0]: RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n"
    facts = make_facts(("slurm/sinfo.txt", "sinfo-text", SINFO), ("slurm/squeue.txt", "squeue-text", SQUEUE),
                       ("slurm/sacct.txt", "sacct-text", sacct), ("gpu/h-07.prom", "dcgm-prometheus-text", _dcgm("h-07", 0, 15_000)),
                       ("logs/9100/out", "job-log", log), **{"gpu/h-07.prom": {"node": "h-07"}, "logs/9100/out": {"job": "9100"}})
    (f,) = check_gpu_busy_unowned(facts, GpuBusyUnownedConfig())
    assert f.root_cause == "node_software_fault" and f.culprits == ["node:h-07", "job:9100"]
    assert [a.type for a in f.suggested_actions][:2] == ["drain_node", "resubmit_from_checkpoint"]
