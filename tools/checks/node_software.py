"""check_node_software_fault: a node drained by Slurm because its software stack failed
(kill task failed, prolog/epilog errors, container runtime, Fabric Manager, driver load)."""

from __future__ import annotations

from tools.checks.base import CheckConfig, affected_jobs, job_culprits, kernel_evidence
from tools.facts import Facts
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["NodeSoftwareConfig", "check_node_software_fault"]


class NodeSoftwareConfig(CheckConfig):
    """Drain reasons and log fragments that point at node software."""

    drain_reasons: tuple[str, ...] = (
        "kill task failed", "prolog error", "epilog error", "launch failed", "batch job complete failure",
        "fabric manager", "nvidia-fabricmanager", "duplicate jobid",
    )
    log_words: tuple[str, ...] = ("spank", "pyxis", "enroot", "epilog", "prolog", "fabricmanager", "nvidia-persistenced")


def check_node_software_fault(facts: Facts, cfg: NodeSoftwareConfig) -> list[Finding]:
    """node_software_fault per drained node whose reason (scontrol/sinfo -R) names a software
    failure; kernel/syslog lines about SPANK plugins, prolog/epilog or Fabric Manager corroborate.
    """
    reasons = {n: r.reason for r in facts.node_reasons for n in r.nodes}
    findings: list[Finding] = []
    for node in facts.nodes:
        reason = node.reason or reasons.get(node.name, "")
        if not (node.drained or (node.state or "") == "DOWN"):
            continue
        if not any(r in reason.lower() for r in cfg.drain_reasons):
            continue
        logs = [e for e in facts.kernel_events if e.node == node.name
                and any(w in e.message.lower() for w in cfg.log_words)]
        jobs = affected_jobs(facts, [node.name])
        findings.append(Finding(
            check="node_software_fault", root_cause="node_software_fault",
            message=f"{node.name} drained by Slurm: {reason}" + (f"; {len(logs)} related log line(s)" if logs else ""),
            culprits=[f"node:{node.name}", *job_culprits(jobs)],
            evidence=[Evidence(text=f"node {node.name} State={'+'.join([node.state or '?', *node.flags])} "
                                    f"Reason={reason}", metric="sinfo -R")] + [kernel_evidence(e) for e in logs[:3]],
            confidence=0.75 if logs else 0.65,
            suggested_actions=[ActionSpec(type="run_gpu_diagnostic", node=node.name)],
        ))
    return findings
