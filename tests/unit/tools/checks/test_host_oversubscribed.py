"""check_host_oversubscribed on sinfo columns, scontrol show node and node_exporter's node_load1."""

from __future__ import annotations

import json

from tools.checks.host_oversubscribed import HostOversubscribedConfig, check_host_oversubscribed

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             8801       gpu  llm-pre     anna  R    4:40:12      4 n[01-04]
             8830       gpu  kmer-ss     omar  R    1:58:40      1 n03
             8840       gpu     eval     anna PD       0:00      1 (Priority)
"""
SQUEUE_ALONE = "\n".join(line for line in SQUEUE.splitlines() if "8830" not in line) + "\n"
# sinfo -N -o "%N %T %C %O %e": n03's run queue is 231 on 128 CPUs, its peers carry ~33.
SINFO = """NODELIST STATE CPUS(A/I/O/T) CPU_LOAD FREE_MEM
n01 mixed 64/64/0/128 33.10 402112
n02 mixed 64/64/0/128 32.84 401870
n03 allocated 128/0/0/128 231.77 18220
n04 mixed 64/64/0/128 33.02 399120
"""
SINFO_EVEN = SINFO.replace("231.77", "34.00")


def _node(name: str, load: str) -> str:
    return (f"NodeName={name} Arch=x86_64 CoresPerSocket=32\n   CPUAlloc=64 CPUEfctv=64 CPUTot=64 CPULoad={load}\n"
            f"   Gres=gpu:4\n   State=MIXED ThreadsPerCore=1 TmpDisk=0 Weight=1\n   Partitions=gpu\n\n")


def _facts(make_facts, nodes: tuple[str, str, str], squeue: str = SQUEUE):
    return make_facts(("slurm/squeue.txt", "squeue-text", squeue), nodes)


def test_a_shared_node_run_queue_far_past_its_cpus_names_the_node_victim_and_neighbour(make_facts):
    (f,) = check_host_oversubscribed(_facts(make_facts, ("slurm/sinfo.txt", "sinfo-text", SINFO)),
                                     HostOversubscribedConfig())
    assert f.root_cause == "straggler_node" and f.culprits == ["node:n03", "job:8801", "job:8830"]
    assert [(a.type, a.job) for a in f.suggested_actions] == [("notify_owner", "8830")]
    assert "load 232 on 128 CPUs" in f.message


def test_scontrol_cpuload_with_no_neighbour_drains_the_node_to_clean_it(make_facts):
    text = _node("n01", "30.10") + _node("n02", "28.00") + _node("n03", "141.90") + _node("n04", "31.00")
    (f,) = check_host_oversubscribed(_facts(make_facts, ("slurm/scontrol_node.txt", "scontrol-node-text", text),
                                            SQUEUE_ALONE), HostOversubscribedConfig())
    assert f.culprits == ["node:n03", "job:8801"] and "no other job runs there" in f.message
    assert [(a.type, a.node) for a in f.suggested_actions][:1] == [("drain_node", "n03")]


def test_node_load1_from_prometheus_counts_over_slurm_cpu_counts(make_facts):
    text = _node("n01", "N/A") + _node("n02", "N/A") + _node("n03", "N/A") + _node("n04", "N/A")
    query = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "node_load1", "instance": f"{h}:9100"}, "value": [1772619300.0, v]}
        for h, v in (("n01", "20.5"), ("n02", "21.0"), ("n03", "190.2"), ("n04", "19.9"))]}})
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("slurm/node.txt", "scontrol-node-text", text),
                       ("prom/load.json", "prometheus-query-json", query))
    (f,) = check_host_oversubscribed(facts, HostOversubscribedConfig())
    assert f.culprits[0] == "node:n03" and "load 3.0 per CPU" in f.message


def test_even_load_across_the_job_or_a_single_node_job_is_no_straggler(make_facts):
    assert check_host_oversubscribed(_facts(make_facts, ("slurm/sinfo.txt", "sinfo-text", SINFO_EVEN)),
                                     HostOversubscribedConfig()) == []
    one = SQUEUE.replace("      4 n[01-04]", "      1 n03")
    assert check_host_oversubscribed(_facts(make_facts, ("slurm/sinfo.txt", "sinfo-text", SINFO), one),
                                     HostOversubscribedConfig()) == []
