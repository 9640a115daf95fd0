"""check_gpu_straggler: one node's GPUs much less busy (or slower clocked) than its job peers."""

from __future__ import annotations

from tools.checks.base import CheckConfig, job_culprits
from statistics import median

from tools.checks.gpu_peers import SM_CLOCK, gpu_activity, metric_evidence, node_means, peer_groups, PeerMedians, utilisation
from tools.facts import Facts
from tools.facts.queries import affected_jobs
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Finding
from tools.platform import node_ref, take_out_of_service

__all__ = ["StragglerConfig", "check_gpu_straggler"]


class StragglerConfig(CheckConfig):
    """Thresholds, as ratios of the node's value to its peers' median."""

    util_ratio: float = 0.6
    clock_ratio: float = 0.75
    min_peer_util_pct: float = 40.0
    """Peers must be this busy for a low node to count (an idle job is not a straggler)."""
    gpu_ratio: float = 0.75
    """One GPU whose SM activity is under this share of its job's other GPUs' median is a straggler..."""
    gpu_peers_floor: float = 0.9
    """...when every other GPU of the job is within this share of that median (one clear outlier, not the
    spread of pipeline stages), and the job has at least ``min_job_gpus`` GPUs with data."""
    min_job_gpus: int = 8
    idle_util_pct: float = 5.0
    """With no allocation known (no squeue/scontrol view), a node whose GPUs average below this is
    taken as idle -- running nothing -- and is neither a straggler nor anyone's peer."""


def check_gpu_straggler(facts: Facts, cfg: StragglerConfig) -> list[Finding]:
    """straggler_node for a node whose mean GPU utilisation or SM clock is far below the other nodes
    of the same running job.

    Sources: dcgm-exporter / Prometheus samples (DCGM_FI_DEV_GPU_UTIL or DCGM_FI_PROF_GR_ENGINE_ACTIVE,
    DCGM_FI_DEV_SM_CLOCK), squeue/scontrol allocations for peer groups.
    """
    metric, util = utilisation(facts)
    clocks = node_means(facts, SM_CLOCK)
    findings: list[Finding] = []
    seen: set[str] = set()
    with_data = set(util) | set(clocks)
    if not facts.jobs:  # no allocations: only nodes that are doing something can be compared
        with_data -= {n for n, u in util.items() if u < cfg.idle_util_pct}
        # On Kubernetes a node whose pods hold only some of its GPUs averages in the idle ones: its mean says
        # how much of it is allocated, not how fast it runs.
        with_data -= _partly_allocated(facts)
    for group in peer_groups(facts, with_data):
        u_peers, c_peers = PeerMedians(util, group), PeerMedians(clocks, group)
        for node in group:
            if node in seen:
                continue
            evidence, why = [], []
            u_peer = u_peers.without(node)
            if node in util and u_peer and u_peer >= cfg.min_peer_util_pct and util[node] < cfg.util_ratio * u_peer:
                evidence.append(metric_evidence(metric or "util", node, util[node], u_peer, "%"))
                why.append(f"{metric} {util[node]:.0f}% vs peer median {u_peer:.0f}% "
                           f"(ratio {util[node] / u_peer:.2f}, threshold {cfg.util_ratio})")
            c_peer = c_peers.without(node)
            if node in clocks and c_peer and clocks[node] < cfg.clock_ratio * c_peer:
                evidence.append(metric_evidence(SM_CLOCK, node, clocks[node], c_peer, "MHz"))
                why.append(f"SM clock {clocks[node]:.0f} MHz vs peer median {c_peer:.0f} MHz "
                           f"(ratio {clocks[node] / c_peer:.2f}, threshold {cfg.clock_ratio})")
            if not evidence:
                continue
            seen.add(node)
            # Metrics describe now: the jobs slowed are those still there, not ones that ended earlier.
            jobs = affected_jobs(facts, [node], since=facts.captured_at)
            findings.append(
                Finding(
                    check="gpu_straggler",
                    root_cause="straggler_node",
                    message=f"{node} runs far below its job peers: " + "; ".join(why),
                    culprits=[f"node:{node}", *job_culprits(jobs)],
                    evidence=evidence,
                    strength="heuristic", confidence=confidence("heuristic", corroborated=len(evidence) >= 2),
                    suggested_actions=[
                        ActionSpec(type="run_gpu_diagnostic", node=node),
                        *take_out_of_service(facts, node_ref(facts, node), "straggler: GPUs far below job peers"),
                    ],
                )
            )
    findings += _single_gpu_outliers(facts, cfg, seen)
    return findings


def _partly_allocated(facts: Facts) -> set[str]:
    """Kubernetes nodes whose running pods request fewer GPUs than the node offers (allocatable nvidia.com/gpu)."""
    out: set[str] = set()
    for n in facts.k8s_nodes:
        offered = n.allocatable_gpu or n.capacity_gpu or 0
        held = sum(p.gpu_request or 0 for p in facts.pods_on(n.name) if p.phase == "Running")
        if offered and held < offered:
            out.add(n.name)
    return out


def _single_gpu_outliers(facts: Facts, cfg: StragglerConfig, seen: set[str]) -> list[Finding]:
    """straggler_node for the node of one GPU that works far less than every other GPU of its running job
    (DCGM_FI_PROF_SM_ACTIVE or GR_ENGINE_ACTIVE per GPU): a synchronous job waits for its slowest GPU, and
    a per-node mean over eight GPUs hides one slow one."""
    metric, act = gpu_activity(facts)
    out: list[Finding] = []
    # Each job's GPUs through a per-node index, in act's order (min's tie-break depends on it): a scan of
    # every GPU per job is 100,000 jobs x 80,000 GPUs at 10,000 nodes.
    by_node: dict[str, list[int]] = {}
    keys = list(act)
    for i, k in enumerate(keys):
        by_node.setdefault(k[0], []).append(i)
    for job in facts.jobs:
        if (job.state or "") != "RUNNING":
            continue
        at = sorted(i for n in dict.fromkeys(job.nodes) for i in by_node.get(n, ()))
        gpus = {keys[i]: act[keys[i]] for i in at}
        if len(gpus) < cfg.min_job_gpus:
            continue
        low_key = min(gpus, key=lambda k: gpus[k])
        others = [v for k, v in gpus.items() if k != low_key]
        ref_val = median(others)
        if ref_val < cfg.min_peer_util_pct or gpus[low_key] >= cfg.gpu_ratio * ref_val \
                or min(others) < cfg.gpu_peers_floor * ref_val:
            continue
        node, gpu = low_key
        sharing = [j for j in facts.jobs_on_node(node, states=("RUNNING",)) if j.job_id != job.job_id]
        if node in seen or sharing:
            continue  # a GPU of a node shared with other jobs may simply not be this job's
        seen.add(node)
        jobs = affected_jobs(facts, [node], since=facts.captured_at)
        why = (f"GPU {gpu} {metric} {gpus[low_key]:.0f}% vs {ref_val:.0f}% median of the job's other "
               f"{len(others)} GPUs (ratio {gpus[low_key] / ref_val:.2f}, threshold {cfg.gpu_ratio})")
        out.append(Finding(
            check="gpu_straggler", root_cause="straggler_node",
            message=f"{node} holds back job {job.job_id}: {why}",
            culprits=[f"node:{node}", *job_culprits(jobs)],
            evidence=[metric_evidence(metric or "activity", f"{node} GPU {gpu}", gpus[low_key], ref_val, "%")],
            strength="heuristic", confidence=confidence("heuristic"),
            suggested_actions=[ActionSpec(type="run_gpu_diagnostic", node=node),
                               *take_out_of_service(facts, node_ref(facts, node), f"straggler: {why}")],
        ))
    return out
