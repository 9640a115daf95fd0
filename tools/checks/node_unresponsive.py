"""check_node_not_responding: slurmd on a node stopped answering slurmctld."""

from __future__ import annotations

from tools.checks.base import CheckConfig, job_culprits
from tools.facts import Facts
from tools.facts.queries import affected_jobs, job_state
from tools.knowledge.precedence import confidence
from tools.platform import resubmit_specs
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["UnresponsiveConfig", "check_node_not_responding"]


class UnresponsiveConfig(CheckConfig):
    """The reason text slurmctld writes for a node whose slurmd stopped answering."""

    reason_text: str = "not responding"


def _lost_with_node(facts: Facts, job_id: str) -> bool:
    """Still allocated there, or ended NODE_FAIL (what Slurm gives jobs lost with a node); a job a user
    cancelled or that failed on its own earlier was not lost to this node."""
    return job_state(facts, job_id) in ("RUNNING", "COMPLETING", "SUSPENDED", "NODE_FAIL")


def check_node_not_responding(facts: Facts, cfg: UnresponsiveConfig) -> list[Finding]:
    """node_unresponsive per node flagged NOT_RESPONDING (sinfo ``*``), or DOWN with reason
    "Not responding". Jobs still allocated there are culprits too.

    Sources: sinfo / scontrol show node (state flags, reason), sinfo -R.
    """
    findings: list[Finding] = []
    for node in facts.nodes:
        reason = facts.reason_of(node.name) or ""
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
            strength="state", confidence=confidence("state", corroborated=bool(jobs)),
            suggested_actions=[ActionSpec(type="drain_node", node=node.name, reason="slurmd not responding")]
            + resubmit_specs(facts, jobs, [node.name], f"job lost with {node.name}"),
        ))
    return findings
