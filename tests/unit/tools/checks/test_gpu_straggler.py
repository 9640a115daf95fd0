"""check_gpu_straggler on dcgm-exporter text (per-node metrics) and squeue allocations."""

from __future__ import annotations

from tools.checks.gpu_straggler import StragglerConfig, check_gpu_straggler

# Context: job 74555 spans gpu[001-004]; its nodes are each other's peers.
SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             74555       gpu llm70b-p     judy  R    3:10:02      4 gpu[001-004]
"""


def _prom(node: str, util: float, clock: float, gpus: int = 4) -> str:
    """dcgm-exporter 3.x text for one node: GPU_UTIL (%) and SM_CLOCK (MHz) per GPU, labels as
    etc/default-counters.csv exports them."""
    out = []
    for name, help_, value in (("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", clock),
                               ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", util)):
        out += [f"# HELP {name} {help_}", f"# TYPE {name} gauge"]
        out += [f'{name}{{gpu="{g}",UUID="GPU-{node}-{g}",pci_bus_id="00000000:{0x18 + g:02X}:00.0",device="nvidia{g}",'
                f'modelName="NVIDIA H100 80GB HBM3",Hostname="{node}",DCGM_FI_DRIVER_VERSION="550.90.07"}} {value:g}'
                for g in range(gpus)]
    return "\n".join(out) + "\n"


BUSY = 96.0
FULL_CLOCK = 1980.0


def _facts(make_facts, proms: dict[str, str], squeue: str | None = SQUEUE):
    files = [("slurm/squeue.txt", "squeue-text", squeue)] if squeue is not None else []
    files += [(f"gpu/{n}.prom", "dcgm-prometheus-text", t) for n, t in proms.items()]
    return make_facts(*files, **{f"gpu/{n}.prom": {"node": n} for n in proms})


# Fires: gpu004 works at 30% while its three job peers run at 96% (ratio 0.31 < 0.6).
LOW_UTIL = {**{n: _prom(n, BUSY, FULL_CLOCK) for n in ("gpu001", "gpu002", "gpu003")},
            "gpu004": _prom("gpu004", 30, FULL_CLOCK)}
# Fires: gpu004 keeps its GPUs busy but at 900 MHz (ratio 0.45 < 0.75): a degraded node.
LOW_CLOCK = {**{n: _prom(n, BUSY, FULL_CLOCK) for n in ("gpu001", "gpu002", "gpu003")},
             "gpu004": _prom("gpu004", BUSY, 900)}


def test_low_util_node_of_a_running_job_is_a_straggler(make_facts):
    (f,) = check_gpu_straggler(_facts(make_facts, LOW_UTIL), StragglerConfig())
    assert f.root_cause == "straggler_node"
    assert f.culprits == ["node:gpu004", "job:74555"]
    (e,) = f.evidence
    assert (e.metric, e.value, e.unit) == ("DCGM_FI_DEV_GPU_UTIL", 30.0, "%") and "peer median 96" in e.text
    assert [(a.type, a.node) for a in f.suggested_actions] == [("run_gpu_diagnostic", "gpu004"), ("drain_node", "gpu004")]
    assert "30% vs peer median 96% (ratio 0.31, threshold 0.6)" in f.message


def test_low_clock_node_is_a_straggler(make_facts):
    (f,) = check_gpu_straggler(_facts(make_facts, LOW_CLOCK), StragglerConfig())
    assert f.culprits[0] == "node:gpu004"
    assert f.evidence[0].metric == "DCGM_FI_DEV_SM_CLOCK" and f.evidence[0].unit == "MHz"
    assert "(ratio 0.45, threshold 0.75)" in f.message


def test_idle_node_outside_the_job_is_not_a_straggler(make_facts):
    # gpu004 is idle (0%, idle clocks) and not in the job: the job runs on gpu[001-003] only.
    squeue = SQUEUE.replace("      4 gpu[001-004]", "      3 gpu[001-003]")
    proms = {**{n: _prom(n, BUSY, FULL_CLOCK) for n in ("gpu001", "gpu002", "gpu003")}, "gpu004": _prom("gpu004", 0, 345)}
    assert check_gpu_straggler(_facts(make_facts, proms, squeue), StragglerConfig()) == []


def test_idle_node_with_no_scheduler_view_is_not_a_straggler(make_facts):
    # slurmctld down: no squeue at all. gpu004 runs nothing (0%, 345 MHz) beside three busy nodes.
    proms = {**{n: _prom(n, BUSY, FULL_CLOCK) for n in ("gpu001", "gpu002", "gpu003")}, "gpu004": _prom("gpu004", 0, 345)}
    assert check_gpu_straggler(_facts(make_facts, proms, squeue=None), StragglerConfig()) == []
    # ...but a node that is working, only slower, is still compared.
    proms["gpu004"] = _prom("gpu004", BUSY, 900)
    assert check_gpu_straggler(_facts(make_facts, proms, squeue=None), StragglerConfig())[0].culprits == ["node:gpu004"]


def test_evenly_low_job_is_not_a_straggler(make_facts):
    # All four nodes at 25%: a starved job (input_pipeline_bound), not one slow node.
    proms = {n: _prom(n, 25, FULL_CLOCK) for n in ("gpu001", "gpu002", "gpu003", "gpu004")}
    assert check_gpu_straggler(_facts(make_facts, proms), StragglerConfig()) == []


def test_thresholds_are_configurable(make_facts):
    assert check_gpu_straggler(_facts(make_facts, LOW_UTIL), StragglerConfig(util_ratio=0.3)) == []
    assert check_gpu_straggler(_facts(make_facts, LOW_CLOCK), StragglerConfig(clock_ratio=0.4)) == []
    assert check_gpu_straggler(_facts(make_facts, LOW_UTIL), StragglerConfig(min_peer_util_pct=97)) == []


def test_hostile_job_name_is_plain_data(make_facts):
    squeue = SQUEUE.replace("llm70b-p", "$(reboot)")
    (f,) = check_gpu_straggler(_facts(make_facts, LOW_UTIL, squeue), StragglerConfig())
    assert f.culprits == ["node:gpu004", "job:74555"]
    assert all("reboot" not in (a.reason or "") for a in f.suggested_actions)


def test_job_that_ended_earlier_on_the_node_is_not_named(make_facts):
    # sacct also lists a job that failed on gpu004 yesterday evening; the metrics describe now,
    # so only the running job 74555 is slowed by gpu004.
    sacct = """JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocTRES|NodeList|
74400|bert-ft|ivan|nlp|gpu|FAILED|1:0|2026-03-03T17:00:00|2026-03-03T17:05:00|2026-03-03T19:00:00|01:55:00|12:00:00|1|billing=64,cpu=64,gres/gpu=4,mem=800G,node=1|gpu004|
"""
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("slurm/sacct.txt", "sacct-text", sacct),
                       *[(f"gpu/{n}.prom", "dcgm-prometheus-text", t) for n, t in LOW_UTIL.items()],
                       **{f"gpu/{n}.prom": {"node": n} for n in LOW_UTIL})
    (f,) = check_gpu_straggler(facts, StragglerConfig())
    assert f.culprits == ["node:gpu004", "job:74555"]


def _sm_active(node: str, values: list[float]) -> str:
    """dcgm-exporter text with DCGM_FI_PROF_SM_ACTIVE (a 0..1 ratio) per GPU and GPU_UTIL pinned at 100."""
    out = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    out += [f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",Hostname="{node}"}} 100' for g in range(len(values))]
    out += ["# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.",
            "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge"]
    out += [f'DCGM_FI_PROF_SM_ACTIVE{{gpu="{g}",Hostname="{node}"}} {v:.6f}' for g, v in enumerate(values)]
    return "\n".join(out) + "\n"


TWO_NODES = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             91034       gpu  mg-70b     judy  R    5:10:02      2 h[017-018]
"""


def test_one_slow_gpu_among_sixteen_names_its_node_where_node_means_hide_it(make_facts):
    proms = {"h017": _sm_active("h017", [0.93] * 8), "h018": _sm_active("h018", [0.93, 0.92, 0.93, 0.61, 0.93, 0.92, 0.93, 0.92])}
    (f,) = check_gpu_straggler(_facts(make_facts, proms, TWO_NODES), StragglerConfig())
    assert f.culprits == ["node:h018", "job:91034"] and "GPU 3" in f.message
    assert [a.type for a in f.suggested_actions] == ["run_gpu_diagnostic", "drain_node"]


def test_pipeline_stage_spread_and_a_node_shared_with_another_job_do_not_fire(make_facts):
    # Pipeline stages work unevenly (0.70-0.93): no single outlier.
    spread = {"h017": _sm_active("h017", [0.93, 0.90, 0.88, 0.85, 0.80, 0.78, 0.75, 0.70]),
              "h018": _sm_active("h018", [0.93] * 7 + [0.60])}
    assert check_gpu_straggler(_facts(make_facts, spread, TWO_NODES), StragglerConfig()) == []
    shared = TWO_NODES + "             91040       gpu    small      ana  R       5:02      1 h018\n"
    proms = {"h017": _sm_active("h017", [0.93] * 8), "h018": _sm_active("h018", [0.93] * 7 + [0.10])}
    assert check_gpu_straggler(_facts(make_facts, proms, shared), StragglerConfig()) == []


def _k8s(nodes: dict[str, int]) -> tuple[str, str]:
    """Node and pod lists (kubectl get -o json): each node offers 4 GPUs; ``nodes`` gives the GPUs its one
    Running pod requests."""
    import json
    items = [{"metadata": {"name": n}, "spec": {}, "status": {
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-03-01T00:00:00Z"}],
        "capacity": {"nvidia.com/gpu": "4"}, "allocatable": {"nvidia.com/gpu": "4"}}} for n in nodes]
    pods = [{"metadata": {"name": f"train-{n}", "namespace": "ml"}, "spec": {"nodeName": n, "containers": [
        {"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(g)}, "limits": {"nvidia.com/gpu": str(g)}}}]},
        "status": {"phase": "Running"}} for n, g in nodes.items()]
    return (json.dumps({"kind": "NodeList", "apiVersion": "v1", "items": items}),
            json.dumps({"kind": "PodList", "apiVersion": "v1", "items": pods}))


def test_a_kubernetes_node_with_idle_unallocated_gpus_is_not_a_straggler(make_facts):
    # gpu004's pod holds 2 of its 4 GPUs: its mean (48%) counts two idle GPUs, not a slow node.
    nodes, pods = _k8s({"gpu001": 4, "gpu002": 4, "gpu003": 4, "gpu004": 2})
    proms = {**{n: _prom(n, BUSY, FULL_CLOCK) for n in ("gpu001", "gpu002", "gpu003")},
             "gpu004": _prom("gpu004", 48, FULL_CLOCK)}
    k8s = [("k8s/nodes.json", "k8s-json", nodes), ("k8s/pods.json", "k8s-json", pods)]
    files = k8s + [(f"gpu/{n}.prom", "dcgm-prometheus-text", t) for n, t in proms.items()]
    ctx = {f"gpu/{n}.prom": {"node": n} for n in proms}
    assert check_gpu_straggler(make_facts(*files, **ctx), StragglerConfig()) == []
    # Fully allocated and still at half the peers' utilisation: compared, and named.
    nodes, pods = _k8s({"gpu001": 4, "gpu002": 4, "gpu003": 4, "gpu004": 4})
    files = [("k8s/nodes.json", "k8s-json", nodes), ("k8s/pods.json", "k8s-json", pods)] + files[2:]
    assert check_gpu_straggler(make_facts(*files, **ctx), StragglerConfig())[0].culprits == ["node:gpu004"]
