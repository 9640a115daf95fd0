"""check_host_oversubscribed: one node of a multi-node job whose CPUs are oversubscribed while its peers' are not.

A synchronous job runs at the pace of its slowest rank. On a node shared with other jobs (Slurm allocates
CPUs, not cores' worth of threads: a job started with more threads than its allocation, without cgroup CPU
confinement, takes its neighbours' CPUs), or on a node where processes outlived their job, the run queue
grows far past the CPU count: load average over CPUs. The GPUs show nothing; the ranks on that node wait
for their data loaders and host-side work.
"""

from __future__ import annotations

from statistics import median

from tools.checks.base import CheckConfig, job_culprits
from tools.facts import Facts
from tools.knowledge.host import load_per_cpu
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.platform import node_ref, take_out_of_service

__all__ = ["HostOversubscribedConfig", "check_host_oversubscribed"]


class HostOversubscribedConfig(CheckConfig):
    """Load average per CPU that makes a node oversubscribed, and what its peers may carry."""

    overloaded: float = 1.5
    """Run-queue length per CPU (load / CPUs) at or above which the node's CPUs are oversubscribed."""
    peers_below: float = 1.0
    """The job's other nodes' median load per CPU must be under this (they are not starved alike)."""


def check_host_oversubscribed(facts: Facts, cfg: HostOversubscribedConfig) -> list[Finding]:
    """straggler_node per node of a running multi-node job whose load per CPU is at least ``overloaded``
    while the job's other nodes' median is under ``peers_below``. Culprits: the node, the job held back,
    and the other jobs running on that node (the likely source; each owner notified). With no other job
    there, the load is processes outside any running job: the node is drained to clean it.

    Sources: sinfo ``CPU_LOAD``/``CPUS(A/I/O/T)`` or scontrol ``CPULoad``/``CPUTot``, node_exporter
    ``node_load1``; squeue/scontrol allocations.
    """
    loads: dict[str, float | None] = {}

    def load(node: str) -> float | None:
        if node not in loads:
            loads[node] = load_per_cpu(facts, node)
        return loads[node]

    findings: list[Finding] = []
    seen: set[str] = set()
    for job in facts.jobs:
        if (job.state or "") != "RUNNING" or len(job.nodes) < 2:
            continue
        known = {n: v for n in job.nodes if (v := load(n)) is not None}
        if len(known) < 2:
            continue
        for node, ratio in known.items():
            peers = [v for n, v in known.items() if n != node]
            if node in seen or ratio < cfg.overloaded or median(peers) >= cfg.peers_below:
                continue
            seen.add(node)
            others = [j.job_id for j in facts.jobs_on_node(node) if j.job_id != job.job_id and (j.state or "") == "RUNNING"]
            slurm = facts.node(node)
            where = (f"load {slurm.cpu_load:.0f} on {slurm.cpus} CPUs" if slurm is not None and slurm.cpu_load is not None
                     and slurm.cpus else f"load {ratio:.1f} per CPU")
            evidence = [Evidence(text=f"{node}: {where} ({ratio:.1f} per CPU; job {job.job_id}'s other nodes "
                                      f"median {median(peers):.2f})", metric="CPULoad", value=round(ratio, 2),
                                 unit="load/CPU")]
            ref = node_ref(facts, node)
            if others:
                evidence += [Evidence(text=f"job {j} also runs on {node}", metric="squeue") for j in others[:3]]
                actions = [ActionSpec(type="notify_owner", job=j, reason=f"runs more threads than its CPUs on {node}, "
                                      f"slowing job {job.job_id}") for j in others]
                why = (f"shared with job(s) {', '.join(others[:3])}: the load beyond what job {job.job_id} puts on its "
                       "other nodes comes from there (more threads than their allocated CPUs)")
            else:
                actions = take_out_of_service(facts, ref, f"CPUs oversubscribed ({where}) with no other job: stray processes")
                why = "no other job runs there: processes outside any job (left over from an earlier one)"
            findings.append(Finding(
                check="host_oversubscribed", root_cause="straggler_node",
                message=f"{node} holds back job {job.job_id}: its CPUs are oversubscribed ({where}) while the job's "
                        f"other nodes are not; {why}",
                culprits=[ref.culprit, *job_culprits([job.job_id, *others])], evidence=evidence[:5],
                strength="heuristic", confidence=confidence("heuristic", corroborated=bool(others)),
                suggested_actions=actions,
            ))
    return findings
