"""check_node_not_responding: slurmd on a node stopped answering slurmctld."""

from __future__ import annotations

from tools.checks.base import CheckConfig, affected_jobs, job_culprits, resubmit_specs
from tools.facts import Facts
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["UnresponsiveConfig", "check_node_not_responding"]


class UnresponsiveConfig(CheckConfig):
    """The reason text slurmctld writes for a node whose slurmd stopped answering."""

    reason_text: str = "not responding"


def _lost_with_node(facts: Facts, job_id: str) -> bool:
    """Still allocated there, or ended NODE_FAIL (what Slurm gives jobs lost with a node); a job a user
    cancelled or that failed on its own earlier was not lost to this node."""
    rec = facts.job(job_id) or facts.acct_job(job_id)
    state = (rec.state or "").split(" ")[0] if rec else ""
    return state in ("RUNNING", "COMPLETING", "SUSPENDED", "NODE_FAIL")


def check_node_not_responding(facts: Facts, cfg: UnresponsiveConfig) -> list[Finding]:
    """node_unresponsive per node flagged NOT_RESPONDING (sinfo ``*``), or DOWN with reason
    "Not responding". Jobs still allocated there are culprits too.

    Sources: sinfo / scontrol show node (state flags, reason), sinfo -R.
    """
    reasons = {n: r for r in facts.node_reasons for n in r.nodes}
    findings: list[Finding] = []
    for node in facts.nodes:
        reason = node.reason or (reasons[node.name].reason if node.name in reasons else "")
        down_not_responding = (node.state or "") == "DOWN" and cfg.reason_text in reason.lower()
        if not (node.not_responding or down_not_responding):
            continue
        jobs = [j for j in affected_jobs(facts, [node.name]) if _lost_with_node(facts, j)]
        state = "+".join([node.state or "?", *node.flags])
        findings.append(Finding(
            check="node_not_responding", root_cause="node_unresponsive",
            message=f"{node.name} is {state}" + (f" (reason: {reason})" if reason else ""),
            culprits=[f"node:{node.name}", *job_culprits(jobs)],
            evidence=[Evidence(text=f"node {node.name} State={state} Reason={reason or 'none'}",
                               metric="scontrol show node")],
            confidence=0.85,
            suggested_actions=[ActionSpec(type="drain_node", node=node.name, reason="slurmd not responding")]
            + resubmit_specs(facts, jobs, [node.name], f"job lost with {node.name}"),
        ))
    return findings
