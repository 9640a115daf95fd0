"""check_nan_on_one_node: NaN/inf losses that only the ranks of one node report (silent data corruption)."""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.models.findings import ActionSpec, Finding

__all__ = ["NanConfig", "check_nan_on_one_node", "rank_node"]


class NanConfig(CheckConfig):
    """Minimum NaN events before blaming a node."""

    min_events: int = 2


def rank_node(facts: Facts, job_id: str, rank: int) -> str | None:
    """The node a global rank runs on, assuming Slurm's block distribution (ranks fill a node's GPUs
    before the next node) and one rank per GPU; None when the job's nodes or GPU counts are unknown."""
    job = facts.job(job_id)
    acct = facts.acct_job(job_id)
    nodes = (job.nodes if job else []) or (acct.nodes if acct else [])
    if not nodes:
        return None
    gpus = (job.num_gpus if job else None) or (acct.num_gpus if acct else None)
    per_node = gpus // len(nodes) if gpus and gpus >= len(nodes) else None
    if per_node is None:
        node = facts.node(nodes[0])
        per_node = node.gpus_total if node and node.gpus_total else None
    if not per_node:
        return None
    idx = rank // per_node
    return nodes[idx] if idx < len(nodes) else None


def check_nan_on_one_node(facts: Facts, cfg: NanConfig) -> list[Finding]:
    """silent_data_corruption when a multi-node job's NaN/inf loss or grad-norm lines come only from
    ranks on one node while the other nodes' ranks keep training (no Xid needed: the GPU computes
    wrong numbers without reporting an error).

    Sources: job-log nan_loss events with ranks; squeue/sacct node lists and GPU counts.
    """
    by_job: dict[str, list] = defaultdict(list)
    for e in facts.job_log_events:
        if e.kind == "nan_loss" and e.job and e.rank is not None:
            by_job[e.job].append(e)
    findings: list[Finding] = []
    for job, events in by_job.items():
        if len(events) < cfg.min_events:
            continue
        nodes = {rank_node(facts, job, e.rank) for e in events}
        j = facts.job(job) or facts.acct_job(job)
        if None in nodes or len(nodes) != 1 or not j or len(j.nodes) < 2:
            continue
        node = nodes.pop()
        ranks = sorted({e.rank for e in events})
        findings.append(Finding(
            check="nan_on_one_node", root_cause="silent_data_corruption",
            message=f"job {job}: {len(events)} NaN/inf loss line(s), all from ranks {ranks} on {node} "
            f"(of {len(j.nodes)} nodes; threshold {cfg.min_events})",
            culprits=[f"node:{node}", f"job:{job}"],
            evidence=[log_evidence(e) for e in events[:4]],
            confidence=0.75,
            suggested_actions=[ActionSpec(type="drain_node", node=node, reason="NaNs only on this node's GPUs"),
                               ActionSpec(type="run_gpu_diagnostic", node=node, reason="suspected silent data corruption")],
        ))
    return findings
