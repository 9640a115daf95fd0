"""check_node_config_mismatch: a node reports less than slurm.conf says it has (GRES, memory, CPUs)."""

from __future__ import annotations

from tools.checks.base import CheckConfig, job_culprits
from tools.facts import Facts
from tools.facts.queries import affected_jobs
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["NodeConfigConfig", "check_node_config_mismatch"]


class NodeConfigConfig(CheckConfig):
    """Reason fragments slurmctld writes when registration does not match the configuration."""

    reasons: tuple[str, ...] = (
        "reported lower than configured", "low realmemory", "low socket", "low cpus", "low tmpdisk",
        "gres/gpu count", "invalid_reg", "node configuration differs", "cpu count", "realmemory",
    )


def _gpu_mismatch(reason: str) -> bool:
    low = reason.lower()
    return "gres" in low or "gpu" in low or not any(w in low for w in ("memory", "cpu", "socket", "tmpdisk", "core"))


def check_node_config_mismatch(facts: Facts, cfg: NodeConfigConfig) -> list[Finding]:
    """node_config_mismatch per node in INVAL / INVALID_REG state or drained with a reason saying it
    registered with fewer GPUs, less memory or fewer CPUs than configured.

    Sources: scontrol show node / sinfo (state flags, reason), sinfo -R.
    """
    findings: list[Finding] = []
    for node in facts.nodes:
        reason = facts.reason_of(node.name) or ""
        invalid = "INVALID_REG" in node.flags or "INVAL" in (node.state or "") or "INVALID" in node.flags
        if not (invalid or any(r in reason.lower() for r in cfg.reasons)):
            continue
        state = "+".join([node.state or "?", *node.flags])
        jobs = affected_jobs(facts, [node.name])
        findings.append(Finding(
            check="node_config_mismatch", root_cause="node_config_mismatch",
            message=f"{node.name} does not match its configuration: State={state} Reason={reason or 'none'}",
            culprits=[f"node:{node.name}", *job_culprits(jobs)],
            evidence=[Evidence(text=f"node {node.name} State={state} Reason={reason or 'none'} "
                                    f"Gres={node.gres or '?'} RealMemory={node.real_memory_mib or '?'}",
                               metric="scontrol show node")],
            strength="state", confidence=confidence("state", corroborated=invalid and bool(reason)),
            # Missing GPUs are for a GPU diagnostic to confirm; less memory, fewer CPUs or sockets than
            # slurm.conf says (a crashkernel reservation, a BIOS change) is a configuration fix, no action type.
            suggested_actions=([ActionSpec(type="run_gpu_diagnostic", node=node.name)] if _gpu_mismatch(reason) else [])
            # whoever runs the node fixes its configuration (slurm.conf, gres.conf) or its hardware
            + [ActionSpec(type="notify_owner", node=node.name, reason=f"{node.name} registers differently from its "
                          f"configuration: {reason or state}")],
        ))
    return findings
